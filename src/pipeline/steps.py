"""Steps and how they compose.

A *step* is any callable from one artifact to the next; plain functions are steps. Steps
with options are frozen attrs classes, so ``attrs.evolve(step, option=...)`` is a variant.
Steps compose four ways, each itself a step::

    Chain(a, b)                         a then b                 (typed: Step[S, M], Step[M, T])
    StepSequence subclass               named sub-steps in order (each replaceable by name)
    Split(first, second, combine)       two tracks on one input, then combine((x, y))
    CachedStep(step, cache)             (``pipeline.caching``) remembers results

A *wrapper* is an attrs class holding its inner step in a field called ``step`` (``CachedStep``
is one); ``evolve_step`` and ``replace_step`` see through wrappers and keep them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import attrs

__all__ = [
    "Chain",
    "ReportsCacheHits",
    "Split",
    "Step",
    "StepSequence",
    "evolve_step",
    "identity",
    "replace_step",
    "step_name",
    "unwrap_step",
]

S = TypeVar("S")
M = TypeVar("M")
T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
S_contra = TypeVar("S_contra", contravariant=True)
T_co = TypeVar("T_co", covariant=True)


class Step(Protocol[S_contra, T_co]):
    """One stage of a pipeline, or part of one: a callable from one artifact to the next.

    Plain functions are steps. A translation may declare ``emits`` and a compilation
    ``accepts`` (each a ``SourceFormat``); ``CompilePipeline`` checks that they agree.
    """

    def __call__(self, inp: S_contra, /) -> T_co: ...


@runtime_checkable
class ReportsCacheHits(Protocol[S_contra, T_co]):
    """A step that can say whether its cache answered (``CachedStep`` does)."""

    def call_with_hit(self, inp: S_contra, /) -> tuple[T_co, bool]:
        """The step's result for ``inp``, and whether it came from a cache."""
        ...


def identity(inp: T, /) -> T:
    """The step that returns its input: a skipped sub-step, an embedded backend's stages."""
    return inp


def unwrap_step(step: object) -> object:
    """The innermost step of wrappers that hold their inner step as ``.step``."""
    seen = 0
    while hasattr(step, "step") and seen < 32:
        step = step.step
        seen += 1
    return step


def step_name(step: object) -> str:
    """A short human-readable name for a step, used in events and error messages."""
    inner = unwrap_step(step)
    prefix = "cached " if inner is not step else ""
    if isinstance(inner, type) or (callable(inner) and hasattr(inner, "__qualname__")):
        return prefix + str(getattr(inner, "__qualname__", repr(inner)))
    return prefix + type(inner).__qualname__


@attrs.frozen
class Chain(Generic[S, M, T]):
    """``first`` then ``second``: a step from ``first``'s input to ``second``'s output."""

    first: Step[S, M]
    second: Step[M, T]

    def __call__(self, inp: S, /) -> T:
        return self.second(self.first(inp))


@attrs.frozen
class Split(Generic[S, A, B, T]):
    """Two tracks over one input, joined: ``combine((first(inp), second(inp)))``.

    For workflows that are not a line: a source and its documentation made side by side, a
    fast and a checked build of one program compared.
    """

    first: Step[S, A]
    second: Step[S, B]
    combine: Step[tuple[A, B], T]

    def __call__(self, inp: S, /) -> T:
        return self.combine((self.first(inp), self.second(inp)))


