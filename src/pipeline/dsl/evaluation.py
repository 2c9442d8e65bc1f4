"""An embedded evaluation of a definition: whether one runs, the output domain of the call
being evaluated, and how a call's outputs are cut to its domain.

Context variables, so that threads and tasks evaluating definitions at once keep their own.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

from pipeline.dsl.types import record_of

__all__ = [
    "current_output_domain",
    "embedded_evaluation",
    "evaluate_per_domain",
    "evaluating_embedded",
    "flattened",
    "in_domain",
    "output_domain",
    "per_output",
]


# True while a definition runs embedded: a field operator called there is evaluated, also when
# none of its arguments is a field (inner(a) of a scalar a), instead of asking for out=.
_EMBEDDED_EVALUATION = contextvars.ContextVar("stencilforge_embedded_evaluation", default=False)


def embedded_evaluation() -> bool:
    """Whether the running code is an embedded evaluation of a definition."""
    return _EMBEDDED_EVALUATION.get()


@contextlib.contextmanager
def evaluating_embedded() -> Iterator[None]:
    """Mark the running code as an embedded evaluation of a definition (see above)."""
    token = _EMBEDDED_EVALUATION.set(True)
    try:
        yield
    finally:
        _EMBEDDED_EVALUATION.reset(token)


# The output domain (absolute start, stop per dimension name) of the call being evaluated
# embedded: a scan sweeps it along its axis, whatever else its arguments cover.
_OUTPUT_DOMAIN: contextvars.ContextVar[dict[str, tuple[int, int]] | None] = contextvars.ContextVar(
    "stencilforge_output_domain", default=None
)


@contextlib.contextmanager
def output_domain(outputs: tuple[Any, ...]) -> Iterator[None]:
    """Mark ``outputs`` (embedded fields) as the domain of the call being evaluated."""
    domain: dict[str, tuple[int, int]] = {}
    for output in outputs:
        bounds = getattr(output, "bounds", None)
        if bounds is not None:
            domain.update(bounds())
    token = _OUTPUT_DOMAIN.set(domain or _OUTPUT_DOMAIN.get())
    try:
        yield
    finally:
        _OUTPUT_DOMAIN.reset(token)


def current_output_domain() -> dict[str, tuple[int, int]] | None:
    """The output domain of the call being evaluated embedded (None outside one)."""
    return _OUTPUT_DOMAIN.get()


def flattened(value: Any) -> tuple[Any, ...]:
    """The leaves of nested tuples and named collections (dataclass instances by their
    fields), in order (``None``: none; anything else: itself)."""
    if value is None:
        return ()
    if isinstance(value, tuple):
        return tuple(leaf for item in value for leaf in flattened(item))
    record = record_of(type(value))
    if record is not None:
        return tuple(leaf for item in record.values(value) for leaf in flattened(item))
    return (value,)


def in_domain(out: Any, domain: Any) -> Any:
    """Embedded outputs cut to a program's ``domain={I: (lo, hi), ...}`` (absolute indices,
    checked against the arrays before the program ran); ``out`` itself without one."""
    if not isinstance(domain, dict):
        return out
    bounds = {dim.name: (int(lo), int(hi)) for dim, (lo, hi) in domain.items()}
    if isinstance(out, tuple) or record_of(type(out)) is not None:
        return tuple(o.__dsl_domain__(bounds) for o in flattened(out))
    return out.__dsl_domain__(bounds)


def per_output(domain: Any) -> bool:
    """Whether ``domain`` is a program's one ``domain=`` per output: a tuple of dicts (nested
    like ``out=``), not a direct call's tuple of slices."""
    leaves = flattened(domain) if isinstance(domain, tuple) else ()
    return bool(leaves) and all(isinstance(leaf, dict) for leaf in leaves)


def evaluate_per_domain(
    name: str,
    function: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    out: Any,
    domain: tuple[Any, ...],
) -> None:
    """A call of the field operator ``name`` with one ``domain=`` per output, evaluated
    embedded: ``function`` once per distinct domain, as the compiled program runs one
    stencil per domain, writing the outputs of that domain.

    Raises:
        TypeError: not one domain per output, or not one result per output.
    """
    outputs, domains = flattened(out), flattened(domain)
    if len(outputs) != len(domains):
        raise TypeError(
            f"the call of {name!r} gives {len(domains)} domain(s) for "
            f"{len(outputs)} output(s); give one domain per output, nested like out="
        )
    groups: dict[tuple[Any, ...], list[tuple[int, Any]]] = {}
    for position, (output, bounds) in enumerate(zip(outputs, domains, strict=True)):
        key = tuple(sorted((dim.name, int(lo), int(hi)) for dim, (lo, hi) in bounds.items()))
        groups.setdefault(key, []).append((position, in_domain(output, bounds)))
    for members in groups.values():
        with evaluating_embedded(), output_domain(tuple(cut for _, cut in members)):
            results = flattened(function(*args, **kwargs))
        if len(results) != len(outputs):
            raise TypeError(
                f"{name!r} returns {len(results)} field(s) but out= gives {len(outputs)}"
            )
        for position, cut in members:
            cut.__dsl_assign__(results[position])
