"""Steps, the four-stage compile pipeline, and the stage events it emits.

A *step* is any callable from one stage artifact to the next. Steps with configuration are
frozen attrs classes, so ``attrs.evolve(step, option=...)`` makes a variant. A
``CompilePipeline`` names its four steps and runs them in order with an explicit body::

    ConcreteDefinition --frontend(definition)--> CompilableProgram (+ compile-time args)
        --translation--> source --compilation--> artifact --loading--> executable

Each stage's output is checked cheaply as it leaves its step, so a step that returns the
wrong thing is named at once rather than failing later somewhere else.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import attrs

from pipeline.errors import StepMismatchError, StepOutputError
from pipeline.stages import (
    CompilableProgram,
    ConcreteDefinition,
    ProgramDefinition,
    ProgramSource,
    SourceFormat,
)

__all__ = [
    "DUMP_STAGES_VARIABLE",
    "CompilePipeline",
    "ReportsCacheHits",
    "StageDump",
    "StageEvent",
    "StageSubscription",
    "Step",
    "dump_directory",
    "identity",
    "step_name",
    "subscribe",
    "unwrap_step",
]

S_contra = TypeVar("S_contra", contravariant=True)
T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")
Src = TypeVar("Src")
Art = TypeVar("Art")
Exe = TypeVar("Exe")


class Step(Protocol[S_contra, T_co]):
    """One stage of a pipeline: a callable from one artifact to the next.

    Plain functions are steps. A step may declare what it produces or accepts through the
    optional attributes ``emits`` (translations) and ``accepts`` (compilations), each a
    ``SourceFormat``; ``CompilePipeline`` checks that they agree when it is constructed.
    """

    def __call__(self, inp: S_contra, /) -> T_co: ...


@runtime_checkable
class ReportsCacheHits(Protocol[S_contra, T_co]):
    """A step that can say whether its cache answered (``CachedStep`` does)."""

    def call_with_hit(self, inp: S_contra, /) -> tuple[T_co, bool]:
        """The step's result for ``inp``, and whether it came from a cache."""
        ...


def identity(inp: T, /) -> T:
    """The step that returns its input: the whole pipeline of an embedded backend."""
    return inp


def unwrap_step(step: object) -> object:
    """Return the innermost step of wrappers that expose the wrapped step as ``.step``."""
    seen = 0
    while hasattr(step, "step") and seen < 32:
        step = step.step
        seen += 1
    return step


def _evolve_innermost(step: Any, changes: dict[str, Any]) -> Any:
    """``step`` with its innermost step evolved by ``changes``; wrappers (attrs classes with a
    ``step`` field, such as ``CachedStep``) are evolved around the new inner step."""
    if attrs.has(type(step)) and "step" in attrs.fields_dict(type(step)):
        return attrs.evolve(step, step=_evolve_innermost(step.step, changes))
    if not attrs.has(type(step)):
        raise TypeError(
            f"step {step_name(step)} is not an attrs class, so it has no options to change; "
            "replace the whole step with attrs.evolve(pipeline, <stage>=new_step)"
        )
    options = [f.name for f in attrs.fields(type(step)) if f.init]
    unknown = sorted(set(changes) - set(options))
    if unknown:
        raise TypeError(
            f"step {step_name(step)} has no option(s) {', '.join(unknown)}; its options are "
            f"{', '.join(options) or '(none)'}"
        )
    return attrs.evolve(step, **changes)


def step_name(step: object) -> str:
    """A short human-readable name for a step, used in events and error messages."""
    inner = unwrap_step(step)
    prefix = "cached " if inner is not step else ""
    if isinstance(inner, type) or (callable(inner) and hasattr(inner, "__qualname__")):
        return prefix + str(getattr(inner, "__qualname__", repr(inner)))
    return prefix + type(inner).__qualname__


@attrs.frozen
class StageEvent:
    """Emitted after each step of a pipeline run.

    Attributes:
        stage: the pipeline field that ran (``"frontend"``, ``"translation"``, ...).
        step: the name of the step object (see ``step_name``).
        artifact: what the step returned.
        seconds: wall-clock duration of the step.
        cache_hit: whether a cached step answered from its cache.
    """

    stage: str
    step: str
    artifact: object = attrs.field(repr=False)
    seconds: float
    cache_hit: bool = False


_subscribers_lock = threading.Lock()
# Registry of stage-event callbacks: the one piece of mutable global state of this module.
_subscribers: dict[int, Callable[[StageEvent], None]] = {}
_next_token = 0


@attrs.frozen
class StageSubscription:
    """A registered stage-event callback; ``unsubscribe()`` or ``with`` removes it."""

    token: int

    def unsubscribe(self) -> None:
        """Stop delivering events to the callback (idempotent)."""
        with _subscribers_lock:
            _subscribers.pop(self.token, None)

    def __enter__(self) -> StageSubscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.unsubscribe()


def subscribe(callback: Callable[[StageEvent], None]) -> StageSubscription:
    """Deliver every stage event of every pipeline run in this process to ``callback``.

    Callbacks run synchronously on the thread that ran the step; an exception in a callback
    propagates to the caller of the pipeline.

    Returns:
        a handle whose ``unsubscribe()`` removes the callback; it is also a context manager.
    """
    global _next_token  # noqa: PLW0603  (the documented registry)
    with _subscribers_lock:
        _next_token += 1
        _subscribers[_next_token] = callback
        return StageSubscription(_next_token)


