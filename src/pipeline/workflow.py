"""The compile pipeline: four named steps run in order, each reporting a stage event.

::

    input --frontend--> program --translation--> source --compilation--> artifact
          --loading--> executable

The framework knows none of these types: a ``CompilePipeline`` of four plain functions on
ints runs. The stencil DSL's pipeline reads a ``ConcreteDefinition`` and makes a
``CompilableProgram``; another toolchain brings its own. Two outputs are checked as they leave
their step, because a wrong one would fail far away: a translation that declares what it
``emits`` must return a ``ProgramSource`` of that format, and loading must return a callable.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Generic, TypeVar

import attrs

from pipeline.errors import StepMismatchError, StepOutputError
from pipeline.events import run_step
from pipeline.stages import ProgramSource, SourceFormat
from pipeline.steps import Step, evolve_step, identity, replace_step, step_name, unwrap_step

__all__ = ["CompilePipeline"]

In = TypeVar("In")
Prog = TypeVar("Prog")
Src = TypeVar("Src")
Art = TypeVar("Art")
Exe = TypeVar("Exe")

_STAGES = ("frontend", "translation", "compilation", "loading")


def _wrong_output(stage: str, step: object, got: object, expected: str) -> StepOutputError:
    return StepOutputError(
        f"the {stage} step {step_name(step)} returned {type(got).__module__}."
        f"{type(got).__qualname__} {_short_repr(got)}, but a {stage} step must return "
        f"{expected}; fix the step's return value"
    )


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _declared_format(step: object, attribute: str) -> SourceFormat | None:
    value = getattr(unwrap_step(step), attribute, None)
    return value if isinstance(value, SourceFormat) else None


@attrs.frozen
class CompilePipeline(Generic[In, Prog, Src, Art, Exe]):
    """Four steps from a toolchain's input to an executable, run in order.

    Construction checks cross-step agreement: when the translation declares ``emits`` and the
    compilation declares ``accepts``, the two ``SourceFormat`` values must be equal. A step
    that declares nothing is taken on trust. Each stage may be any step: a plain function, a
    ``Chain``, a ``StepSequence`` of named sub-steps, a ``CachedStep``.

    Raises:
        StepMismatchError: (a ``ValueError``) at construction, naming both steps and values.
        StepOutputError: (a ``TypeError``) when a run's translation returns something other
            than the ``ProgramSource`` of the format it declares, or its loading returns a
            non-callable.
    """

    frontend: Step[In, Prog]
    translation: Step[Prog, Src]
    compilation: Step[Src, Art]
    loading: Step[Art, Exe]

    def __attrs_post_init__(self) -> None:
        emits = _declared_format(self.translation, "emits")
        accepts = _declared_format(self.compilation, "accepts")
        if emits is not None and accepts is not None and emits != accepts:
            raise StepMismatchError(
                f"translation {step_name(self.translation)} emits {emits}, but compilation "
                f"{step_name(self.compilation)} accepts {accepts}; pair the translation with a "
                "compilation for the same language and device type"
            )

    @property
    def source_format(self) -> SourceFormat | None:
        """What the translation declares it emits, if it declares it."""
        return _declared_format(self.translation, "emits")

    @property
    def compiles(self) -> bool:
        """Whether the pipeline compiles: an embedded pipeline's compilation is ``identity``."""
        return unwrap_step(self.compilation) is not identity

    def program(self, inp: In) -> Prog:
        """The frontend stage."""
        return run_step("frontend", self.frontend, inp)

    def translate(self, program: Prog) -> Src:
        """The translation stage."""
        source = run_step("translation", self.translation, program)
        emits = self.source_format
        if emits is not None and not (isinstance(source, ProgramSource) and source.format == emits):
            expected = f"a ProgramSource of {emits} (what it declares it emits)"
            raise _wrong_output("translation", self.translation, source, expected)
        return source

    def compile(self, source: Src) -> Art:
        """The compilation stage."""
        return run_step("compilation", self.compilation, source)

    def load(self, artifact: Art) -> Exe:
        """The loading stage."""
        executable = run_step("loading", self.loading, artifact)
        if not callable(executable):
            raise _wrong_output("loading", self.loading, executable, "a callable executable")
        return executable

    def __call__(self, inp: In) -> Exe:
        """Run all four stages in order and return the executable."""
        program = self.program(inp)
        source = self.translate(program)
        artifact = self.compile(source)
        return self.load(artifact)

    def evolve_step(self, path: str, **changes: Any) -> CompilePipeline[In, Prog, Src, Art, Exe]:
        """A variant with the step at ``path`` evolved, every wrapper kept.

        ``path`` is a stage, or a dotted path into one (``"translation.tuning"``). At its end
        the innermost step (inside wrappers) is evolved: ``evolve_step("compilation",
        flags=("-O2",))`` changes the ``CCompilation`` inside the ``CachedStep`` and keeps the
        cache (its key changes with the options, so the variant never reuses the original's
        results).

        Raises:
            ValueError: the path does not start with one of the four stages.
            LookupError: a later name on the path is not a sub-step.
            TypeError: the innermost step is not an attrs class, or has no such options;
                the message lists the options it has.
        """
        self._check_stage(path)
        return evolve_step(self, path, **changes)

    def replace_step(self, path: str, step: object) -> CompilePipeline[In, Prog, Src, Art, Exe]:
        """A variant with the step at ``path`` (a stage or a dotted path into one) replaced
        by ``step``, the wrappers around it kept: ``replace_step("translation.tuning",
        identity)`` skips a sub-step.

        Raises:
            ValueError: the path does not start with one of the four stages.
            LookupError: a later name on the path is not a sub-step.
        """
        self._check_stage(path)
        return replace_step(self, path, step)

    def _check_stage(self, path: str) -> None:
        stage = path.split(".", 1)[0]
        if stage not in _STAGES:
            raise ValueError(
                f"{stage!r} is not a stage; the stages are {', '.join(map(repr, _STAGES))}"
            )

    def stages(self) -> Iterator[tuple[str, object]]:
        """The (stage name, step) pairs in order, for display and inspection."""
        yield "frontend", self.frontend
        yield "translation", self.translation
        yield "compilation", self.compilation
        yield "loading", self.loading
