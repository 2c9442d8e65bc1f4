"""What ``c_cpu`` specializes an executable for, beyond unit strides: the inner extent.

A stencil's inner loop runs over its domain's last dimension, the contiguous one. With that
extent a compile-time constant, gcc drops the vector loop's prologue, epilogue and trip-count
tests, folds the temporaries' row widths, and unrolls columns of up to 16 vectors
completely: hdiff's calls on 16x16x8 take about half the time, on 256x256x64 up to a tenth
less (ADR 0009, the amendment on the inner extent). The price is one build per inner extent,
which a dycore (one number of levels) pays once.

The data's walk::

    call arguments --compile_time_args--> ("inner_extent", last-axis length per parameter)
        --translation: inner_extents()--> {field: length}
        --stencil_inner_extent(stencil)--> the domain's inner extent, or None (runtime)
        --codegen--> ``hi_K = lo_K + <extent>``;  --bindings--> the check refuses any other

The compile-time argument is the fields' last-axis length, not the domain's extent (which
needs the program): the key is finer than the code needs, never coarser, and the program's
own check refuses a domain of another inner extent, so the self-checking fast entry of one
extent falls back to the dispatcher for a call of another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from backends.base import unit_strides
from pipeline.dsl.ir.nodes import ProgramIR, Stencil
from pipeline.dsl.regions import Bound
from pipeline.dsl.types import FieldType
from pipeline.stages import CompileTimeArgs

__all__ = ["INNER_EXTENT", "compile_time_args", "inner_extents", "stencil_inner_extent"]

#: The name of the compile-time argument: per parameter, its last axis's length (None for
#: scalars and 0-D fields).
INNER_EXTENT = "inner_extent"


def compile_time_args(args: tuple[Any, ...]) -> CompileTimeArgs:
    """``unit_strides(args)`` and, per argument, the length of its last axis.

    ``c_cpu``'s ``compile_time_args``: its translation specializes the inner loop of each
    stencil for its domain's extent along the last dimension.
    """
    return CompileTimeArgs((*unit_strides(args).items, (INNER_EXTENT, _last_lengths(args))))


def _last_lengths(args: tuple[Any, ...]) -> tuple[int | None, ...]:
    lengths: list[int | None] = []
    for value in args:
        shape = getattr(value, "shape", None)
        lengths.append(int(shape[-1]) if shape else None)
    return tuple(lengths)


def inner_extents(program: ProgramIR, compile_time_args: CompileTimeArgs) -> dict[str, int]:
    """The last axis's length of each field parameter the compile-time arguments fix (none
    without ``INNER_EXTENT``: every extent is then a runtime value)."""
    lengths = compile_time_args.get(INNER_EXTENT)
    if lengths is None:
        return {}
    return {
        param.name: length
        for param, length in zip(program.params, lengths, strict=True)
        if isinstance(param.type, FieldType) and length is not None
    }


def stencil_inner_extent(
    program: ProgramIR, stencil: Stencil, extents: Mapping[str, int]
) -> int | None:
    """The extent of ``stencil``'s domain along its innermost dimension when the compile-time
    arguments fix it, else None.

    The domain is the first output's slice, in that output's dimension order (the check
    makes the other outputs agree), so its inner extent is fixed when that output's length
    is known and the slice is relative to the field (``out[2:-2, ...]``), or when both ends
    are absolute integers (``domain=`` without scalars, and every domain of a static-domain
    variant, ADR 0025). An empty domain gives None: the stencil never runs.
    """
    if not stencil.outputs:
        return None
    target = stencil.outputs[0]
    field = program.param(target.name).type
    assert isinstance(field, FieldType)
    if not field.dim_names:
        return None
    start, stop = target.slices[-1]
    if _constant(start) and _constant(stop):  # domain= of integers, or a static domain
        return (stop.offset - start.offset) or None  # (the check refuses stop < start)
    if target.name not in extents:
        return None
    if not (start is None or isinstance(start, int)) or not (stop is None or isinstance(stop, int)):
        return None
    extent = len(range(*slice(start, stop).indices(extents[target.name])))
    return extent or None


def _constant(end: int | Bound | None) -> TypeGuard[Bound]:
    """Whether ``end`` is an absolute index known at compile time (no scalar parameter)."""
    return isinstance(end, Bound) and end.param is None