DUMP_STAGES_VARIABLE = "STENCILFORGE_DUMP_STAGES"


def dump_directory() -> Path | None:
    """Where to write every stage artifact of every compile (``STENCILFORGE_DUMP_STAGES``)."""
    configured = os.environ.get(DUMP_STAGES_VARIABLE)
    return Path(configured) if configured else None


@attrs.define
class StageDump:
    """A stage-event callback that writes every artifact to ``directory``, one file each.

    Files are numbered in order: ``0001-frontend-<step>.txt``; text artifacts (generated
    source, IR) are written as text, others as their ``repr``.
    """

    directory: Path
    count: int = 0

    def __call__(self, event: StageEvent) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.count += 1
        artifact = event.artifact
        text = getattr(artifact, "text", None)
        ir = getattr(artifact, "ir", None)
        body = text if isinstance(text, str) else str(ir) if ir is not None else repr(artifact)
        safe_step = "".join(c if c.isalnum() or c in "._" else "_" for c in event.step)
        name = f"{os.getpid()}-{self.count:04d}-{event.stage}-{safe_step}.txt"
        (self.directory / name).write_text(body)


def _emit(stage: str, step: object, artifact: object, seconds: float, cache_hit: bool) -> None:
    with _subscribers_lock:
        callbacks = list(_subscribers.values())
    if not callbacks:
        return
    event = StageEvent(stage, step_name(step), artifact, seconds, cache_hit)
    for callback in callbacks:
        callback(event)


def _run(stage: str, step: Callable[[Any], T], inp: object) -> T:
    start = time.perf_counter()
    if isinstance(step, ReportsCacheHits):
        out, hit = step.call_with_hit(inp)
    else:
        out, hit = step(inp), False
    _emit(stage, step, out, time.perf_counter() - start, hit)
    return out


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
class CompilePipeline(Generic[Src, Art, Exe]):
    """The four stages from a concrete definition to an executable.

    The frontend reads the definition alone (so, cached, it runs once per definition however
    many signatures are compiled); the compile-time arguments rejoin its ``CompilableProgram``
    before translation. Construction checks cross-step agreement: when the translation
    declares ``emits`` and the compilation declares ``accepts``, the two ``SourceFormat``
    values must be equal. A step that declares nothing is taken on trust.

    Raises:
        StepMismatchError: (a ``ValueError``) at construction, naming both steps and values.
        StepOutputError: (a ``TypeError``) when a run's frontend returns no
            ``CompilableProgram``, its translation returns something other than the
            ``ProgramSource`` of the format it declares, or its loading returns a non-callable.
    """

    frontend: Step[ProgramDefinition, CompilableProgram]
    translation: Step[CompilableProgram, Src]
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

    def program(self, inp: ConcreteDefinition) -> CompilableProgram:
        """The frontend stage: the definition's IR, with the compile-time arguments beside it."""
        program = _run("frontend", self.frontend, inp.definition)
        if not isinstance(program, CompilableProgram):
            raise _wrong_output("frontend", self.frontend, program, "a CompilableProgram")
        return attrs.evolve(program, compile_time_args=inp.compile_time_args)

    def translate(self, program: CompilableProgram) -> Src:
        """The translation stage."""
        source = _run("translation", self.translation, program)
        emits = self.source_format
        if emits is not None and not (isinstance(source, ProgramSource) and source.format == emits):
            expected = f"a ProgramSource of {emits} (what it declares it emits)"
            raise _wrong_output("translation", self.translation, source, expected)
        return source

    def compile(self, source: Src) -> Art:
        """The compilation stage."""
        return _run("compilation", self.compilation, source)

    def load(self, artifact: Art) -> Exe:
        """The loading stage."""
        executable = _run("loading", self.loading, artifact)
        if not callable(executable):
            raise _wrong_output("loading", self.loading, executable, "a callable executable")
        return executable

    def __call__(self, inp: ConcreteDefinition) -> Exe:
        """Run all four stages in order and return the executable."""
        program = self.program(inp)
        source = self.translate(program)
        artifact = self.compile(source)
        return self.load(artifact)

    def evolve_step(self, stage: str, **changes: Any) -> CompilePipeline[Src, Art, Exe]:
        """A variant with the innermost step of ``stage`` evolved, every wrapper kept.

        ``pipeline.evolve_step("compilation", flags=("-O2",))`` changes the ``CCompilation``
        inside the ``CachedStep`` and keeps the cache (a disk cache stays a disk cache; the
        key changes with the options, so the variant never reuses the original's results).

        Raises:
            ValueError: ``stage`` is not one of the four stages.
            TypeError: the innermost step is not an attrs class, or has no such options;
                the message lists the options it has.
        """
        steps = dict(self.stages())
        if stage not in steps:
            raise ValueError(
                f"{stage!r} is not a stage; the stages are {', '.join(map(repr, steps))}"
            )
        evolved: dict[str, Any] = {stage: _evolve_innermost(steps[stage], changes)}
        return attrs.evolve(self, **evolved)

    def stages(self) -> Iterator[tuple[str, object]]:
        """The (stage name, step) pairs in order, for display and inspection."""
        yield "frontend", self.frontend
        yield "translation", self.translation
        yield "compilation", self.compilation
        yield "loading", self.loading
