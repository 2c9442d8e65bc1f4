"""Which fields a scan's blocks copy through buffers, and where a block's column of a field
is (``backends.c.sweeps``).

A field read only along the axis, contiguous along it and over the vector dimension, and
never under a condition, is *buffered*: copied per block into ``g_<name>[axis][vector]``, so
that the steps load it a vector at a time instead of gathering. An output over every
dimension of the domain, contiguous along the axis and not read by the stencil, is *staged*:
its values of a block go to ``o_<name>[axis][vector]``, then out a column at a time (stored in
place, consecutive points of the vector loop are a column apart, so every store of a step
would write a different cache line, which a plain store reads first).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from backends.c.sweep_ahead import Ahead
from backends.clike.expressions import C_TYPES
from pipeline.dsl.ir.nodes import ProgramIR, Stencil
from pipeline.dsl.types import FieldType

__all__ = ["buffered_fields", "column_offset", "fields_ahead", "staged_outputs"]


def buffered_fields(
    program: ProgramIR, stencil: Stencil, unit_stride: Mapping[str, bool], axis: str, vector: str
) -> dict[str, tuple[int, int]]:
    """The buffered fields of ``stencil``: name -> (lower, upper) reach along ``axis``."""
    guarded = {read.name for read in stencil.guarded}
    written = {target.name for target in stencil.outputs}
    chosen = {}
    for extent in stencil.extents:
        dims = _dims(program, extent.name)
        if (
            extent.name in guarded
            or extent.name in written
            or dims[-1] != axis
            or vector not in dims
            or not unit_stride.get(extent.name)
            or any((d.lower or d.upper) for d in extent.dims if d.dim != axis)
        ):
            continue
        reach = next(d for d in extent.dims if d.dim == axis)
        chosen[extent.name] = (reach.lower, reach.upper)
    return chosen


def staged_outputs(
    program: ProgramIR,
    stencil: Stencil,
    unit_stride: Mapping[str, bool],
    domain: tuple[str, ...],
    axis: str,
) -> frozenset[str]:
    """The staged outputs of ``stencil``, whose domain spans the dimensions ``domain``."""
    read = {extent.name for extent in stencil.extents}
    read |= {guarded.name for guarded in stencil.guarded}
    chosen = set()
    for target in stencil.outputs:
        dims = _dims(program, target.name)
        if (
            target.name not in read
            and dims[-1] == axis
            and sorted(dims) == sorted(domain)
            and unit_stride.get(target.name)
        ):
            chosen.add(target.name)
    return frozenset(chosen)


def column_offset(
    program: ProgramIR,
    name: str,
    axis: str,
    vector: str,
    start: str,
    column: str = "v",
    shifts: Mapping[str, int] | None = None,
) -> str:
    """The offset (C) of column ``b_<vector> + column`` of field ``name`` at ``start`` along
    the axis, the other dimensions at the block's point (``x_<dim>``) shifted by ``shifts``."""
    terms = []
    for position, dim in enumerate(_dims(program, name)):
        if dim == axis:
            terms.append(start)
        elif dim == vector:
            terms.append(f"(b_{vector} + {column}) * s_{name}_{position}")
        elif shifts and shifts.get(dim):
            terms.append(f"(x_{dim} + ({shifts[dim]})) * s_{name}_{position}")
        else:
            terms.append(f"x_{dim} * s_{name}_{position}")
    return " + ".join(terms)


def fields_ahead(
    program: ProgramIR,
    stencil: Stencil,
    buffered: Mapping[str, tuple[int, int]],
    unit_stride: Mapping[str, bool],
    axis: str,
    vector: str,
) -> list[Ahead]:
    """What the next block reads from memory: the buffered fields' columns, and those of the
    fields read in place along the axis, a column per row of their reach across the other
    dimensions (the vertical advection's ``wcon`` at ``I`` and ``I + 1``)."""
    written = {target.name for target in stencil.outputs}
    after = f"e_{vector} - b_{vector}"
    columns = []
    for extent in stencil.extents:
        name = extent.name
        dims = _dims(program, name)
        reach = {d.dim: (d.lower, d.upper) for d in extent.dims}
        lower, upper = reach.get(axis, (0, 0))
        bottom = f"(lo_{axis} + ({lower}))"
        stride = f"s_{name}_{dims.index(vector)}" if vector in dims else ""
        ctype = C_TYPES[program.param(name).type.dtype]
        if name in buffered:
            start = column_offset(program, name, axis, vector, bottom, after)
            columns.append(Ahead(name, ctype, start, stride, upper - lower))
            continue
        if (
            name in written
            or dims[-1] != axis
            or vector not in dims
            or not unit_stride.get(name)
            or reach.get(vector, (0, 0)) != (0, 0)
        ):
            continue
        outer = [d for d in dims if d not in (axis, vector)]
        spans = [range(reach.get(d, (0, 0))[0], reach.get(d, (0, 0))[1] + 1) for d in outer]
        for shift in itertools.product(*spans):
            shifts = dict(zip(outer, shift, strict=True))
            start = column_offset(program, name, axis, vector, bottom, after, shifts)
            columns.append(Ahead(name, ctype, start, stride, upper - lower))
    return columns


def _dims(program: ProgramIR, name: str) -> tuple[str, ...]:
    field = program.param(name).type
    assert isinstance(field, FieldType)
    return tuple(field.dim_names)