@attrs.frozen
class StepSequence:
    """Named sub-steps run in order: subclass it with one attrs field per sub-step.

    ::

        @attrs.frozen
        class Passes(StepSequence):
            parsing: Step[Definition, IR] = parse
            folding: Step[IR, IR] = fold
            cse: Step[IR, IR] = eliminate_common_subexpressions

    Fields run in the order they are declared, each on the previous one's output. A variant
    is one line: ``attrs.evolve(passes, cse=identity)`` skips a sub-step, ``attrs.evolve(
    passes, order=("parsing", "cse", "folding"))`` reorders them (``order`` names each
    sub-step to run, in order; a name left out is skipped).

    Raises:
        ValueError: at construction, when ``order`` names something that is not a sub-step.
    """

    order: tuple[str, ...] | None = attrs.field(default=None, kw_only=True)

    @classmethod
    def sub_steps(cls) -> tuple[str, ...]:
        """The sub-steps' names in their declared order."""
        return tuple(f.name for f in attrs.fields(cls) if f.name != "order")

    def __attrs_post_init__(self) -> None:
        if self.order is None:
            return
        unknown = [name for name in self.order if name not in self.sub_steps()]
        if unknown:
            raise ValueError(
                f"{type(self).__qualname__} has no sub-step(s) {', '.join(unknown)}; its "
                f"sub-steps are {', '.join(self.sub_steps())}"
            )

    def __call__(self, inp: Any, /) -> Any:
        value = inp
        for name in self.order if self.order is not None else self.sub_steps():
            value = getattr(self, name)(value)
        return value


def _options(step: Any) -> list[str]:
    return [f.name for f in attrs.fields(type(step)) if f.init] if attrs.has(type(step)) else []


def _evolved(step: Any, changes: dict[str, Any]) -> Any:
    """``step`` with its innermost step evolved by ``changes``, every wrapper kept."""
    if attrs.has(type(step)) and "step" in attrs.fields_dict(type(step)):
        return attrs.evolve(step, step=_evolved(step.step, changes))
    if not attrs.has(type(step)):
        raise TypeError(
            f"step {step_name(step)} is not an attrs class, so it has no options to change; "
            "replace the whole step (replace_step)"
        )
    unknown = sorted(set(changes) - set(_options(step)))
    if unknown:
        raise TypeError(
            f"step {step_name(step)} has no option(s) {', '.join(unknown)}; its options are "
            f"{', '.join(_options(step)) or '(none)'}"
        )
    return attrs.evolve(step, **changes)


def _rebuilt(step: Any, path: tuple[str, ...], make: Callable[[Any], Any]) -> Any:
    """``step`` with the sub-step at ``path`` replaced by ``make(sub-step)``; the wrappers
    and composites on the way are rebuilt around the new sub-step."""
    if not path:
        return make(step)
    name, rest = path[0], path[1:]
    fields = attrs.fields_dict(type(step)) if attrs.has(type(step)) else {}
    if name in fields and fields[name].init and name != "order":
        return attrs.evolve(step, **{name: _rebuilt(getattr(step, name), rest, make)})
    if "step" in fields:
        return attrs.evolve(step, step=_rebuilt(step.step, path, make))
    raise LookupError(
        f"step {step_name(step)} has no sub-step {name!r}; what it has: "
        f"{', '.join(n for n in _options(step) if n != 'order') or '(nothing)'}"
    )


def evolve_step(step: T, path: str, /, **changes: Any) -> T:
    """A variant of ``step`` whose sub-step at the dotted ``path`` has its options changed.

    ``evolve_step(pipeline, "translation", flags=...)`` evolves the innermost step of the
    pipeline's translation; ``"frontend.passes.inlining"`` walks composites by field name.
    Wrappers on the way (``CachedStep``) are seen through and kept, so a cached step stays
    cached (its key changes with the options).

    Raises:
        LookupError: a name on the path is not a sub-step; the message lists those there are.
        TypeError: the step at the path is not an attrs class, or has no such options.
    """
    return _rebuilt(step, tuple(path.split(".")), lambda found: _evolved(found, changes))  # type: ignore[no-any-return]


def replace_step(step: T, path: str, new: object, /) -> T:
    """A variant of ``step`` with the sub-step at the dotted ``path`` replaced by ``new``.

    The wrappers of the replaced sub-step are kept: ``replace_step(pipeline,
    "translation.tuning", identity)`` skips c_cpu's tuning inside its cached translation.

    Raises:
        LookupError: a name on the path is not a sub-step.
    """

    def swap(found: Any) -> Any:
        if attrs.has(type(found)) and "step" in attrs.fields_dict(type(found)):
            return attrs.evolve(found, step=swap(found.step))
        return new

    return _rebuilt(step, tuple(path.split(".")), swap)  # type: ignore[no-any-return]
