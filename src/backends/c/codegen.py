"""IR -> C loop nests, one function per stencil.

Each stencil iterates over its output domain with the output's last dimension innermost (the
contiguous one in C order) and no branch in the inner loop: every expression becomes a
``const`` SSA value, ``where`` a select on values computed unconditionally, so gcc can
vectorize. The outer dimensions are cut into tiles, distributed by OpenMP. Locals that are
read at shifted positions become *temporaries*: computed once per tile over the tile plus
their extent into a per-thread buffer, instead of being recomputed at every use (with
``temporaries=False`` they are recomputed inline).

A tile is computed in one *sweep* over its outer points rather than one loop nest per
temporary: each statement (a temporary's store, or the outputs') is shifted so that
everything it reads was computed at an earlier point of the sweep, or earlier in the same
point's body (ADR 0009). Where every statement is active, one inner loop computes them all,
so values and loads shared between statements stay in registers and the temporaries are
read back while still in L1; at the tile's edges each active statement has its own inner
loop.

On the parallel path each sweep position also prefetches, some positions ahead along the
innermost outer dimension, the row of every field that the position touches first (the
lexicographically greatest access): rows are short (a K column), so the hardware prefetcher
sees each stream only briefly, and waiting for each new row from memory cost hdiff about a
fifth of its time.

With ``streaming_min_bytes`` set, outputs contiguous along the inner dimension are written
with non-temporal stores on the parallel path of a domain whose outputs take at least that
many bytes: each inner loop computes a chunk of the row into a buffer on the stack, which a
helper then streams to memory past the caches, so the output's lines are not read from memory
before being overwritten (a copy-like stencil moves two thirds of the bytes). Elsewhere the
chunk is computed straight into the output, as without streaming. A stencil of plain float64
arithmetic with a compile-time inner extent skips the buffer: its output loop is written in
explicit vectors that go straight to the row, streamed where it is aligned
(``backends.c.vectors``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import attrs

from backends.c.scratch import SCRATCH_C
from backends.c.streaming import STREAM_FENCE_C, STREAM_ROW_C
from backends.c.vectors import VECTOR_C, VECTOR_TYPE, VectorEmitter, vectorizable
from backends.clike.addressing import element_offset, output_stores, parameter_read
from backends.clike.expressions import C_TYPES, ExpressionEmitter, Offsets, convert
from backends.clike.generator import StencilGenerator, StencilSite
from pipeline.dsl.ir.nodes import Expr, Ref, combine_offsets
from pipeline.dsl.passes.traversal import walk
from pipeline.dsl.types import FieldType, ScalarType, float64

__all__ = ["STREAM_CHUNK", "StencilCode", "generate_stencil"]

#: Points of the inner dimension per chunk of a streamed output row (its stack buffer).
STREAM_CHUNK = 256

#: A vectorized loop's inner extent is a multiple of this: whole vectors on every target
#: (2, 4 or 8 lanes).
VECTOR_EXTENT_MULTIPLE = 8


@attrs.frozen
class StencilCode:
    """The C function of one stencil and what the bindings need to call it.

    Attributes:
        name: the function's name.
        signature: its declaration (without the ``;``), for the unit that calls it.
        text: its definition and the helpers it needs.
        iteration_dims: the dimensions of its domain, outermost first.
        helpers: the shared C helpers its text calls (``scratch.SCRATCH_C``, the
            ``streaming`` texts), which its translation unit defines once, before the
            stencils: each one is parsed on every cold build, so only where it is used.
        inner_extent: None, or the only extent of the domain's innermost dimension the code
            runs for (a compile-time constant): the check refuses a domain of another.
        edges: the definition of ``<name>_edges`` (``text`` declares it and calls it), or
            ``""``: the loops at a tile's edges, beside its fused loop. The program builds
            it as a translation unit of its own, at the same time as the rest.
    """

    name: str
    signature: str
    text: str
    iteration_dims: tuple[str, ...]
    helpers: tuple[str, ...] = ()
    inner_extent: int | None = None
    edges: str = ""


@attrs.frozen
class _Temporary:
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


#: Emits one statement into a loop body: returns the statement's store lines.
_Emit = Callable[[ExpressionEmitter], list[str]]


@attrs.frozen
class _Statement:
    """One statement of a tile's sweep.

    Attributes:
        emit: writes the statement's computation and stores into a loop body.
        bounds: per outer dimension, the (lower, upper) sweep positions where the statement
            is active, relative to the tile's start and end: ``[tb + lower, te + upper)``.
        inner: the (lower, upper) reach of its inner loop around the domain.
    """

    emit: _Emit
    bounds: Mapping[str, tuple[int, int]]
    inner: tuple[int, int]


@attrs.frozen
class _Prefetch:
    """A row the sweep prefetches: of ``field``, at the sweep position moved by ``offsets``
    (outer dimensions only), for reading or for writing."""

    field: str
    offsets: Mapping[str, int]
    write: bool


@attrs.frozen
class _Plan:
    """The sweep of a tile: its statements in order, whether one inner loop may run them
    all, and the rows to prefetch."""

    statements: Sequence[_Statement]
    fusable: bool
    prefetches: Sequence[_Prefetch]


class _StencilGenerator(StencilGenerator):
    def __init__(
        self,
        site: StencilSite,
        *,
        temporaries: bool,
        tile_sizes: Sequence[int],
        parallel_min_points: int,
        prefetch_distance: int,
        streaming_min_bytes: int | None = None,
        rows: bool = False,
        inner_extent: int | None = None,
    ) -> None:
        super().__init__(site, temporaries=temporaries)
        self.inner_extent = inner_extent
        self.tile_sizes = tuple(tile_sizes)
        self.parallel_min_points = parallel_min_points
        self.prefetch_distance = prefetch_distance
        self.counter = 0
        self.temporaries: dict[str, _Temporary] = {}
        for name, extent in self.layout.temporaries.items():
            local_type = self.definitions[name].type
            assert local_type is not None
            self.temporaries[name] = _Temporary(
                name, C_TYPES[local_type.dtype], extent, kept=self.dims
            )
        if rows and self.dims:
            self.temporaries = self._rows(*self._shifts())
        self.streaming_min_bytes = streaming_min_bytes
        # Rows make long tiles along the outermost outer dimension cheap: the sweep crosses
        # a tile's width of positions per step along it, time enough to prefetch rows ahead.
        self.prefetch_dim = self.dims[0] if rows and self.temporaries and len(self.dims) > 1 else None
        self.streamed = self._streamed() if streaming_min_bytes is not None else ()
        self.vectorized = self._vectorized()

    def _streamed(self) -> tuple[str, ...]:
        """The outputs written through row buffers: over exactly the iteration dimensions,
        contiguous along the inner one, written once and never read by the stencil."""
        if len(self.dims) < 2:
            return ()
        names = [target.name for target in self.stencil.outputs]
        read = {extent.name for extent in self.stencil.extents}
        read |= {guarded.name for guarded in self.stencil.guarded}
        found = []
        for name in names:
            param = self.program.param(name)
            assert isinstance(param.type, FieldType)
            if (
                tuple(param.type.dim_names) == tuple(self.dims)
                and self.unit_stride.get(name, False)
                and names.count(name) == 1
                and name not in read
            ):
                found.append(name)
        return tuple(found)

    def _vectorized(self) -> bool:
        """Whether the loop that stores the outputs is written in explicit vectors
        (``backends.c.vectors``): every output streamed, a compile-time inner extent of
        whole vectors, and plain float64 arithmetic throughout."""
        outputs = [target.name for target in self.stencil.outputs]
        return (
            bool(self.streamed)
            and len(self.streamed) == len(outputs)
            and all(self._field_type(name).dtype == float64 for name in outputs)
            and self.inner_extent is not None
            and self.inner_extent > 0
            and self.inner_extent % VECTOR_EXTENT_MULTIPLE == 0
            and all(temp.ctype == C_TYPES[float64] for temp in self.temporaries.values())
            and vectorizable(
                [*self.stencil.results, *(self.definitions[t] for t in self.temporaries)],
                self.definitions,
                self.temporaries,
                self._contiguous_fields(),
                [p.name for p in self.program.params if isinstance(p.type, ScalarType)],
                self.dims[-1],
            )
        )

    def _contiguous_fields(self) -> list[str]:
        """The field parameters whose inner dimension is the sweep's and has unit stride."""
        inner = self.dims[-1]
        return [
            param.name
            for param in self.program.params
            if isinstance(param.type, FieldType)
            and param.type.dim_names
            and param.type.dim_names[-1] == inner
            and self.unit_stride.get(param.name, False)
        ]

    def next_id(self) -> int:
        self.counter += 1
        return self.counter

    # -- reads ------------------------------------------------------------------------------
    def read(self, body: ExpressionEmitter, name: str, offsets: Offsets) -> str:
        shift = dict(offsets)
        if name in self.temporaries:
            temp = self.temporaries[name]
            index = self._temp_index(temp, shift)
            return body.load(temp.ctype, f"t_{name}[{index}]")
        if name in self.definitions:
            return body.value(self.definitions[name], offsets)
        return parameter_read(self.program, self.unit_stride, body, name, offsets)

    def _temp_index(self, temp: _Temporary, shift: Mapping[str, int]) -> str:
        index = ""
        for dim in temp.kept:
            if dim == temp.ring:
                position = f"((x_{dim} + {shift.get(dim, 0)}) & {temp.slots - 1})"
            else:
                position = f"(x_{dim} + {shift.get(dim, 0)} - b_{temp.name}_{dim})"
            index = position if not index else f"({index}) * w_{temp.name}_{dim} + {position}"
        return index

    # -- the sweep ---------------------------------------------------------------------------
    def _temporary_reads(self, expr: Expr, shift: Offsets) -> Iterator[tuple[str, Offsets]]:
        """The temporaries ``expr`` reads at ``shift``, and where (through inlined locals)."""
        for node in walk(expr):
            if not isinstance(node, Ref):
                continue
            offsets = combine_offsets(shift, node.offsets)
            if node.name in self.temporaries:
                yield node.name, offsets
            elif node.name in self.definitions:
                yield from self._temporary_reads(self.definitions[node.name], offsets)

    def _field_reads(self, expr: Expr, shift: Offsets) -> Iterator[tuple[str, Offsets]]:
        """The field parameters ``expr`` reads at ``shift``, and where (through inlined
        locals; temporaries are buffers, not fields)."""
        for node in walk(expr):
            if not isinstance(node, Ref) or node.name in self.temporaries:
                continue
            offsets = combine_offsets(shift, node.offsets)
            if node.name in self.definitions:
                yield from self._field_reads(self.definitions[node.name], offsets)
            elif isinstance(self.program.param(node.name).type, FieldType):
                yield node.name, offsets

    def _prefetches(self, shifts: Mapping[str | None, Mapping[str, int]]) -> list[_Prefetch]:
        """Per field, the row a sweep position touches first: its lexicographically greatest
        access over the outer dimensions, statement shifts included (``None``: the outputs).

        Only fields that move with the innermost outer dimension and are contiguous along
        the inner one are prefetched (a row is then one run of cache lines)."""
        outer, inner = self.dims[:-1], self.dims[-1]
        if not outer or self.prefetch_distance == 0:
            return []
        accesses: dict[str, list[tuple[int, ...]]] = {}
        sources: list[tuple[Expr, Mapping[str, int]]] = [
            (self.definitions[name], shifts[name]) for name in self.temporaries
        ]
        sources += [(result, shifts[None]) for result in self.stencil.results]
        for expr, shift in sources:
            for name, offsets in self._field_reads(expr, tuple(shift.items())):
                found = dict(offsets)
                accesses.setdefault(name, []).append(tuple(found.get(d, 0) for d in outer))
        # In the stencil's order (a set's order changes with PYTHONHASHSEED, and the text
        # is a cache key).
        written = tuple(dict.fromkeys(target.name for target in self.stencil.outputs))
        for name in written:
            accesses.setdefault(name, []).append(tuple(0 for _ in outer))
        prefetches = []
        for name, rows in accesses.items():
            if name in self.streamed:
                continue  # a prefetch would bring the line into the cache after all
            param = self.program.param(name)
            assert isinstance(param.type, FieldType)
            dims = param.type.dim_names
            if dims[-1] != inner or outer[-1] not in dims or not self.unit_stride.get(name):
                continue
            leading = max(rows)
            ahead = {d: o for d, o in zip(outer, leading, strict=True) if d in dims}
            prefetches.append(_Prefetch(name, ahead, name in written))
        return prefetches

    def _shifts(
        self,
    ) -> tuple[
        dict[str | None, list[tuple[str, Offsets]]], dict[str | None, dict[str, int]]
    ]:
        """Each statement's reads of temporaries (``None``: the outputs') and its shift
        along the outer dimensions: the outputs at the sweep position, each temporary (in
        reverse definition order) ahead of its readers by the most any of them reaches
        forward."""
        outer = self.dims[:-1]
        temps = list(self.temporaries.values())
        reads: dict[str | None, list[tuple[str, Offsets]]] = {
            None: [r for result in self.stencil.results for r in self._temporary_reads(result, ())]
        }
        for temp in temps:
            reads[temp.name] = list(self._temporary_reads(self.definitions[temp.name], ()))
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

    def _rows(
        self,
        reads: Mapping[str | None, Sequence[tuple[str, Offsets]]],
        shifts: Mapping[str | None, Mapping[str, int]],
    ) -> dict[str, _Temporary]:
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
        outer = self.dims[:-1]
        laid_out = {}
        for temp in self.temporaries.values():
            lags: list[dict[str, int]] = []
            for reader, found in reads.items():
                for name, offsets in found:
                    if name != temp.name:
                        continue
                    at = dict(offsets)
                    lags.append(
                        {
                            d: shifts[temp.name][d] - shifts[reader][d] - at.get(d, 0)
                            for d in outer
                        }
                    )
            assert all(lag >= 0 for found in lags for lag in found.values())
            ring = next((d for d in outer if any(lag[d] for lag in lags)), None)
            if ring is None:
                laid_out[temp.name] = attrs.evolve(temp, kept=self.dims[-1:])
                continue
            slots = 1
            while slots <= max(lag[ring] for lag in lags):
                slots *= 2
            kept = self.dims[self.dims.index(ring) :]
            laid_out[temp.name] = attrs.evolve(temp, kept=kept, ring=ring, slots=slots)
        return laid_out

    def _plan_sweep(self) -> _Plan:
        """The statements of the sweep in order, whether one inner loop may run them all,
        and the rows to prefetch.

        The outputs are computed at the sweep position itself; each temporary (in reverse
        definition order) is shifted ahead of its readers by the most any of them reaches
        forward, per outer dimension. A read then never looks at a point later in the sweep
        than its reader's. One inner loop may compute all statements unless a read at the
        same sweep position looks along the inner dimension (the value there is computed in a
        later iteration of that loop); temporaries without inner extent rule that out.
        """
        outer, inner = self.dims[:-1], self.dims[-1]
        temps = list(self.temporaries.values())
        _, shifts = self._shifts()
        statements = []
        for temp in temps:
            shift = shifts[temp.name]
            statements.append(
                _Statement(
                    self._temporary_store(temp, combine_offsets((), tuple(shift.items()))),
                    {
                        d: (temp.extent[d][0] - shift[d], temp.extent[d][1] - shift[d])
                        for d in outer
                    },
                    temp.extent[inner],
                )
            )
        statements.append(_Statement(self._store_outputs, dict.fromkeys(outer, (0, 0)), (0, 0)))
        fusable = all(temp.extent[inner] == (0, 0) for temp in temps)
        return _Plan(statements, fusable, self._prefetches(shifts))

    def _prefetch_bytes(self, prefetches: Sequence[_Prefetch]) -> list[str]:
        """``pf_bytes``: how much of each row to prefetch; one cache line unless the caller
        asks (``pf``).

        The sweep's prefetch loops are ``do``/``while`` loops up to this bound: under an
        ``if (pf)``, or behind a ``for`` loop's entry test, gcc unswitches the whole sweep on
        the condition and builds it twice (+0.3 s for hdiff). A line of data that is in cache
        already costs a prefetch next to nothing.
        """
        inner = self.dims[-1]
        sizes = [f"(int64_t)sizeof(*p_{prefetch.field})" for prefetch in prefetches]
        widest = sizes[0] if sizes else "0"
        for size in sizes[1:]:
            widest = f"({widest} > {size} ? {widest} : {size})"
        return [f"    const int64_t pf_bytes = pf ? (hi_{inner} - lo_{inner}) * {widest} : 0;"]

    def _prefetch_rows(self, prefetches: Sequence[_Prefetch], indent: str) -> list[str]:
        """Prefetch each row ``prefetch_distance`` positions ahead along the innermost outer
        dimension (``pf_bytes`` of it).

        Addresses are computed as integers: a row ahead may lie outside the array (past the
        tile, past the domain), which a prefetch tolerates and C pointer arithmetic does not.
        """
        if not prefetches:
            return []
        outer, inner = self.dims[:-1], self.dims[-1]
        lines = [f"{indent}{{"]
        for number, prefetch in enumerate(prefetches):
            param = self.program.param(prefetch.field)
            assert isinstance(param.type, FieldType)
            terms = []
            for axis, dim in enumerate(param.type.dim_names[:-1]):
                ahead = prefetch.offsets.get(dim, 0) + (
                    self.prefetch_distance if dim == (self.prefetch_dim or outer[-1]) else 0
                )
                terms.append(f"(x_{dim} + {ahead}) * s_{prefetch.field}_{axis}")
            terms.append(f"lo_{inner}")
            lines.append(
                f"{indent}    const uintptr_t r{number} = (uintptr_t)p_{prefetch.field} + "
                f"(uintptr_t)(({' + '.join(terms)}) * (int64_t)sizeof(*p_{prefetch.field}));"
            )
        # Rows ahead along the outermost dimension are needed later than positions ahead
        # along the innermost: into L2 (prefetcht1), not to displace L1's rows in use.
        locality = 2 if self.prefetch_dim else 3
        lines += [f"{indent}    int64_t q = 0;", f"{indent}    do {{"]
        for number, prefetch in enumerate(prefetches):
            lines.append(
                f"{indent}        __builtin_prefetch((const void*)(r{number} + (uintptr_t)q), "
                f"{int(prefetch.write)}, {locality});"
            )
        lines += [f"{indent}        q += 64;", f"{indent}    }} while (q < pf_bytes);", f"{indent}}}"]
        return lines

    def _sweep(self, plan: _Plan, indent: str) -> tuple[list[str], list[str], bool]:
        """Loops over the tile's outer points (plus reach) running the active statements,
        the body of the edge function (``[]``: none) and whether it stores a streamed
        output. Where a fused loop runs every statement, the positions at the tile's edges
        call ``<name>_edges`` for the loops of the statements active there."""
        statements, fusable = plan.statements, plan.fusable
        outer = self.dims[:-1]
        first = {d: min(s.bounds[d][0] for s in statements) for d in outer}
        last = {d: max(s.bounds[d][1] for s in statements) for d in outer}
        guards = [self._guard(statement.bounds, first, last) for statement in statements]
        # Where every statement is active: the tightest of their bounds, per outer dimension.
        inside = {
            d: (max(s.bounds[d][0] for s in statements), min(s.bounds[d][1] for s in statements))
            for d in outer
        }
        everywhere = " && ".join(self._guard(inside, first, last))
        edges = fusable and bool(everywhere)
        # The edge function's loops are inside its loop over a run of positions.
        pad = indent + "    " * len(outer)
        loop_pad = "        " if edges else pad
        separate: list[str] = []
        streams = False
        for statement, guard in zip(statements, guards, strict=True):
            if edges and statement.bounds == inside:
                # Active only where the fused loop runs: never at the edges (gcc does not
                # see it, and would build the loop for nothing).
                continue
            streams |= bool(self.streamed) and statement.emit == self._store_outputs
            loop = self._inner_loop(
                statement.inner, [statement.emit], loop_pad + "    " * bool(guard), edge=edges
            )
            if guard:
                loop = [f"{loop_pad}if ({' && '.join(guard)}) {{", *loop, f"{loop_pad}}}"]
            separate += loop
        if edges:
            return self._edged_sweep(plan, indent, first, last, inside), separate, streams
        lines = []
        for depth, d in enumerate(outer):
            lines.append(
                f"{indent}{'    ' * depth}for (int64_t x_{d} = tb_{d} + {first[d]}; "
                f"x_{d} < te_{d} + {last[d]}; ++x_{d}) {{"
            )
        lines += self._prefetch_rows(plan.prefetches, pad)
        if not fusable:
            lines += separate
        else:
            lines += self._inner_loop((0, 0), [s.emit for s in statements], pad)
        for depth in reversed(range(len(outer))):
            lines.append(f"{indent}{'    ' * depth}}}")
        return lines, [], False

    def _edged_sweep(
        self,
        plan: _Plan,
        indent: str,
        first: Mapping[str, int],
        last: Mapping[str, int],
        inside: Mapping[str, tuple[int, int]],
    ) -> list[str]:
        """The sweep of a fused loop with edges. Along the innermost outer dimension ``r``
        each row of positions is a leading run of edge positions, the fused positions and a
        trailing run (a row outside the fused region along another dimension is one run);
        each run is one call of the edge function, which loops over it. One call per
        position cost small grids more than the loops (ADR 0018)."""
        outer = self.dims[:-1]
        *others, r = outer
        lines = []
        for depth, d in enumerate(others):
            lines.append(
                f"{indent}{'    ' * depth}for (int64_t x_{d} = tb_{d} + {first[d]}; "
                f"x_{d} < te_{d} + {last[d]}; ++x_{d}) {{"
            )
        pad = indent + "    " * len(others)
        start, stop = f"tb_{r} + {first[r]}", f"te_{r} + {last[r]}"
        lower, upper = inside[r]
        # The fused run [f_r, g_r), within [start, stop) even for a tile narrower than the
        # reach.
        low = f"tb_{r} + {lower}" if lower > first[r] else start
        high = f"te_{r} + {upper}" if upper < last[r] else stop
        fused = [
            f"{pad}    const int64_t f_{r} = {low} < {stop} ? {low} : {stop};",
            f"{pad}    const int64_t g_{r} = {high} > f_{r} ? {high} : f_{r};",
        ]
        if lower > first[r]:
            fused.append(f"{pad}    if ({start} < f_{r}) {self._edges_call(start, f'f_{r}')}")
        fused.append(f"{pad}    for (int64_t x_{r} = f_{r}; x_{r} < g_{r}; ++x_{r}) {{")
        fused += self._prefetch_rows(plan.prefetches, pad + "        ")
        fused += self._inner_loop(
            (0, 0), [s.emit for s in plan.statements], pad + "        "
        )
        fused.append(f"{pad}    }}")
        if upper < last[r]:
            fused.append(f"{pad}    if (g_{r} < {stop}) {self._edges_call(f'g_{r}', stop)}")
        condition = " && ".join(self._guard({d: inside[d] for d in others}, first, last))
        if condition:
            lines += [f"{pad}if ({condition}) {{", *fused, f"{pad}}} else {{"]
            lines += [f"{pad}    {self._edges_call(start, stop)}", f"{pad}}}"]
        else:
            lines += [f"{pad}{{", *fused, f"{pad}}}"]
        for depth in reversed(range(len(others))):
            lines.append(f"{indent}{'    ' * depth}}}")
        return lines

    @staticmethod
    def _guard(
        bounds: Mapping[str, tuple[int, int]], first: Mapping[str, int], last: Mapping[str, int]
    ) -> list[str]:
        """The conditions under which a sweep position lies within ``bounds`` (per outer
        dimension, relative to the tile), given that it lies within ``first``/``last``."""
        conditions = []
        for d, (lower, upper) in bounds.items():
            if lower > first[d]:
                conditions.append(f"x_{d} >= tb_{d} + {lower}")
            if upper < last[d]:
                conditions.append(f"x_{d} < te_{d} + {upper}")
        return conditions

    def _inner_loop(
        self, reach: tuple[int, int], emits: Sequence[_Emit], indent: str, edge: bool = False
    ) -> list[str]:
        """One inner-dimension loop computing ``emits`` in order at every point; with
        streamed outputs among them, in chunks of ``STREAM_CHUNK`` points, each chunk's
        output rows written out of their buffers after its loop when ``nt`` (else computed
        in place). ``edge``: the loop runs only at the tile's edges, beside a fused loop
        (see ``_simd_loop``)."""
        inner = self.dims[-1]
        start, stop = f"lo_{inner} + {reach[0]}", f"hi_{inner} + {reach[1]}"
        if self.vectorized and self._store_outputs in emits and not edge and reach == (0, 0):
            return self._vector_loop(emits, indent)
        if self.streamed and self._store_outputs in emits:
            extent = self.inner_extent
            if extent is not None and extent + reach[1] - reach[0] <= STREAM_CHUNK:
                # One chunk: gcc does not see that the loop runs once, and would vectorize
                # its body for any trip count (with epilogues), a third of hdiff's build.
                outer_lines = [
                    f"{indent}{{",
                    f"{indent}    const int64_t c_{inner} = {start};",
                    f"{indent}    const int64_t e_{inner} = {stop};",
                ]
            else:
                outer_lines = [
                    f"{indent}for (int64_t c_{inner} = {start}; c_{inner} < {stop}; "
                    f"c_{inner} += {STREAM_CHUNK}) {{",
                    f"{indent}    const int64_t e_{inner} = c_{inner} + {STREAM_CHUNK} < {stop} ? "
                    f"c_{inner} + {STREAM_CHUNK} : {stop};",
                ]
            # Without nt the chunk goes straight to the output: a small domain pays no copy.
            targets = [
                f"{indent}    {C_TYPES[self._field_type(name).dtype]}* restrict w_{name} = "
                f"nt ? o_{name} : p_{name} + {self._row_offset(name)};"
                for name in self.streamed
            ]
            loop = self._simd_loop(f"c_{inner}", f"e_{inner}", emits, indent + "    ", edge)
            writes = [
                f"{indent}    if (nt) sf_stream_row(p_{name} + "
                f"{self._row_offset(name)}, o_{name}, "
                f"(e_{inner} - c_{inner}) * (int64_t)sizeof(*p_{name}), 1);"
                for name in self.streamed
            ]
            return [*outer_lines, *targets, *loop, *writes, f"{indent}}}"]
        return self._simd_loop(start, stop, emits, indent, edge)

    def _vector_loop(self, emits: Sequence[_Emit], indent: str) -> list[str]:
        """The inner loop over the domain computing ``emits`` a vector of points at a time
        (``VectorEmitter``), each output vector stored straight to its row, past the caches
        when ``nt`` and the row is aligned to a vector.

        A streamed row off a vector boundary (NumPy's own large arrays start 16 bytes past
        one) goes through the tile's row buffer when it fits (``b_<name>``): the loop
        stores the row there, in cache, and ``sf_stream_row`` streams it out. Only the
        pointer differs, so the loop is the same on aligned rows. (Joining neighbouring
        vectors into aligned ones inside the loop instead made hdiff 15 % slower on
        aligned rows on the Zen 3 VM: ADR 0009.)"""
        inner = self.dims[-1]
        buffered = self.inner_extent is not None and self.inner_extent <= STREAM_CHUNK
        lines = [f"{indent}{{", f"{indent}    const int64_t c_{inner} = lo_{inner};"]
        for name in self.streamed:
            row = f"r_{name}" if buffered else f"w_{name}"
            lines += [
                f"{indent}    double* restrict {row} = p_{name} + {self._row_offset(name)};",
                f"{indent}    const int nt_{name} = nt && "
                f"((uintptr_t){row} & (sizeof({VECTOR_TYPE}) - 1)) == 0;",
            ]
            if buffered:
                lines += [
                    f"{indent}    const int b_{name} = nt && !nt_{name};",
                    f"{indent}    double* restrict w_{name} = b_{name} ? o_{name} : r_{name};",
                ]
        lines.append(
            f"{indent}    for (int64_t x_{inner} = lo_{inner}; x_{inner} < hi_{inner}; "
            f"x_{inner} += SF_VLANES) {{"
        )
        body = VectorEmitter(self.read, self.definitions, indent + "        ")
        for emit in emits:
            emitted = len(body.lines)
            stores = (self._put_outputs if emit == self._store_outputs else emit)(body)
            lines += body.lines[emitted:]
            lines += [indent + "        " + store for store in stores]
        lines.append(f"{indent}    }}")
        for name in self.streamed if buffered else ():
            lines.append(
                f"{indent}    if (b_{name}) sf_stream_row(r_{name}, o_{name}, "
                f"(hi_{inner} - lo_{inner}) * (int64_t)sizeof(double), 1);"
            )
        lines.append(f"{indent}}}")
        return lines

    def _put_outputs(self, body: ExpressionEmitter) -> list[str]:
        """The vector loop's output stores (every output is streamed there)."""
        assert isinstance(body, VectorEmitter)
        inner = self.dims[-1]
        return [
            f"sf_vput(&w_{target.name}[x_{inner} - c_{inner}], "
            f"{body.vector(body.value(result, ()))}, nt_{target.name});"
            for target, result in zip(self.stencil.outputs, self.stencil.results, strict=True)
        ]

    def _row_offset(self, name: str) -> str:
        """The offset of streamed output ``name`` at the sweep position, chunk start."""
        inner = self.dims[-1]
        terms = [f"x_{d} * s_{name}_{axis}" for axis, d in enumerate(self.dims[:-1])]
        return "(" + " + ".join([*terms, f"c_{inner}"]) + ")"

    def _simd_loop(
        self, start: str, stop: str, emits: Sequence[_Emit], indent: str, edge: bool = False
    ) -> list[str]:
        inner = self.dims[-1]
        # No iteration depends on another (outputs never alias inputs: checked at the call),
        # so skip gcc's alias versioning and peeling on short rows. An edge loop stays a
        # loop: with a compile-time inner extent gcc would unroll it completely, which for
        # hdiff's three edge loops was a fifth of the unit's build (ADR 0018), for loops
        # that run at a few percent of the points and took the same time in cache as loops.
        # (gcc accepts no `unroll` next to `omp simd`; `ivdep` says the same to it here.)
        pragmas = ["#pragma GCC ivdep", "#pragma GCC unroll 1"] if edge else ["#pragma omp simd"]
        lines = [
            *(indent + pragma for pragma in pragmas),
            f"{indent}for (int64_t x_{inner} = {start}; x_{inner} < {stop}; ++x_{inner}) {{",
        ]
        body = ExpressionEmitter(self.read, indent + "    ", index=_loop_index)
        for emit in emits:
            # Each statement's stores precede the next statement's loads, which may read them.
            emitted = len(body.lines)
            stores = emit(body)
            lines += body.lines[emitted:]
            lines += [indent + "    " + store for store in stores]
        lines.append(f"{indent}}}")
        return lines

    def generate(self) -> StencilCode:
        if not self.dims:
            return self._generate_point()
        return self._generate_loops()

    def _generate_point(self) -> StencilCode:
        """A 0-D stencil: one function computing the outputs' single point."""
        name = f"sf_stencil_{self.index}"
        signature = (
            f'__attribute__((visibility("hidden"))) int {name}'
            "(const sf_args* restrict a, const int64_t* lo, const int64_t* hi)"
        )
        body = ExpressionEmitter(self.read, "    ", index=_loop_index)
        stores = self._store_outputs(body)
        lines = [f"{signature} {{", "    (void)lo; (void)hi;", *self._unpack(), *body.lines]
        lines += [f"    {store}" for store in stores]
        lines += ["    return 0;", "}"]
        return StencilCode(name, signature, "\n".join(lines), ())

    def _generate_loops(self) -> StencilCode:
        """Two functions: ``<name>_tile`` computes one tile (temporaries, then outputs);
        ``<name>`` allocates the temporaries and hands out the tiles, on OpenMP threads when
        the domain is large enough. The tile body exists once, so the compiler optimizes
        (and the build pays for) it once."""
        dims = self.dims
        outer = dims[:-1]
        tiles = dict.fromkeys(outer, 1)
        for d, size in zip(reversed(outer), reversed(self.tile_sizes), strict=False):
            tiles[d] = size
        name = f"sf_stencil_{self.index}"
        temps = list(self.temporaries.values())
        temp_args = "".join(f", t_{t.name}" for t in temps)
        lines, edges = self._tile_function(f"{name}_tile")
        n_outer = max(1, len(outer))
        points = " * ".join(f"(hi_{d} - lo_{d})" for d in dims)
        # Hidden: called from the program's own run function, never from outside the object.
        signature = (
            f'__attribute__((visibility("hidden"))) int {name}'
            "(const sf_args* restrict a, const int64_t* lo, const int64_t* hi)"
        )
        lines.append(f"{signature} {{")
        lines += self._bounds()
        lines.append("    int failed = 0;")
        # Small domains skip OpenMP: entering a parallel region costs more than a small
        # stencil, and one tile covering the whole domain fits in cache anyway.
        # One-dimensional stencils have no outer dimension to share among threads: they
        # always take the single-thread path.
        threshold = f"{points} >= {self.parallel_min_points}" if outer else "0"
        lines.append(f"    if ({threshold}) {{")
        if self.streamed:
            widths = " + ".join(
                f"(int64_t)sizeof({C_TYPES[self._field_type(o).dtype]})" for o in self.streamed
            )
            # Outputs that fit in the cache stay there for whatever reads them next.
            lines.append(
                f"        const int nt = {points} * ({widths}) >= "
                f"(int64_t){self.streaming_min_bytes};"
            )
        sizes = ", ".join(str(tiles[d]) for d in outer) or "1"
        lines.append(f"        const int64_t tile[{n_outer}] = {{{sizes}}};")
        nt_arg = ", nt" if self.streamed else ""
        # Prefetch on this path only: the single-tile path's data is in cache already.
        call = f"{name}_tile(a, lo, hi, tile, tb, te, 1{nt_arg}{temp_args});"
        if temps:
            lines.append("        #pragma omp parallel")
            lines.append("        {")
            lines += self._allocate(temps, "            ")
            # Every thread must reach the work-sharing loop or none may: agree on allocation
            # failure behind a barrier first.
            lines.append("            if (!sf_block) {")
            lines.append("                #pragma omp atomic write")
            lines.append("                failed = 1;")
            lines.append("            }")
            lines.append("            #pragma omp barrier")
            lines.append("            int failed_now;")
            lines.append("            #pragma omp atomic read")
            lines.append("            failed_now = failed;")
            lines.append("            if (!failed_now) {")
            # Tiles with temporaries are compute-heavy: a thread that loses part of its core
            # (another process, the kernel) would hold the whole call back under a static
            # split, so idle threads take the next tile instead. Streams without temporaries
            # keep the static split: a thread's tiles stay contiguous for the prefetchers,
            # and dynamic tiles measured slower there (ADR 0009).
            lines += self._tile_loop("            ", "#pragma omp for schedule(dynamic)", call)
            lines.append("            }")
            lines += self._release(temps, "            ")
            lines.append("        }")
        else:
            lines += self._tile_loop("        ", "#pragma omp parallel for schedule(static)", call)
        lines.append("    } else {")
        whole = ", ".join(f"hi_{d} - lo_{d}" for d in outer) or "1"
        lines.append(f"        const int64_t tile[{n_outer}] = {{{whole}}};")
        serial = f"{name}_tile(a, lo, hi, tile, lo, hi, 0{', 0' if self.streamed else ''}{temp_args});"
        if temps:
            lines += self._allocate(temps, "        ")
            lines.append("        if (sf_block) {")
            lines.append(f"            {serial}")
            lines.append("        } else { failed = 1; }")
            lines += self._release(temps, "        ")
        else:
            lines.append(f"        {serial}")
        lines.append("    }")
        lines.append("    return failed ? -1 : 0;")
        lines.append("}")
        helpers = [SCRATCH_C] if temps else []
        if self.streamed:
            helpers += [STREAM_FENCE_C, STREAM_ROW_C]
        if self.vectorized:
            helpers.append(VECTOR_C)
        return StencilCode(
            name, signature, "\n".join(lines), dims, tuple(helpers), self.inner_extent, edges
        )

    def _tile_function(self, function: str) -> tuple[list[str], str]:
        """The function ``function`` computing one tile (temporaries, then outputs), and the
        definition of the edge function it calls (``""``: none)."""
        temps = list(self.temporaries.values())
        streaming = ", const int nt" if self.streamed else ""
        lines = [
            f"SF_NOCLONE __attribute__((noinline)) static void {function}(const sf_args* restrict a, "
            "const int64_t* lo, const int64_t* hi, const int64_t* tile, const int64_t* tb, "
            f"const int64_t* te, const int pf{streaming}{self._temp_params(temps)}) {{",
            "    (void)pf;",
        ]
        lines += self._tile_prologue(temps)
        plan = self._plan_sweep()
        if plan.prefetches:
            lines += self._prefetch_bytes(plan.prefetches)
        sweep, edge_loops, edges_stream = self._sweep(plan, "    ")
        lines += sweep
        if self.streamed:
            # Streaming stores are weakly ordered: make them visible before the tile ends.
            lines.append("    if (nt) sf_stream_fence();")
        lines.append("}")
        if not edge_loops:
            return lines, ""
        r = self.dims[-2]
        edges = [
            f"{self._edges_signature(temps)} {{",
            *self._tile_prologue(temps, streamed=edges_stream),
            *(self._prefetch_bytes(plan.prefetches) if plan.prefetches else ["    (void)pf;"]),
            f"    for (int64_t x_{r} = from_{r}; x_{r} < to_{r}; ++x_{r}) {{",
            *self._prefetch_rows(plan.prefetches, "        "),
            *edge_loops,
            "    }",
            "}",
        ]
        return [f"{self._edges_signature(temps)};", *lines], "\n".join(edges)

    @staticmethod
    def _temp_params(temps: Sequence[_Temporary]) -> str:
        return "".join(f", {t.ctype}* restrict t_{t.name}" for t in temps)

    def _edges_signature(self, temps: Sequence[_Temporary]) -> str:
        """The edge function: the statements active at the tile's edges, for the sweep
        positions ``[from_r, to_r)`` along the innermost outer dimension ``r`` (at ``x_<d>``
        along the others). Not inlined into the tile (it is meant for a unit of its own)."""
        *others, r = self.dims[:-1]
        positions = "".join(f", const int64_t x_{d}" for d in others)
        positions += f", const int64_t from_{r}, const int64_t to_{r}"
        streaming = ", const int nt" if self.streamed else ""
        return (
            'SF_NOCLONE __attribute__((noinline, visibility("hidden"))) void '
            f"{self._name}_edges(const sf_args* restrict a, const int64_t* lo, "
            "const int64_t* hi, const int64_t* tile, const int64_t* tb, const int64_t* te, "
            f"const int pf{positions}{streaming}{self._temp_params(temps)})"
        )

    def _edges_call(self, start: str, stop: str) -> str:
        """The edge function's call for the positions ``[start, stop)`` of the run."""
        positions = "".join(f", x_{d}" for d in self.dims[:-2])
        streaming = ", nt" if self.streamed else ""
        temps = "".join(f", t_{t.name}" for t in self.temporaries.values())
        return (
            f"{self._name}_edges(a, lo, hi, tile, tb, te, pf{positions}, {start}, {stop}"
            f"{streaming}{temps});"
        )

    def _tile_prologue(self, temps: Sequence[_Temporary], streamed: bool = True) -> list[str]:
        """The tile's bounds, the unpacked arguments, the temporaries' widths and bases,
        and (``streamed``) the streamed outputs' row buffers."""
        dims = self.dims
        outer, inner = dims[:-1], dims[-1]
        lines = self._bounds()
        lines += [
            f"    const int64_t tb_{d} = tb[{i}], te_{d} = te[{i}];" for i, d in enumerate(outer)
        ]
        lines += self._unpack()
        for temp in temps:
            for d in temp.kept:
                if d == temp.ring:
                    continue
                width = self._width(temp, d)
                lines.append(
                    f"    const int64_t w_{temp.name}_{d} = {width}; (void)w_{temp.name}_{d};"
                )
        block_lo = {d: f"tb_{d}" for d in outer} | {inner: f"lo_{inner}"}
        for temp in temps:
            for d in temp.kept:
                if d == temp.ring:
                    continue
                lines.append(
                    f"    const int64_t b_{temp.name}_{d} = {block_lo[d]} + {temp.extent[d][0]};"
                )
        for output in self.streamed if streamed else ():
            param = self.program.param(output)
            assert isinstance(param.type, FieldType)
            lines.append(
                f"    {C_TYPES[param.type.dtype]} o_{output}[{STREAM_CHUNK}] "
                "__attribute__((aligned(64)));"
            )
        return lines

    def _bounds(self) -> list[str]:
        """``lo_<d>``/``hi_<d>``: the domain's bounds, with ``hi`` of the inner dimension a
        constant distance from ``lo`` when the extent is fixed (the check refuses others)."""
        inner = self.dims[-1]
        lines = []
        for i, d in enumerate(self.dims):
            high = f"lo_{d} + {self.inner_extent}" if d == inner and self.inner_extent else f"hi[{i}]"
            lines.append(f"    const int64_t lo_{d} = lo[{i}], hi_{d} = {high};")
        return lines

    def _tile_loop(self, indent: str, pragma: str, call: str) -> list[str]:
        """One loop over the tiles of the domain (``tile`` per outer dimension, in row-major
        order) that runs ``call`` with ``tb``/``te`` set, under ``pragma``.

        One loop over the tiles' linear index rather than ``collapse`` of one loop per outer
        dimension: OpenMP's schedules split both the same way, but gcc's code for a
        collapsed nest (trip counts, empty-loop tests) costs more to build (ADR 0018).
        """
        outer = self.dims[:-1]
        lines = [
            f"{indent}const int64_t tiles_{d} = (hi_{d} - lo_{d} + tile[{i}] - 1) / tile[{i}];"
            for i, d in enumerate(outer)
        ]
        count = " * ".join(f"tiles_{d}" for d in outer) or "1"
        lines.append(f"{indent}{pragma}")
        lines.append(f"{indent}for (int64_t sf_t = 0; sf_t < {count}; ++sf_t) {{")
        body = indent + "    "
        if outer:
            lines.append(f"{body}int64_t sf_rest = sf_t; (void)sf_rest;")
        for i, d in reversed(list(enumerate(outer))):
            if i == 0:
                lines.append(f"{body}const int64_t tb_{d} = lo_{d} + sf_rest * tile[{i}];")
            else:
                lines.append(
                    f"{body}const int64_t tb_{d} = lo_{d} + sf_rest % tiles_{d} * tile[{i}]; "
                    f"sf_rest /= tiles_{d};"
                )
        starts = ", ".join(f"tb_{d}" for d in outer) or "0"
        ends = (
            ", ".join(
                f"(tb_{d} + tile[{i}] < hi_{d} ? tb_{d} + tile[{i}] : hi_{d})"
                for i, d in enumerate(outer)
            )
            or "0"
        )
        n_outer = max(1, len(outer))
        lines.append(f"{body}const int64_t tb[{n_outer}] = {{{starts}}}, te[{n_outer}] = {{{ends}}};")
        lines.append(f"{body}{call}")
        lines.append(f"{indent}}}")
        return lines

    def _allocate(self, temps: Sequence[_Temporary], indent: str) -> list[str]:
        """The thread's buffers of the temporaries, sized for one tile plus their extent, cut
        from its scratch block (``sf_block`` is NULL when out of memory)."""
        if not temps:
            return []
        lines = []
        for temp in temps:
            span = " * ".join(
                str(temp.slots) if d == temp.ring else self._width(temp, d) for d in temp.kept
            )
            lines.append(
                f"{indent}const size_t z_{temp.name} = sf_round64(sizeof({temp.ctype}) * {span});"
            )
        total = " + ".join(f"z_{t.name}" for t in temps)
        lines.append(f"{indent}int sf_owned;")
        lines.append(f"{indent}char* sf_block = sf_scratch({total}, &sf_owned);")
        offset = "0"
        for temp in temps:
            lines.append(
                f"{indent}{temp.ctype}* t_{temp.name} = "
                f"sf_block ? ({temp.ctype}*)(sf_block + {offset}) : NULL;"
            )
            offset = f"{offset} + z_{temp.name}" if offset != "0" else f"z_{temp.name}"
        return lines

    def _width(self, temp: _Temporary, dim: str) -> str:
        """The points of ``temp``'s buffer along ``dim`` (not its ring dimension): the
        tile's, or the domain's along the inner dimension, plus the temporary's reach."""
        grow = temp.extent[dim][1] - temp.extent[dim][0]
        if dim == self.dims[-1]:
            return f"(hi_{dim} - lo_{dim} + {grow})"
        return f"(tile[{self.dims.index(dim)}] + {grow})"

    def _release(self, temps: Sequence[_Temporary], indent: str) -> list[str]:
        return [f"{indent}if (sf_owned) sf_scratch_free(sf_block);"] if temps else []

    def _temporary_store(self, temp: _Temporary, shift: Offsets) -> _Emit:
        """Computes ``temp`` at the sweep position moved by ``shift`` into its buffer."""
        definition = self.definitions[temp.name]
        index = self._temp_index(temp, dict(shift))

        def store(body: ExpressionEmitter) -> list[str]:
            return [body.store(f"t_{temp.name}[{index}]", body.value(definition, shift))]

        return store

    def _store_outputs(self, body: ExpressionEmitter) -> list[str]:
        if not self.streamed:
            return output_stores(self.program, self.stencil, self.unit_stride, body)
        inner = self.dims[-1]
        stores = []
        for target, result in zip(self.stencil.outputs, self.stencil.results, strict=True):
            param = self.program.param(target.name)
            assert isinstance(param.type, FieldType) and result.type is not None
            value = convert(body.value(result, ()), result.type.dtype, param.type.dtype)
            if target.name in self.streamed:
                stores.append(f"w_{target.name}[x_{inner} - c_{inner}] = {value};")
            else:
                offset = element_offset(
                    target.name, param.type.dim_names, {}, self.unit_stride.get(target.name, False)
                )
                stores.append(f"p_{target.name}[{offset}] = {value};")
        return stores

    def _field_type(self, name: str) -> FieldType:
        field = self.program.param(name).type
        assert isinstance(field, FieldType)
        return field

    @property
    def _name(self) -> str:
        return f"sf_stencil_{self.index}"

    def _unpack(self) -> list[str]:
        lines = []
        written = {t.name for t in self.stencil.outputs}
        for param in self.program.params:
            if isinstance(param.type, ScalarType):
                lines.append(
                    f"    const {C_TYPES[param.type.dtype]} sc_{param.name} = a->sc_{param.name}; (void)sc_{param.name};"
                )
                continue
            const = "" if param.name in written else "const "
            ctype = C_TYPES[param.type.dtype]
            lines.append(
                f"    {const}{ctype}* restrict p_{param.name} = ({const}{ctype}*)a->p_{param.name}; (void)p_{param.name};"
            )
            for axis in range(len(param.type.dims)):
                lines.append(
                    f"    const int64_t s_{param.name}_{axis} = a->s_{param.name}[{axis}]; (void)s_{param.name}_{axis};"
                )
        return lines


