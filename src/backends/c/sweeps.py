"""IR -> C for stencils that run scans: passes along the scan's axis over column blocks.

A scan's value at a point depends on every point before it along the axis, so the axis is
swept in order, while the other dimensions stay independent: the outer ones are shared among
OpenMP threads, and the innermost other dimension is cut into blocks whose points are the
vector loop inside each step, with the carry of each point in a per-thread array::

    for x_P, block of x_V (parallel):           # the other dimensions
        for each pass (backends.loops.plan_sweeps), in its direction along the axis:
            carry[v] = init                       # for every v of the block
            for each chunk of eight levels (first pass; one chunk of all levels after):
                (first pass) copy those levels of column v of each field read only along
                    the axis into g[axis][v]      (backends.c.sweep_columns; each piece
                                                   copied first asks for a few lines of
                                                   the next block's columns into L2)
                for x_K in the chunk (sequential):
                    for x_V in the block (omp simd):
                        point values -> new carry; kept[x_K][v] = new carry, for later
                        passes; (last pass) outputs, into o[x_K][v] where the output is
                        contiguous along the axis
        for v in the block: copy o[.][v] out to the output's column (streaming stores
            when the output is larger than half the last-level cache)

A field operator solving a tridiagonal system (a forward sweep, then a backward one that
reads it) is one stencil: the forward results stay in the block's buffers, in cache, and
only the inputs and the solution cross the memory bus. Locals are computed inline at each
step (no temporaries: a sweep has no tiles to fill them over). A stencil whose outputs span
only the axis runs one column, on one thread.

The block's buffers are rows of ``block + ROW_PAD`` points, cut from the thread's scratch
block (``scratch.SCRATCH_C``); a field only the first pass reads needs one chunk's rows. Where
the fields' columns cannot go through the transposes (not all float64, or fewer than eight
levels known at compile time), every level is copied in before the passes, with no chunks
and nothing asked for ahead. ADR 0014 records the measurements behind the layout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from backends.c.codegen import _StencilGenerator
from backends.c.scratch import SCRATCH_C, agree_on_blocks
from backends.c.stencil_code import StencilCode
from backends.c.streaming import STREAM_FENCE_C, STREAM_STORES_C
from backends.c.sweep_ahead import AHEAD_C, Ahead, Asking
from backends.c.sweep_blocks import BLOCKS, ROW_PAD, choose_block, rows_read
from backends.c.sweep_columns import (
    COLUMNS_IN_C,
    PREFETCH_COLUMN_C,
    Column,
    copy_in,
    copy_in_chunk,
    copy_out,
    prefetch_next,
    transposable,
)
from backends.c.sweep_fields import buffered_fields, column_offset, fields_ahead, staged_outputs
from backends.clike.expressions import C_TYPES, ExpressionEmitter, PassStorage, convert, literal
from backends.clike.generator import StencilSite
from backends.loops import SweepKey, SweepPlan, plan_sweeps
from pipeline.dsl.ir.nodes import Scan
from pipeline.dsl.types import FieldType, float64

__all__ = ["generate_sweep"]

@attrs.frozen
class _Frame:
    """Where a stencil's sweep runs and how its scans are numbered.

    Attributes:
        plan: the stencil's passes (``backends.loops.plan_sweeps``).
        axis: the scan axis, swept in order.
        vector: the innermost other dimension, cut into blocks whose points are the vector
            loop inside each step (None: the outputs span only the axis).
        parallel: the other dimensions, shared among OpenMP threads.
        slot: a point's index in a block's carry arrays.
        kept: a point's index in a block's buffers (``[axis][vector]``).
        keys: the scans, in the order of their passes.
        numbers: each scan's number, its carries' name (``c<n>_<i>``).
    """

    plan: SweepPlan
    axis: str
    vector: str | None
    parallel: tuple[str, ...]
    slot: str
    kept: str
    keys: tuple[SweepKey, ...]
    numbers: Mapping[SweepKey, int]

    @property
    def last(self) -> int:
        """The last pass, which stores the outputs."""
        return len(self.plan.phases) - 1

    @property
    def loop_indent(self) -> str:
        """The indentation inside the loops over the parallel dimensions and blocks."""
        return "            " + "    " * (len(self.parallel) + (1 if self.vector else 0))


class _SweepGenerator(_StencilGenerator):
    block = BLOCKS[0]  # set per stencil by generate_sweep
    stream_min_bytes: int | None = None  # set per stencil by generate_sweep
    prefetch_next = False  # set per stencil by generate_sweep
    # The domain's innermost extent when fixed at compile time (set by generate_sweep; not
    # the base's inner_extent, which would make the bindings check it).
    fixed_inner: int | None = None
    # Fields copied per block into [axis][vector] buffers: name -> (lower, upper) reach along
    # the axis. Set by generate().
    buffered: dict[str, tuple[int, int]] = {}  # noqa: RUF012
    # Outputs written into a block buffer o_<name>[axis][vector] by the last pass and copied
    # out column by column after it. Set by generate().
    staged: frozenset[str] = frozenset()
    # Whether the copy-in goes eight levels at a time, interleaved with the first pass
    # (``_interleaves``), asking for the next block's columns as it goes; and the buffered
    # fields only that pass reads, whose buffers then hold one chunk of levels. Set by
    # generate().
    interleaved = False
    chunked: frozenset[str] = frozenset()
    transpose = True
    # While generate() writes the passes' steps: the pass being written, and the passes each
    # buffered field was read in.
    _phase = 0
    _readers: dict[str, set[int]] = {}  # noqa: RUF012
    _axis = ""
    _vector: str | None = None
    _kept = "0"

    @property
    def row(self) -> int:
        """Points from one row of a block buffer to the next (one step along the axis)."""
        return self.block + ROW_PAD

    def read(self, body: ExpressionEmitter, name: str, offsets: tuple[tuple[str, int], ...]) -> str:
        if name in self.buffered and name not in self.definitions:
            self._readers.setdefault(name, set()).add(self._phase)
            lower, _ = self.buffered[name]
            shift = dict(offsets).get(self._axis, 0)
            chunk = " - sf_t" if name in self.chunked else ""
            index = (
                f"(x_{self._axis} + ({shift}) - lo_{self._axis} - ({lower}){chunk}) * {self.row}"
                f" + (x_{self._vector} - b_{self._vector})"
            )
            param = self.program.param(name)
            return body.let(C_TYPES[param.type.dtype], f"g_{name}[{index}]")
        return super().read(body, name, offsets)

    def _store_outputs(self, body: ExpressionEmitter) -> list[str]:
        stores = []
        plain = super()._store_outputs(body)
        for target, result, store in zip(
            self.stencil.outputs, self.stencil.results, plain, strict=True
        ):
            if target.name not in self.staged:
                stores.append(store)
                continue
            param = self.program.param(target.name)
            assert isinstance(param.type, FieldType) and result.type is not None
            value = convert(body.value(result, ()), result.type.dtype, param.type.dtype)
            stores.append(f"o_{target.name}[{self._kept}] = {value};")
        return stores

    def _column(self, name: str, axis: str, vector: str, start: str) -> str:
        """``sweep_fields.column_offset`` of field ``name`` in this program."""
        return column_offset(self.program, name, axis, vector, start)

    def _copy_in(self, axis: str, vector: str, indent: str) -> list[str]:
        """Every level of the block's columns of every buffered field, copied in before the
        passes (where the copy-in is not interleaved with the first pass)."""
        columns = self._columns(axis, vector)
        return copy_in(columns, f"e_{vector} - b_{vector}", self.row, indent)

    def _interleaves(self, axis: str, vector: str) -> bool:
        """Whether the copy-in goes a chunk of eight levels at a time before the first pass's
        steps over them, eight columns at a time through transposes where the compiler allows
        (``sweep_columns``): for float64 fields, on domains that may have eight levels. Where
        fewer are fixed at compile time, the whole columns are copied first: the transposes'
        code, inlined and unused, would cost the small domain (4 % of the vertical
        advection's six levels)."""
        known = self.fixed_inner if self.dims[-1] == axis else None
        return (known is None or known >= 8) and transposable(self._columns(axis, vector))

    def _ahead_columns(self, axis: str, vector: str) -> list[Ahead]:
        """``sweep_fields.fields_ahead`` of this stencil."""
        fields = (self.program, self.stencil, self.buffered, self.unit_stride)
        return fields_ahead(*fields, axis, vector)

    def _columns(self, axis: str, vector: str, *, chunk: bool = False) -> list[Column]:
        """The buffered fields' columns from their reach's lower end on, or with ``chunk`` from
        chunk ``sf_t``'s: a chunked field's chunk starts its buffer, another field's goes to
        its row of the buffer."""
        columns = []
        for name, (lower, upper) in self.buffered.items():
            param = self.program.param(name)
            assert isinstance(param.type, FieldType)
            bottom = f"lo_{axis} + ({lower})"
            first = f"({bottom} + sf_t)" if chunk else f"({bottom})"
            start = self._column(name, axis, vector, first)
            stride = f"s_{name}_{param.type.dim_names.index(vector)}"
            buffer = (
                f"(g_{name} + sf_t * {self.row})"
                if chunk and name not in self.chunked
                else f"g_{name}"
            )
            ctype = C_TYPES[param.type.dtype]
            columns.append(Column(name, ctype, start, stride, upper - lower, buffer))
        return columns

    def _copy_out(self, axis: str, vector: str, indent: str) -> list[str]:
        """The staged outputs' block buffers, out to their columns."""
        lines = []
        count = f"e_{vector} - b_{vector}"
        for target in self.stencil.outputs:
            if target.name in self.staged:
                start = self._column(target.name, axis, vector, f"lo_{axis}")
                dtype = self.program.param(target.name).type.dtype
                lines += copy_out(target.name, dtype, start, count, self.row, indent)
        return lines

    def generate(self) -> StencilCode:
        plan = plan_sweeps(self.stencil)
        assert plan is not None
        frame = self._frame(plan)
        self._axis, self._vector, self._kept = frame.axis, frame.vector, frame.kept
        vector = frame.vector
        blocks = vector is not None and self.transpose
        args = (self.program, self.stencil, self.unit_stride)
        self.buffered = buffered_fields(*args, frame.axis, vector) if blocks and vector else {}
        self.staged = staged_outputs(*args, self.dims, frame.axis) if blocks else frozenset()
        self.interleaved = vector is not None and self._interleaves(frame.axis, vector)
        self.chunked, self._readers = frozenset(), {}
        passes = self._passes(frame)
        if self.interleaved:
            # Writing the steps told which fields only the first pass reads (``read``): their
            # buffers hold a chunk, so the steps, written again, index them from its start.
            self.chunked = frozenset(n for n, phases in self._readers.items() if phases == {0})
            passes = self._passes(frame)
        buffers = self._buffers(frame)
        name = f"sf_stencil_{self.index}"
        signature = (
            f'__attribute__((visibility("hidden"))) int {name}'
            "(const sf_args* restrict a, const int64_t* lo, const int64_t* hi)"
        )
        lines = [f"{signature} {{", *self._prologue(frame)]
        lines += [f"    #pragma omp parallel if ({self._threaded(frame)})", "    {"]
        lines += self._thread_buffers(buffers)
        lines += self._blocks(frame, passes)
        lines.append("        }")
        lines += [
            "        if (sf_owned) sf_scratch_free(sf_block);",
            "    }",
            "    return failed ? -1 : 0;",
            "}",
        ]
        helpers: tuple[str, ...] = (
            (SCRATCH_C, STREAM_FENCE_C, STREAM_STORES_C) if self.staged else (SCRATCH_C,)
        )
        if self.prefetch_next and self.buffered and frame.vector and not self.interleaved:
            helpers += (PREFETCH_COLUMN_C,)
        if self.interleaved:
            helpers += (AHEAD_C, COLUMNS_IN_C)
        return StencilCode(name, signature, "\n".join(lines), self.dims, helpers)

    def _passes(self, frame: _Frame) -> list[tuple[bool, list[str], list[str]]]:
        """Each pass's direction, and the body and stores of its step (``_pass_steps``)."""
        return [
            self._pass_steps(frame, phase, forward, phase_keys)
            for phase, (forward, phase_keys) in enumerate(frame.plan.phases)
        ]

    def _frame(self, plan: SweepPlan) -> _Frame:
        """Where the sweep runs: the scan axis, the vector dimension, the parallel ones."""
        axis = plan.axis
        others = tuple(d for d in self.dims if d != axis)
        vector = others[-1] if others else None
        slot = f"x_{vector} - b_{vector}" if vector else "0"
        keys = [key for _, phase in plan.phases for key in phase]
        return _Frame(
            plan=plan,
            axis=axis,
            vector=vector,
            parallel=others[:-1],
            slot=slot,
            kept=f"(x_{axis} - lo_{axis}) * {self.row} + {slot}",
            keys=tuple(keys),
            numbers={key: n for n, key in enumerate(keys)},
        )

    def _pass_steps(
        self, frame: _Frame, phase: int, forward: bool, phase_keys: Sequence[SweepKey]
    ) -> tuple[bool, list[str], list[str]]:
        """One pass's direction, and the body and stores of its step at a point: the new
        carries (kept for later passes), and on the last pass the outputs."""
        plan, numbers, slot, kept = frame.plan, frame.numbers, frame.slot, frame.kept
        last = frame.last
        self._phase = phase
        storage = PassStorage(plan, phase, numbers, kept, carry_index=slot)
        body = ExpressionEmitter(
            self.read, frame.loop_indent + "        ", scans=storage, index=lambda dim: f"x_{dim}"
        )
        for key in phase_keys:
            body.sweep(Scan(key[0], key[1]))
        stores = self._store_outputs(body) if phase == last else []
        stores += storage.stores(body.sweeps)
        return forward, body.lines, stores

    def _buffers(self, frame: _Frame) -> list[tuple[str, str, str]]:
        """The thread's buffers: (name, C type, elements): the carries, the buffered fields'
        columns, the carries kept for later passes and the staged outputs."""
        carries = [
            (n, i, C_TYPES[param.type.dtype], key[0].init[i])
            for key, n in frame.numbers.items()
            for i, param in enumerate(key[0].carry)
        ]
        buffers = [(f"c{n}_{i}", ctype, str(self.block)) for n, i, ctype, _ in carries]
        for field, (lower, upper) in self.buffered.items():
            ctype = C_TYPES[self.program.param(field).type.dtype]
            levels = "8" if field in self.chunked else "sf_levels"
            buffers.append((f"g_{field}", ctype, f"{self.row} * ({levels} + {upper - lower})"))
        buffers += [
            (f"k{n}_{i}", ctype, f"{self.row} * sf_levels")
            for n, i, ctype, _ in carries
            if frame.plan.phase_of(frame.keys[n]) < frame.last
        ]
        for target in self.stencil.outputs:
            if target.name in self.staged:
                ctype = C_TYPES[self.program.param(target.name).type.dtype]
                buffers.append((f"o_{target.name}", ctype, f"{self.row} * sf_levels"))
        return buffers

    def _points(self) -> str:
        return " * ".join(f"(hi_{d} - lo_{d})" for d in self.dims)

    def _threaded(self, frame: _Frame) -> str:
        """The condition for running on OpenMP threads: a large domain with more than a
        column."""
        return f"{self._points()} >= {self.parallel_min_points}" if frame.vector else "0"

    def _prologue(self, frame: _Frame) -> list[str]:
        """The domain's bounds, the unpacked arguments, the levels along the axis and, per
        staged output, whether it is streamed."""
        axis = frame.axis
        lines = [
            f"    const int64_t lo_{d} = lo[{i}], hi_{d} = hi[{i}];"
            for i, d in enumerate(self.dims)
        ]
        lines += self._unpack()
        lines += [
            "    int failed = 0;",
            f"    const size_t sf_levels = (size_t)(hi_{axis} - lo_{axis});",
        ]
        for target in self.stencil.outputs:
            if target.name in self.staged:
                ctype = C_TYPES[self.program.param(target.name).type.dtype]
                streams = (
                    "0"
                    if self.stream_min_bytes is None
                    else f"(size_t)({self._points()}) * sizeof({ctype}) >= "
                    f"(size_t){self.stream_min_bytes}LL"
                )
                lines.append(f"    const int st_{target.name} = {streams}; (void)st_{target.name};")
        return lines

    @staticmethod
    def _thread_buffers(buffers: Sequence[tuple[str, str, str]]) -> list[str]:
        """``buffers`` cut from the thread's scratch block, and the threads' agreement on
        whether every one got its block (the work-sharing loop follows, if so)."""
        lines = [
            f"        const size_t z_{buffer} = sf_round64(sizeof({ctype}) * {count});"
            for buffer, ctype, count in buffers
        ]
        total = " + ".join(f"z_{buffer}" for buffer, _, _ in buffers) or "0"
        lines += [
            "        int sf_owned;",
            f"        char* sf_block = sf_scratch({total}, &sf_owned);",
        ]
        offset = "0"
        for buffer, ctype, _ in buffers:
            lines.append(
                f"        {ctype}* restrict {buffer} = "
                f"sf_block ? ({ctype}*)(sf_block + {offset}) : NULL;"
            )
            offset = f"z_{buffer}" if offset == "0" else f"{offset} + z_{buffer}"
        return lines + agree_on_blocks("        ", "sf_block == NULL")

    def _blocks(
        self, frame: _Frame, passes: Sequence[tuple[bool, list[str], list[str]]]
    ) -> list[str]:
        """The work-sharing loops over the parallel dimensions and the blocks of the vector
        dimension, each block's columns copied in, its passes, its outputs copied out."""
        axis, vector, loop_indent = frame.axis, frame.vector, frame.loop_indent
        outer = "            "
        loops = [
            f"for (int64_t x_{d} = lo_{d}; x_{d} < hi_{d}; ++x_{d}) {{" for d in frame.parallel
        ]
        if vector:
            loops.append(
                f"for (int64_t b_{vector} = lo_{vector}; b_{vector} < hi_{vector}; "
                f"b_{vector} += {self.block}) {{"
            )
        lines = []
        if loops:
            lines.append(f"{outer}#pragma omp for collapse({len(loops)}) schedule(static)")
        lines += [f"{outer}{'    ' * depth}{loop}" for depth, loop in enumerate(loops)]
        if vector:
            lines.append(
                f"{loop_indent}const int64_t e_{vector} = b_{vector} + {self.block} < hi_{vector} "
                f"? b_{vector} + {self.block} : hi_{vector};"
            )
            if not self.interleaved:
                lines += self._copy_in(axis, vector, loop_indent)
        for phase, (forward, body_lines, stores) in enumerate(passes):
            lines += self._pass(
                frame.plan, phase, frame.numbers, forward, body_lines, stores, axis, vector,
                loop_indent,
            )
        if vector:
            lines += self._copy_out(axis, vector, loop_indent)
        lines += [f"{outer}{'    ' * depth}}}" for depth in reversed(range(len(loops)))]
        if self.staged:
            # Non-temporal stores are weakly ordered: drained before the caller reads them.
            lines.append("            sf_stream_fence();")
        return lines

    def _pass(
        self,
        plan: SweepPlan,
        phase: int,
        numbers: Mapping[SweepKey, int],
        forward: bool,
        body_lines: list[str],
        stores: list[str],
        axis: str,
        vector: str | None,
        indent: str,
    ) -> list[str]:
        """One pass over the block: its carries set to their initial values, then its steps
        along the axis."""
        outer, inner = indent, indent + "    "
        count = f"e_{vector} - b_{vector}" if vector else "1"
        lines = [f"{indent}for (int64_t v = 0; v < {count}; ++v) {{"]
        for key in plan.phases[phase][1]:
            for i, param in enumerate(key[0].carry):
                ctype = C_TYPES[param.type.dtype]
                init = _init_text(key[0].init[i])
                lines.append(f"{indent}    c{numbers[key]}_{i}[v] = ({ctype}){init};")
        lines.append(f"{indent}}}")
        steps = (f"lo_{axis}", f"hi_{axis}")
        chunked = bool(vector) and phase == 0 and self.interleaved
        if chunked:
            assert vector
            lines += self._chunks(forward, axis, vector, indent)
            indent, inner = inner, inner + "    "
            steps = (f"lo_{axis} + sf_t", f"lo_{axis} + sf_t + sf_n")
        if forward:
            lines.append(
                f"{indent}for (int64_t x_{axis} = {steps[0]}; x_{axis} < {steps[1]}; ++x_{axis}) {{"
            )
        else:
            lines.append(
                f"{indent}for (int64_t x_{axis} = {steps[1]} - 1; x_{axis} >= {steps[0]}; "
                f"--x_{axis}) {{"
            )
        step = f"x_{axis} - lo_{axis}" if forward else f"hi_{axis} - 1 - x_{axis}"
        if vector and phase == 0 and self.prefetch_next and not self.interleaved:
            columns = self._columns(axis, vector)
            lines += prefetch_next(columns, f"e_{vector} - b_{vector}", step, inner)
        if vector:
            lines.append(f"{inner}#pragma omp simd")
            lines.append(
                f"{inner}for (int64_t x_{vector} = b_{vector}; x_{vector} < e_{vector}; "
                f"++x_{vector}) {{"
            )
        else:
            lines.append(f"{inner}{{")
        lines += [f"    {line}" for line in body_lines] if chunked else body_lines
        lines += [f"{inner}    {store}" for store in stores]
        lines.append(f"{inner}}}")
        lines.append(f"{indent}}}")
        if chunked:
            lines.append(f"{outer}}}")
        return lines

    def _chunks(self, forward: bool, axis: str, vector: str, indent: str) -> list[str]:
        """The loop over the first pass's chunks of eight levels (the last may have fewer),
        in the pass's direction, each chunk's columns copied in before its steps, every
        piece copied asking for lines of the next block's columns as it goes
        (``sweep_ahead``)."""
        inner = indent + "    "
        order = "sf_c" if forward else "sf_chunks - 1 - sf_c"
        count = f"e_{vector} - b_{vector}"
        columns = self._columns(axis, vector, chunk=True)
        asking = Asking(tuple(self._ahead_columns(axis, vector)), tuple(c.name for c in columns))
        return [
            f"{indent}const int64_t sf_chunks = ((int64_t)sf_levels + 7) / 8;",
            f"{indent}const int sf_ahead = {self._points()} >= {self.parallel_min_points};",
            *asking.declarations(count, indent),
            f"{indent}for (int64_t sf_c = 0; sf_c < sf_chunks; ++sf_c) {{",
            f"{inner}const int64_t sf_t = 8 * ({order});",
            f"{inner}const int64_t sf_n = (int64_t)sf_levels - sf_t < 8 ? "
            "(int64_t)sf_levels - sf_t : 8;",
            *copy_in_chunk(columns, count, self.row, inner, asking=asking),
        ]


def _init_text(value: bool | int | float) -> str:
    """C text of an initial carry value (cast to the carry's type by the caller)."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return f"{value}LL"
    return literal(value, float64)


def generate_sweep(
    site: StencilSite,
    *,
    parallel_min_points: int,
    block: int | None = None,
    l1_bytes: int = 32 * 1024,
    streaming_min_bytes: int | None = None,
    prefetch_next: bool = False,
    inner_extent: int | None = None,
) -> StencilCode:
    """The C function ``sf_stencil_<index>`` computing ``site``'s stencil, which runs scans,
    over a domain (the same signature and return value as ``codegen.generate_stencil``'s), with
    ``block`` points of the vector dimension per block (None: ``choose_block`` for the rows
    the stencil reads and an L1 data cache of ``l1_bytes``). Outputs of at least
    ``streaming_min_bytes`` over the domain (None: none) are written with non-temporal
    stores. With ``prefetch_next``, the first pass prefetches the columns after each block
    into L2 while it computes (``_prefetch_next``). ``inner_extent``: the domain's extent
    along its innermost dimension when the compile-time arguments fix it (None: a runtime
    value); where that is the axis, fewer than eight levels leave out the chunked copy-in,
    its transposes and the next block's prefetches (``sweep_columns``), and ``prefetch_next``
    applies only there. The translation unit defines the returned code's ``helpers`` before
    it."""
    generator = _SweepGenerator(
        site,
        temporaries=False,
        tile_sizes=(1,),
        parallel_min_points=parallel_min_points,
        prefetch_distance=0,
    )
    rows = rows_read(site.program, site.stencil)
    generator.block = block if block is not None else choose_block(rows, l1_bytes)
    generator.stream_min_bytes = streaming_min_bytes
    generator.prefetch_next = prefetch_next
    generator.fixed_inner = inner_extent
    code = generator.generate()
    how = (
        "given" if block is not None else f"chosen: {rows} rows a step, L1d {l1_bytes // 1024} KiB"
    )
    prefetch = ", the next block prefetched" if prefetch_next else ""
    note = f"/* sweep block: {generator.block} points ({how}){prefetch} */"
    return attrs.evolve(code, text=f"{note}\n{code.text}")
