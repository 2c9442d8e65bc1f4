"""C for the sweep over a tile's outer points: the loops that run a ``TilePlan``'s
statements, their inner loops (chunked through row buffers for streamed outputs, or in
explicit vectors), and the rows they prefetch.

Where every statement is active, one inner loop computes them all, so values and loads
shared between statements stay in registers and the temporaries are read back while still
in L1; at the tile's edges each active statement has its own inner loop, in the edge
function (``tile_function``).

On the parallel path each sweep position also prefetches, some positions ahead along the
innermost outer dimension (into L1), or some rows ahead along the layout's ``prefetch_dim``
(into L2), the row of every field that the position touches first (the lexicographically
greatest access): rows are short (a K column), so the hardware prefetcher sees each stream
only briefly, and waiting for each new row from memory cost hdiff about a fifth of its time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs

from backends.c.tile_plan import Prefetch, Statement, Temporary, TileLayout, TilePlan
from backends.c.vectors import VECTOR_TYPE, VectorEmitter
from backends.clike.expressions import C_TYPES, ExpressionEmitter, Offsets

__all__ = ["STREAM_CHUNK", "Emit", "Reader", "SweepEmitter", "loop_index"]

#: Points of the inner dimension per chunk of a streamed output row (its stack buffer).
STREAM_CHUNK = 256

#: Emits one statement into a loop body: returns the statement's store lines.
Emit = Callable[[ExpressionEmitter], list[str]]

#: The C value of a name read at offsets, in a loop body.
Reader = Callable[[ExpressionEmitter, str, Offsets], str]


def loop_index(dim: str) -> str:
    """The loop variable of ``dim``: the point's index along it."""
    return f"x_{dim}"