def _loop_index(dim: str) -> str:
    """The loop variable of ``dim``: the point's index along it."""
    return f"x_{dim}"


def generate_stencil(
    site: StencilSite,
    *,
    temporaries: bool,
    tile_sizes: Sequence[int],
    parallel_min_points: int,
    prefetch_distance: int = 4,
    streaming_min_bytes: int | None = None,
    rows: bool = False,
    inner_extent: int | None = None,
) -> StencilCode:
    """The C function ``sf_stencil_<index>`` computing ``site``'s stencil over a domain.

    The function takes the argument struct and the domain (``lo``/``hi`` per iteration
    dimension) and returns 0, or -1 when a temporary could not be allocated.
    ``prefetch_distance``: how many sweep positions ahead rows are prefetched on the parallel
    path (0: no prefetching). ``streaming_min_bytes``: None, or the outputs' size over the
    domain from which the parallel path writes them with streaming stores (the outputs that
    are contiguous along the inner dimension and not read by the stencil). ``inner_extent``:
    None, or the domain's extent along the inner dimension, compiled in as a constant
    (``backends.c.specialization``; ``StencilCode.inner_extent`` tells the check to refuse
    any other).
    """
    return _StencilGenerator(
        site,
        temporaries=temporaries,
        tile_sizes=tile_sizes,
        parallel_min_points=parallel_min_points,
        prefetch_distance=prefetch_distance,
        streaming_min_bytes=streaming_min_bytes,
        rows=rows,
        inner_extent=inner_extent,
    ).generate()
