"""What a direct call of an operator from Python adds to its definition: the output domain
of ``domain=``, and for a scan operator the dimensions of its arrays.

``op(a, out=x, domain=...)`` and ``scan(a, out=x, domain=...)`` run as a program of one
stencil (``frontend.direct_calls``); the program is made from the definition alone, so what
the call says of the outputs and arrays goes into the definition (``ProgramDefinition``'s
``output_slices``, ``output_bounds`` and ``call_dims``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from pipeline.dispatch import bind_arguments
from pipeline.dsl.evaluation import flattened
from pipeline.dsl.located import LocatedArray
from pipeline.dsl.stages import ScanSettings
from pipeline.dsl.types import Dimension
from pipeline.errors import ArgumentError

__all__ = ["direct_domain", "refuse_located_scan_arrays", "scan_call", "scan_call_dims"]

_DOMAIN_FORMS = (
    "a tuple of slices of the output (domain=(slice(1, -1), slice(None))), a dict of absolute "
    "bounds (domain={I: (0, 9), K: (1, 5)}), or one such dict per output, nested like out="
)


def direct_domain(name: str, domain: Any, outputs: tuple[Any, ...]) -> dict[str, Any]:
    """The ``ProgramDefinition`` fields of a direct call's ``domain=`` (none without one).

    Args:
        name: the operator, for errors.
        domain: a slice or tuple of slices (positional, of every output); a dict
            ``{I: (lo, hi), ...}`` of absolute bounds (of every output); or a tuple of such
            dicts, one per output, nested like ``out=``.
        outputs: the call's output arrays, flattened.

    Raises:
        TypeError: another form, a bound that is not a pair of integers ``0 <= lo <= hi``,
            or per-output domains that are not one per output.
    """
    if domain is None:
        return {}
    if isinstance(domain, dict):
        return {"output_bounds": (_bounds(name, domain),)}
    items = domain if isinstance(domain, tuple) else (domain,)
    if items and all(isinstance(item, slice) and item.step is None for item in items):
        return {"output_slices": tuple((s.start, s.stop) for s in items)}
    leaves = flattened(domain)
    if not leaves or not all(isinstance(leaf, dict) for leaf in leaves):
        raise TypeError(f"domain= of the call of {name!r} is {_DOMAIN_FORMS}; got {domain!r}")
    if len(leaves) != len(outputs):
        raise TypeError(
            f"the call of {name!r} gives {len(leaves)} domain(s) for {len(outputs)} "
            "output(s); give one domain per output, nested like out="
        )
    return {"output_bounds": tuple(_bounds(name, leaf) for leaf in leaves)}


def _bounds(name: str, domain: dict[Any, Any]) -> tuple[tuple[str, int, int], ...]:
    """``{I: (lo, hi), ...}`` as ``(("I", lo, hi), ...)``, checked."""
    bounds = []
    for dim, pair in domain.items():
        if not isinstance(dim, Dimension):
            raise TypeError(
                f"the keys of domain= of the call of {name!r} are dimensions, like "
                f"{{I: (0, n)}}; got {dim!r}"
            )
        if not (
            isinstance(pair, tuple)
            and len(pair) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
            and 0 <= pair[0] <= pair[1]
        ):
            raise TypeError(
                f"domain= of the call of {name!r} gives {dim.name} as {pair!r}; give "
                "(start, stop), absolute indices with 0 <= start <= stop"
            )
        bounds.append((dim.name, int(pair[0]), int(pair[1])))
    return tuple(sorted(bounds))


def refuse_located_scan_arrays(name: str, values: tuple[Any, ...]) -> None:
    """Refuse located arrays (``pipeline.dsl.located``) in a direct call of the scan operator
    ``name``: its arrays' dimensions are named by their ranks (``scan_call_dims``), so a
    located array's own dimensions could never be its parameter's.

    Raises:
        ArgumentError: naming the operator and saying what to pass instead.
    """
    if any(type(leaf) is LocatedArray for value in values for leaf in flattened(value)):
        raise ArgumentError(
            f"scan operator {name!r} called directly takes plain arrays (their dimensions "
            "come from their ranks, the scan's axis last), not located arrays; call it from "
            f"a @program whose parameters name the dimensions ({name}(..., out=...) in its "
            "body) and pass the located arrays to the program, or pass the plain arrays "
            "(located(...).array) with domain= in their element indices"
        )


def scan_call(
    name: str,
    function: Callable[..., Any],
    settings: ScanSettings,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    out: Any,
) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """What a direct call ``scan(*args, out=out, **kwargs)`` of the scan operator ``name``
    adds to its definition (``call_dims``), and the arguments of its program's executables
    (the point values in parameter order, then the outputs).

    Raises:
        TypeError: not one output per carry component, or arrays that do not fit.
        ArgumentError: a missing, repeated or unknown argument.
    """
    carries = len(settings.init) if isinstance(settings.init, tuple) else 1
    outputs = flattened(out)
    if len(outputs) != carries:
        raise TypeError(
            f"calling scan operator {name!r} directly needs out= with one array per "
            f"component of its carry ({carries}), got {len(outputs)}; optionally "
            "domain= for the output domain"
        )
    names = tuple(inspect.signature(function).parameters)[1:]
    values = bind_arguments(name, names, args, kwargs)
    dims = scan_call_dims(name, settings.axis, names, values, outputs)
    return {"call_dims": dims}, (*values, *outputs)


def scan_call_dims(
    name: str,
    axis: str,
    parameters: tuple[str, ...],
    values: tuple[Any, ...],
    outputs: tuple[Any, ...],
) -> tuple[tuple[str, ...] | None, ...]:
    """The dimensions of each of ``values`` (the arguments of ``parameters``; ``None``: a
    scalar) and then of each output of a scan operator ``name`` called directly over arrays.

    Plain arrays name no dimensions: the scan's ``axis`` is the last axis of every array,
    the others are ``D0``, ``D1``, ... of the outputs, aligned from the right as NumPy
    broadcasts (an array of fewer dimensions takes the outputs' last ones).

    Raises:
        TypeError: an array of more dimensions than the outputs, or outputs of no dimension.
    """
    ranks = [_rank(value) for value in values]
    out_ranks = [_rank(output) for output in outputs]
    rank = max((r for r in out_ranks if r is not None), default=0)
    if rank == 0:
        raise TypeError(
            f"scan operator {name!r} sweeps {axis}: its out= arrays need at least one "
            f"dimension ({axis}, their last one)"
        )
    names = [f"D{i}" if f"D{i}" != axis else f"D{i}_" for i in range(rank - 1)]
    names.append(axis)
    result: list[tuple[str, ...] | None] = []
    for what, value_rank in (
        *((f"argument {p!r}", r) for p, r in zip(parameters, ranks, strict=True)),
        *(("out=", r) for r in out_ranks),
    ):
        if value_rank is None:
            result.append(None)
        elif value_rank > rank:
            raise TypeError(
                f"{what} of scan operator {name!r} has {value_rank} dimension(s) but out= has "
                f"{rank}; a direct call's arrays have at most the outputs' dimensions"
            )
        else:
            result.append(tuple(names[rank - value_rank :]))
    return tuple(result)


def _rank(value: Any) -> int | None:
    """The number of dimensions of an array, ``None`` for a scalar (a number, a 0-D array)."""
    ndim = getattr(value, "ndim", None)
    return int(ndim) if isinstance(ndim, int) and ndim > 0 else None
