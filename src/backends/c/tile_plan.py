"""What the C generator plans for a tiled stencil before it writes any C: where each local
is buffered, in which order and at which shift a tile's sweep runs its statements, and which
rows it prefetches.

A tile is computed in one *sweep* over its outer points rather than one loop nest per
temporary: each statement (a temporary's store, or the outputs') is shifted so that
everything it reads was computed at an earlier point of the sweep, or earlier in the same
point's body (ADR 0009). With rows, each temporary's buffer keeps only the positions the
sweep still reads (``row_temporaries``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import attrs

from backends.clike.expressions import Offsets
from pipeline.dsl.ir.nodes import Expr, ProgramIR, Ref, Stencil, combine_offsets
from pipeline.dsl.passes.traversal import walk
from pipeline.dsl.types import FieldType

__all__ = [
    "Prefetch",
    "Statement",
    "Temporary",
    "TileLayout",
    "TilePlan",
    "field_reads",
    "plan_tile",
    "row_temporaries",
    "statement_shifts",
]

#: Per statement (a temporary's name, ``None``: the outputs'), its reads of temporaries.
Reads = Mapping[str | None, Sequence[tuple[str, Offsets]]]
#: Per statement (a temporary's name, ``None``: the outputs'), its shift per outer dimension.
Shifts = Mapping[str | None, Mapping[str, int]]


@attrs.frozen
class Temporary:
    """A local kept in a buffer.

    Attributes:
        name: the local.
        ctype: its C type.
        extent: its (lower, upper) reach per iteration dimension around the output domain.
        kept: the dimensions its buffer is indexed by, outermost first (all of them for a
            whole-tile buffer; for rows, those from ``ring`` on).
        ring: for rows, the dimension along which the buffer holds only ``slots`` positions,
            indexed by the point's coordinate modulo ``slots`` (None: a whole-tile buffer,
            or rows of a local that every reader reads at the position that stores it).
        slots: positions kept along ``ring`` (a power of two).
    """

    name: str
    ctype: str
    extent: Mapping[str, tuple[int, int]]
    kept: tuple[str, ...] = ()
    ring: str | None = None
    slots: int = 0

    def index(self, shift: Mapping[str, int]) -> str:
        """The C index into ``t_<name>`` of the point at the sweep position moved by
        ``shift``."""
        index = ""
        for dim in self.kept:
            if dim == self.ring:
                position = f"((x_{dim} + {shift.get(dim, 0)}) & {self.slots - 1})"
            else:
                position = f"(x_{dim} + {shift.get(dim, 0)} - b_{self.name}_{dim})"
            index = position if not index else f"({index}) * w_{self.name}_{dim} + {position}"
        return index


@attrs.frozen
class TileLayout:
    """What the generator decided for one stencil, which the emitters of its C read.

    Attributes:
        program: the program the stencil belongs to.
        stencil: the stencil.
        name: its C function's name, ``sf_stencil_<index>``.
        dims: its iteration dimensions, outermost first.
        definitions: each local's defining expression.
        temporaries: the locals kept in buffers.
        unit_stride: per field parameter, whether its last dimension is contiguous.
        streamed: the outputs written through row buffers (non-temporal stores).
        vectorized: whether the outputs' loop is written in explicit vectors.
        inner_extent: None, or the domain's compile-time extent along the inner dimension.
        tile_sizes: the tile's size along the innermost outer dimensions.
        parallel_min_points: the domain's points from which tiles go to OpenMP threads.
        prefetch_distance: sweep positions ahead that rows are prefetched (0: none).
        prefetch_dim: the outer dimension along which rows are prefetched (None: the
            innermost outer one).
        streaming_min_bytes: None, or the outputs' bytes from which they are streamed.
    """

    program: ProgramIR
    stencil: Stencil
    name: str
    dims: tuple[str, ...]
    definitions: Mapping[str, Expr]
    temporaries: Mapping[str, Temporary]
    unit_stride: Mapping[str, bool]
    streamed: tuple[str, ...]
    vectorized: bool
    inner_extent: int | None
    tile_sizes: tuple[int, ...]
    parallel_min_points: int
    prefetch_distance: int
    prefetch_dim: str | None
    streaming_min_bytes: int | None

    def field_type(self, name: str) -> FieldType:
        """The type of field parameter ``name``."""
        field = self.program.param(name).type
        assert isinstance(field, FieldType)
        return field


@attrs.frozen
class Statement:
    """One statement of a tile's sweep.

    Attributes:
        temporary: the temporary it stores (None: the statement stores the outputs).
        shift: the sweep position it computes the temporary at, relative to the position.
        bounds: per outer dimension, the (lower, upper) sweep positions where the statement
            is active, relative to the tile's start and end: ``[tb + lower, te + upper)``.
        inner: the (lower, upper) reach of its inner loop around the domain.
    """

    temporary: Temporary | None
    shift: Offsets
    bounds: Mapping[str, tuple[int, int]]
    inner: tuple[int, int]


@attrs.frozen
class Prefetch:
    """A row the sweep prefetches: of ``field``, at the sweep position moved by ``offsets``
    (outer dimensions only), for reading or for writing."""

    field: str
    offsets: Mapping[str, int]
    write: bool


@attrs.frozen
class TilePlan:
    """The sweep of a tile: its statements in order, whether one inner loop may run them
    all, and the rows to prefetch."""

    statements: Sequence[Statement]
    fusable: bool
    prefetches: Sequence[Prefetch]


def temporary_reads(
    expr: Expr,
    shift: Offsets,
    temporaries: Mapping[str, Temporary],
    definitions: Mapping[str, Expr],
) -> Iterator[tuple[str, Offsets]]:
    """The temporaries ``expr`` reads at ``shift``, and where (through inlined locals)."""
    for node in walk(expr):
        if not isinstance(node, Ref):
            continue
        offsets = combine_offsets(shift, node.offsets)
        if node.name in temporaries:
            yield node.name, offsets
        elif node.name in definitions:
            yield from temporary_reads(definitions[node.name], offsets, temporaries, definitions)


def field_reads(
    program: ProgramIR,
    expr: Expr,
    shift: Offsets,
    temporaries: Mapping[str, Temporary],
    definitions: Mapping[str, Expr],
) -> Iterator[tuple[str, Offsets]]:
    """The field parameters ``expr`` reads at ``shift``, and where (through inlined
    locals; temporaries are buffers, not fields)."""
    for node in walk(expr):
        if not isinstance(node, Ref) or node.name in temporaries:
            continue
        offsets = combine_offsets(shift, node.offsets)
        if node.name in definitions:
            yield from field_reads(
                program, definitions[node.name], offsets, temporaries, definitions
            )
        elif isinstance(program.param(node.name).type, FieldType):
            yield node.name, offsets


def statement_shifts(
    stencil: Stencil,
    dims: Sequence[str],
    temporaries: Mapping[str, Temporary],
    definitions: Mapping[str, Expr],
) -> tuple[dict[str | None, list[tuple[str, Offsets]]], dict[str | None, dict[str, int]]]:
    """Each statement's reads of temporaries (``None``: the outputs') and its shift
    along the outer dimensions: the outputs at the sweep position, each temporary (in
    reverse definition order) ahead of its readers by the most any of them reaches
    forward."""
    outer = dims[:-1]
    temps = list(temporaries.values())
    reads: dict[str | None, list[tuple[str, Offsets]]] = {
        None: [
            r
            for result in stencil.results
            for r in temporary_reads(result, (), temporaries, definitions)
        ]
    }
    for temp in temps:
        reads[temp.name] = list(
            temporary_reads(definitions[temp.name], (), temporaries, definitions)
        )
    shifts: dict[str | None, dict[str, int]] = {None: dict.fromkeys(outer, 0)}
    for temp in reversed(temps):
        reaches = [
            (reader, dict(offsets))
            for reader, found in reads.items()
            if reader in shifts
            for name, offsets in found
            if name == temp.name
        ]
        shifts[temp.name] = {
            d: max((shifts[r][d] + o.get(d, 0) for r, o in reaches), default=0) for d in outer
        }
    return reads, shifts


def row_temporaries(
    dims: tuple[str, ...],
    temporaries: Mapping[str, Temporary],
    reads: Reads,
    shifts: Shifts,
) -> dict[str, Temporary]:
    """The temporaries laid out as rows: each buffer holds only the positions the sweep
    still reads.

    A read looks at a point stored ``lag`` sweep positions earlier (per outer dimension,
    never negative: the shifts put every store ahead of its readers). Along the
    outermost outer dimension where some read lags, the buffer keeps the last ``slots``
    positions (a power of two above the largest lag), indexed by the point's coordinate
    modulo ``slots``; the outer dimensions before it, along which no read lags, are not
    stored at all; the ones after it and the inner one keep their whole tile width.
    Between the store of a point and its last read, the sweep (lexicographic) moves
    along the ring dimension by at most the largest lag, so no store in between reuses
    the slot. hdiff: ``lap`` and ``flx`` keep two rows of I, ``fly`` (read at J - 1)
    two K columns, carried from the previous J position.
    """
    outer = dims[:-1]
    laid_out = {}
    for temp in temporaries.values():
        lags = [
            {d: shifts[temp.name][d] - shifts[reader][d] - dict(offsets).get(d, 0) for d in outer}
            for reader, found in reads.items()
            for name, offsets in found
            if name == temp.name
        ]
        assert all(lag >= 0 for found in lags for lag in found.values())
        ring = next((d for d in outer if any(lag[d] for lag in lags)), None)
        if ring is None:
            laid_out[temp.name] = attrs.evolve(temp, kept=dims[-1:])
            continue
        slots = 1
        while slots <= max(lag[ring] for lag in lags):
            slots *= 2
        kept = dims[dims.index(ring) :]
        laid_out[temp.name] = attrs.evolve(temp, kept=kept, ring=ring, slots=slots)
    return laid_out


def _leading_accesses(layout: TileLayout, shifts: Shifts) -> dict[str, list[tuple[int, ...]]]:
    """Per field, its accesses' offsets along the outer dimensions, statement shifts
    included; a written field also at the sweep position."""
    outer = layout.dims[:-1]
    accesses: dict[str, list[tuple[int, ...]]] = {}
    sources: list[tuple[Expr, Mapping[str, int]]] = [
        (layout.definitions[name], shifts[name]) for name in layout.temporaries
    ]
    sources += [(result, shifts[None]) for result in layout.stencil.results]
    for expr, shift in sources:
        for name, offsets in field_reads(
            layout.program, expr, tuple(shift.items()), layout.temporaries, layout.definitions
        ):
            found = dict(offsets)
            accesses.setdefault(name, []).append(tuple(found.get(d, 0) for d in outer))
    # In the stencil's order (a set's order changes with PYTHONHASHSEED, and the text
    # is a cache key).
    for name in dict.fromkeys(target.name for target in layout.stencil.outputs):
        accesses.setdefault(name, []).append(tuple(0 for _ in outer))
    return accesses


def prefetches(layout: TileLayout, shifts: Shifts) -> list[Prefetch]:
    """Per field, the row a sweep position touches first: its lexicographically greatest
    access over the outer dimensions, statement shifts included (``None``: the outputs).

    Only fields that move along the dimension rows are prefetched along (``prefetch_dim``,
    else the innermost outer one) and are contiguous along the inner one are prefetched (a
    row is then one run of cache lines)."""
    outer, inner = layout.dims[:-1], layout.dims[-1]
    if not outer or layout.prefetch_distance == 0:
        return []
    along = layout.prefetch_dim or outer[-1]
    written = {target.name for target in layout.stencil.outputs}
    found = []
    for name, rows in _leading_accesses(layout, shifts).items():
        if name in layout.streamed:
            continue  # a prefetch would bring the line into the cache after all
        dims = layout.field_type(name).dim_names
        if dims[-1] != inner or along not in dims or not layout.unit_stride.get(name):
            continue
        leading = max(rows)
        ahead = {d: o for d, o in zip(outer, leading, strict=True) if d in dims}
        found.append(Prefetch(name, ahead, name in written))
    return found


def plan_tile(layout: TileLayout) -> TilePlan:
    """The statements of the sweep in order, whether one inner loop may run them all,
    and the rows to prefetch.

    The outputs are computed at the sweep position itself; each temporary (in reverse
    definition order) is shifted ahead of its readers by the most any of them reaches
    forward, per outer dimension. A read then never looks at a point later in the sweep
    than its reader's. One inner loop may compute all statements unless a read at the
    same sweep position looks along the inner dimension (the value there is computed in a
    later iteration of that loop); temporaries without inner extent rule that out.
    """
    outer, inner = layout.dims[:-1], layout.dims[-1]
    temps = list(layout.temporaries.values())
    _, shifts = statement_shifts(
        layout.stencil, layout.dims, layout.temporaries, layout.definitions
    )
    statements = []
    for temp in temps:
        shift = shifts[temp.name]
        statements.append(
            Statement(
                temp,
                combine_offsets((), tuple(shift.items())),
                {d: (temp.extent[d][0] - shift[d], temp.extent[d][1] - shift[d]) for d in outer},
                temp.extent[inner],
            )
        )
    statements.append(Statement(None, (), dict.fromkeys(outer, (0, 0)), (0, 0)))
    fusable = all(temp.extent[inner] == (0, 0) for temp in temps)
    return TilePlan(statements, fusable, prefetches(layout, shifts))