@attrs.frozen
class SweepEmitter:
    """Writes the sweep of one stencil's tile.

    Attributes:
        layout: what the generator decided for the stencil.
        read: the C value of a name read at offsets in a loop body.
        store_outputs: the outputs' statement (the last of every plan).
    """

    layout: TileLayout
    read: Reader
    store_outputs: Emit

    def sweep(self, plan: TilePlan, indent: str) -> tuple[list[str], list[str], bool]:
        """Loops over the tile's outer points (plus reach) running the active statements,
        the body of the edge function (``[]``: none) and whether it stores a streamed
        output. Where a fused loop runs every statement, the positions at the tile's edges
        call ``<name>_edges`` for the loops of the statements active there."""
        statements, fusable = plan.statements, plan.fusable
        outer = self.layout.dims[:-1]
        first = {d: min(s.bounds[d][0] for s in statements) for d in outer}
        last = {d: max(s.bounds[d][1] for s in statements) for d in outer}
        # Where every statement is active: the tightest of their bounds, per outer dimension.
        inside = {
            d: (max(s.bounds[d][0] for s in statements), min(s.bounds[d][1] for s in statements))
            for d in outer
        }
        everywhere = " && ".join(_guard(inside, first, last))
        edges = fusable and bool(everywhere)
        # The edge function's loops are inside its loop over a run of positions.
        pad = indent + "    " * len(outer)
        separate, streams = self._separate_loops(
            statements, first, last, inside if edges else None, "        " if edges else pad
        )
        if edges:
            return self._edged_sweep(plan, indent, first, last, inside), separate, streams
        lines = [
            f"{indent}{'    ' * depth}for (int64_t x_{d} = tb_{d} + {first[d]}; "
            f"x_{d} < te_{d} + {last[d]}; ++x_{d}) {{"
            for depth, d in enumerate(outer)
        ]
        lines += self.prefetch_rows(plan.prefetches, pad)
        if not fusable:
            lines += separate
        else:
            lines += self._inner_loop((0, 0), [self._emit(s) for s in statements], pad)
        lines += [f"{indent}{'    ' * depth}}}" for depth in reversed(range(len(outer)))]
        return lines, [], False

    def _separate_loops(
        self,
        statements: Sequence[Statement],
        first: Mapping[str, int],
        last: Mapping[str, int],
        inside: Mapping[str, tuple[int, int]] | None,
        pad: str,
    ) -> tuple[list[str], bool]:
        """One inner loop per statement, each under the guard of where it is active, and
        whether one of them stores a streamed output. ``inside``: for the edge function,
        the bounds of the fused loop (None: there is none)."""
        lines: list[str] = []
        streams = False
        for statement in statements:
            if inside is not None and statement.bounds == inside:
                # Active only where the fused loop runs: never at the edges (gcc does not
                # see it, and would build the loop for nothing).
                continue
            guard = _guard(statement.bounds, first, last)
            streams |= bool(self.layout.streamed) and statement.temporary is None
            loop = self._inner_loop(
                statement.inner,
                [self._emit(statement)],
                pad + "    " * bool(guard),
                edge=inside is not None,
            )
            if guard:
                loop = [f"{pad}if ({' && '.join(guard)}) {{", *loop, f"{pad}}}"]
            lines += loop
        return lines, streams

    def _edged_sweep(
        self,
        plan: TilePlan,
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
        *others, r = self.layout.dims[:-1]
        lines = [
            f"{indent}{'    ' * depth}for (int64_t x_{d} = tb_{d} + {first[d]}; "
            f"x_{d} < te_{d} + {last[d]}; ++x_{d}) {{"
            for depth, d in enumerate(others)
        ]
        pad = indent + "    " * len(others)
        start, stop = f"tb_{r} + {first[r]}", f"te_{r} + {last[r]}"
        fused = self._fused_run(plan, pad, r, start, stop, first[r], last[r], inside[r])
        condition = " && ".join(_guard({d: inside[d] for d in others}, first, last))
        if condition:
            lines += [f"{pad}if ({condition}) {{", *fused, f"{pad}}} else {{"]
            lines += [f"{pad}    {self.edges_call(start, stop)}", f"{pad}}}"]
        else:
            lines += [f"{pad}{{", *fused, f"{pad}}}"]
        lines += [f"{indent}{'    ' * depth}}}" for depth in reversed(range(len(others)))]
        return lines

    def _fused_run(
        self,
        plan: TilePlan,
        pad: str,
        r: str,
        start: str,
        stop: str,
        first: int,
        last: int,
        inside: tuple[int, int],
    ) -> list[str]:
        """A row of positions ``[start, stop)`` along ``r``: the fused loop over its fused
        run, between the edge function's calls for the runs before and after it."""
        lower, upper = inside
        # The fused run [f_r, g_r), within [start, stop) even for a tile narrower than the
        # reach.
        low = f"tb_{r} + {lower}" if lower > first else start
        high = f"te_{r} + {upper}" if upper < last else stop
        fused = [
            f"{pad}    const int64_t f_{r} = {low} < {stop} ? {low} : {stop};",
            f"{pad}    const int64_t g_{r} = {high} > f_{r} ? {high} : f_{r};",
        ]
        if lower > first:
            fused.append(f"{pad}    if ({start} < f_{r}) {self.edges_call(start, f'f_{r}')}")
        fused.append(f"{pad}    for (int64_t x_{r} = f_{r}; x_{r} < g_{r}; ++x_{r}) {{")
        fused += self.prefetch_rows(plan.prefetches, pad + "        ")
        fused += self._inner_loop(
            (0, 0), [self._emit(s) for s in plan.statements], pad + "        "
        )
        fused.append(f"{pad}    }}")
        if upper < last:
            fused.append(f"{pad}    if (g_{r} < {stop}) {self.edges_call(f'g_{r}', stop)}")
        return fused

    def edges_call(self, start: str, stop: str) -> str:
        """The edge function's call for the positions ``[start, stop)`` of the run."""
        layout = self.layout
        positions = "".join(f", x_{d}" for d in layout.dims[:-2])
        streaming = ", nt" if layout.streamed else ""
        temps = "".join(f", t_{t.name}" for t in layout.temporaries.values())
        return (
            f"{layout.name}_edges(a, lo, hi, tile, tb, te, pf{positions}, {start}, {stop}"
            f"{streaming}{temps});"
        )

    def _emit(self, statement: Statement) -> Emit:
        """How ``statement`` is written into a loop body."""
        if statement.temporary is None:
            return self.store_outputs
        return self._temporary_store(statement.temporary, statement.shift)

    def _temporary_store(self, temp: Temporary, shift: Offsets) -> Emit:
        """Computes ``temp`` at the sweep position moved by ``shift`` into its buffer."""
        definition = self.layout.definitions[temp.name]
        index = temp.index(dict(shift))

        def store(body: ExpressionEmitter) -> list[str]:
            return [body.store(f"t_{temp.name}[{index}]", body.value(definition, shift))]

        return store

    def prefetch_bytes(self, prefetches: Sequence[Prefetch]) -> list[str]:
        """``pf_bytes``: how much of each row to prefetch; one cache line unless the caller
        asks (``pf``).

        The sweep's prefetch loops are ``do``/``while`` loops up to this bound: under an
        ``if (pf)``, or behind a ``for`` loop's entry test, gcc unswitches the whole sweep on
        the condition and builds it twice (+0.3 s for hdiff). A line of data that is in cache
        already costs a prefetch next to nothing.
        """
        inner = self.layout.dims[-1]
        sizes = [f"(int64_t)sizeof(*p_{prefetch.field})" for prefetch in prefetches]
        widest = sizes[0] if sizes else "0"
        for size in sizes[1:]:
            widest = f"({widest} > {size} ? {widest} : {size})"
        return [f"    const int64_t pf_bytes = pf ? (hi_{inner} - lo_{inner}) * {widest} : 0;"]

    def prefetch_rows(self, prefetches: Sequence[Prefetch], indent: str) -> list[str]:
        """Prefetch each row ``prefetch_distance`` positions ahead along the layout's
        ``prefetch_dim`` (else the innermost outer dimension), ``pf_bytes`` of it.

        Addresses are computed as integers: a row ahead may lie outside the array (past the
        tile, past the domain), which a prefetch tolerates and C pointer arithmetic does not.
        """
        if not prefetches:
            return []
        layout = self.layout
        outer, inner = layout.dims[:-1], layout.dims[-1]
        lines = [f"{indent}{{"]
        along = layout.prefetch_dim or outer[-1]
        for number, prefetch in enumerate(prefetches):
            terms = []
            for axis, dim in enumerate(layout.field_type(prefetch.field).dim_names[:-1]):
                # The serial path (pf == 0) touches the row it is about to read: a line in
                # the cache, where a row ahead could be past the array (a page walk).
                ahead = f"{prefetch.offsets.get(dim, 0)}"
                if dim == along:
                    ahead += f" + {layout.prefetch_distance} * pf"
                terms.append(f"(x_{dim} + {ahead}) * s_{prefetch.field}_{axis}")
            terms.append(f"lo_{inner}")
            lines.append(
                f"{indent}    const uintptr_t r{number} = (uintptr_t)p_{prefetch.field} + "
                f"(uintptr_t)(({' + '.join(terms)}) * (int64_t)sizeof(*p_{prefetch.field}));"
            )
        # Rows ahead along the outermost dimension are needed later than positions ahead
        # along the innermost: into L2 (prefetcht1), not to displace L1's rows in use.
        locality = 2 if layout.prefetch_dim else 3
        lines += [f"{indent}    int64_t q = 0;", f"{indent}    do {{"]
        for number, prefetch in enumerate(prefetches):
            lines.append(
                f"{indent}        __builtin_prefetch((const void*)(r{number} + (uintptr_t)q), "
                f"{int(prefetch.write)}, {locality});"
            )
        lines += [f"{indent}        q += 64;", f"{indent}    }} while (q < pf_bytes);", f"{indent}}}"]
        return lines

    def _inner_loop(
        self, reach: tuple[int, int], emits: Sequence[Emit], indent: str, edge: bool = False
    ) -> list[str]:
        """One inner-dimension loop computing ``emits`` in order at every point; with
        streamed outputs among them, in chunks of ``STREAM_CHUNK`` points, each chunk's
        output rows written out of their buffers after its loop when ``nt`` (else computed
        in place). ``edge``: the loop runs only at the tile's edges, beside a fused loop
        (see ``_simd_loop``)."""
        layout = self.layout
        inner = layout.dims[-1]
        start, stop = f"lo_{inner} + {reach[0]}", f"hi_{inner} + {reach[1]}"
        if layout.vectorized and self.store_outputs in emits and not edge and reach == (0, 0):
            return self._vector_loop(emits, indent)
        if layout.streamed and self.store_outputs in emits:
            return self._chunked_loop(reach, start, stop, emits, indent, edge)
        return self._simd_loop(start, stop, emits, indent, edge)

    def _chunked_loop(
        self,
        reach: tuple[int, int],
        start: str,
        stop: str,
        emits: Sequence[Emit],
        indent: str,
        edge: bool,
    ) -> list[str]:
        """The inner loop over ``[start, stop)`` in chunks of ``STREAM_CHUNK`` points, each
        computed into the streamed outputs' row buffers (``nt``) or in place."""
        layout = self.layout
        inner = layout.dims[-1]
        extent = layout.inner_extent
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
            f"{indent}    {C_TYPES[layout.field_type(name).dtype]}* restrict w_{name} = "
            f"nt ? o_{name} : p_{name} + {self._row_offset(name)};"
            for name in layout.streamed
        ]
        loop = self._simd_loop(f"c_{inner}", f"e_{inner}", emits, indent + "    ", edge)
        writes = [
            f"{indent}    if (nt) sf_stream_row(p_{name} + "
            f"{self._row_offset(name)}, o_{name}, "
            f"(e_{inner} - c_{inner}) * (int64_t)sizeof(*p_{name}), 1);"
            for name in layout.streamed
        ]
        return [*outer_lines, *targets, *loop, *writes, f"{indent}}}"]

    def _vector_loop(self, emits: Sequence[Emit], indent: str) -> list[str]:
        """The inner loop over the domain computing ``emits`` a vector of points at a time
        (``VectorEmitter``), each output vector stored straight to its row, past the caches
        when ``nt`` and the row is aligned to a vector.

        A streamed row off a vector boundary (NumPy's own large arrays start 16 bytes past
        one) goes through the tile's row buffer when it fits (``b_<name>``): the loop
        stores the row there, in cache, and ``sf_stream_row`` streams it out. Only the
        pointer differs, so the loop is the same on aligned rows. (Joining neighbouring
        vectors into aligned ones inside the loop instead made hdiff 15 % slower on
        aligned rows on the Zen 3 VM: ADR 0009.)"""
        layout = self.layout
        inner = layout.dims[-1]
        buffered = layout.inner_extent is not None and layout.inner_extent <= STREAM_CHUNK
        lines = [f"{indent}{{", f"{indent}    const int64_t c_{inner} = lo_{inner};"]
        for name in layout.streamed:
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
        body = VectorEmitter(self.read, layout.definitions, indent + "        ")
        for emit in emits:
            emitted = len(body.lines)
            stores = (self._put_outputs if emit == self.store_outputs else emit)(body)
            lines += body.lines[emitted:]
            lines += [indent + "        " + store for store in stores]
        lines.append(f"{indent}    }}")
        for name in layout.streamed if buffered else ():
            lines.append(
                f"{indent}    if (b_{name}) sf_stream_row(r_{name}, o_{name}, "
                f"(hi_{inner} - lo_{inner}) * (int64_t)sizeof(double), 1);"
            )
        lines.append(f"{indent}}}")
        return lines

    def _put_outputs(self, body: ExpressionEmitter) -> list[str]:
        """The vector loop's output stores (every output is streamed there)."""
        assert isinstance(body, VectorEmitter)
        stencil, inner = self.layout.stencil, self.layout.dims[-1]
        return [
            f"sf_vput(&w_{target.name}[x_{inner} - c_{inner}], "
            f"{body.vector(body.value(result, ()))}, nt_{target.name});"
            for target, result in zip(stencil.outputs, stencil.results, strict=True)
        ]

    def _row_offset(self, name: str) -> str:
        """The offset of streamed output ``name`` at the sweep position, chunk start."""
        dims = self.layout.dims
        terms = [f"x_{d} * s_{name}_{axis}" for axis, d in enumerate(dims[:-1])]
        return "(" + " + ".join([*terms, f"c_{dims[-1]}"]) + ")"

    def _simd_loop(
        self, start: str, stop: str, emits: Sequence[Emit], indent: str, edge: bool = False
    ) -> list[str]:
        inner = self.layout.dims[-1]
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
        body = ExpressionEmitter(self.read, indent + "    ", index=loop_index)
        for emit in emits:
            # Each statement's stores precede the next statement's loads, which may read them.
            emitted = len(body.lines)
            stores = emit(body)
            lines += body.lines[emitted:]
            lines += [indent + "    " + store for store in stores]
        lines.append(f"{indent}}}")
        return lines


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
