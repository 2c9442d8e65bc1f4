"""The fields a scan's sweep copies per block into column buffers (``backends.c.sweeps``).

A step of a sweep computes a vector of points a column apart, so a field read in place
would be gathered a column at a time. A field contiguous along the axis and read unshifted
along the vector dimension is instead copied once per block, column by column, into a
``[axis][vector]`` buffer, and the steps load it a vector at a time. Each shift a field is
read at along the other (parallel) dimensions has a buffer of its own: the vertical
advection reads ``wcon`` at ``I`` and at ``I + 1``, so it copies two columns of ``wcon`` a
point, ``g_wcon`` and ``gs0_wcon``.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from backends.clike.expressions import C_TYPES
from backends.loops import plan_sweeps
from pipeline.dsl.ir.nodes import Expr, ProgramIR, Ref, Stencil, combine_offsets
from pipeline.dsl.passes.traversal import walk
from pipeline.dsl.types import FieldType

__all__ = [
    "Columns",
    "Offsets",
    "choose_columns",
    "column_offset",
    "copy_in",
    "field_reads",
    "shift_of",
]

Offsets = tuple[tuple[str, int], ...]


@attrs.frozen
class Columns:
    """One buffer of a field's columns, copied per block.

    Attributes:
        field: the field copied.
        shift: its nonzero offsets along the parallel dimensions (empty: the block's own
            columns).
        reach: (lower, upper) along the axis: the levels ``lo + lower`` to ``hi + upper``.
        buffer: the buffer's C name, ``g_<field>`` unshifted, else ``gs<n>_<field>``.
    """

    field: str
    shift: Offsets
    reach: tuple[int, int]
    buffer: str

    @property
    def source(self) -> str:
        """The C name of the pointer to the column being copied."""
        return f"src_{self.buffer.removeprefix('g_')}"


def field_reads(program: ProgramIR, stencil: Stencil) -> set[tuple[str, Offsets]]:
    """Every read of a field by a step of the stencil's passes, as (field, offsets): locals
    are computed inline at each step, so a local read at a shift reads its fields there."""
    plan = plan_sweeps(stencil)
    assert plan is not None
    definitions = {a.targets[0]: a.value for a in stencil.body}
    reads: set[tuple[str, Offsets]] = set()
    seen: set[tuple[str, Offsets]] = set()
    pending: list[tuple[Expr, Offsets]] = [(result, ()) for result in stencil.results]
    pending += [(arg, ()) for _, keys in plan.phases for key in keys for arg in key[1]]
    while pending:
        expr, shift = pending.pop()
        for node in walk(expr):
            if not isinstance(node, Ref):
                continue
            offsets = combine_offsets(node.offsets, shift)
            if node.name in definitions:
                if (node.name, offsets) not in seen:
                    seen.add((node.name, offsets))
                    pending.append((definitions[node.name], offsets))
            elif isinstance(program.param(node.name).type, FieldType):
                reads.add((node.name, offsets))
    return reads


def shift_of(offsets: Offsets, axis: str) -> Offsets:
    """A read's nonzero offsets off the axis, in a fixed order: its buffer's shift."""
    return tuple(sorted((dim, offset) for dim, offset in offsets if dim != axis and offset))


def choose_columns(
    program: ProgramIR,
    stencil: Stencil,
    axis: str,
    vector: str,
    unit_stride: Mapping[str, bool],
) -> dict[tuple[str, Offsets], Columns]:
    """The column buffers of the stencil's sweep, by (field, shift): fields contiguous along
    the axis, over the vector dimension, not written, never read under a condition and not
    shifted along the vector dimension; one buffer per shift they are read at."""
    guarded = {read.name for read in stencil.guarded}
    written = {target.name for target in stencil.outputs}
    reads = field_reads(program, stencil)
    chosen: dict[tuple[str, Offsets], Columns] = {}
    for extent in stencil.extents:
        param = program.param(extent.name)
        assert isinstance(param.type, FieldType)
        dims = param.type.dim_names
        if (
            extent.name in guarded
            or extent.name in written
            or dims[-1] != axis
            or vector not in dims
            or not unit_stride.get(extent.name)
            or any((d.lower or d.upper) for d in extent.dims if d.dim == vector)
        ):
            continue
        reach = next(d for d in extent.dims if d.dim == axis)
        shifts = sorted({shift_of(offsets, axis) for name, offsets in reads if name == extent.name})
        for shift in shifts:
            buffer = f"gs{len(chosen)}_{extent.name}" if shift else f"g_{extent.name}"
            chosen[extent.name, shift] = Columns(
                extent.name, shift, (reach.lower, reach.upper), buffer
            )
    return chosen


def column_offset(
    program: ProgramIR, name: str, axis: str, vector: str, start: str, shift: Offsets = ()
) -> str:
    """The C offset of column ``b_<vector> + v`` of field ``name`` at ``start`` along the
    axis, the parallel dimensions at the block's point moved by ``shift``."""
    param = program.param(name)
    assert isinstance(param.type, FieldType)
    moved = dict(shift)
    terms = []
    for position, dim in enumerate(param.type.dim_names):
        if dim == axis:
            terms.append(start)
        elif dim == vector:
            terms.append(f"(b_{vector} + v) * s_{name}_{position}")
        elif moved.get(dim):
            terms.append(f"(x_{dim} + ({moved[dim]})) * s_{name}_{position}")
        else:
            terms.append(f"x_{dim} * s_{name}_{position}")
    return " + ".join(terms)


def copy_in(
    program: ProgramIR,
    columns: Mapping[tuple[str, Offsets], Columns],
    axis: str,
    vector: str,
    row: int,
    indent: str,
) -> list[str]:
    """One loop over the block's columns copying every buffer's column, those of one reach
    in one loop along the axis: the inputs' columns are read side by side, as streams the
    hardware prefetcher follows, in one pass over the block (``row``: the points from one
    row of a buffer to the next)."""
    if not columns:
        return []
    by_reach: dict[tuple[int, int], list[Columns]] = {}
    for buffered in columns.values():
        by_reach.setdefault(buffered.reach, []).append(buffered)
    lines = [f"{indent}for (int64_t v = 0; v < e_{vector} - b_{vector}; ++v) {{"]
    for (lower, upper), group in by_reach.items():
        for buffered in group:
            ctype = C_TYPES[program.param(buffered.field).type.dtype]
            offset = column_offset(
                program, buffered.field, axis, vector, f"(lo_{axis} + ({lower}))", buffered.shift
            )
            lines.append(
                f"{indent}    const {ctype}* restrict {buffered.source} = "
                f"p_{buffered.field} + {offset};"
            )
        lines.append(
            f"{indent}    for (int64_t k = 0; k < (int64_t)sf_levels + {upper - lower}; ++k) {{"
        )
        lines += [
            f"{indent}        {buffered.buffer}[k * {row} + v] = {buffered.source}[k];"
            for buffered in group
        ]
        lines.append(f"{indent}    }}")
    lines.append(f"{indent}}}")
    return lines
