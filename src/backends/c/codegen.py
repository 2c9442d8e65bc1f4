"""IR -> C loop nests, one function per stencil.

Each stencil iterates over its output domain with the output's last dimension innermost (the
contiguous one in C order) and no branch in the inner loop: every expression becomes a
``const`` SSA value, ``where`` a select on values computed unconditionally, so gcc can
vectorize. The outer dimensions are cut into tiles, distributed by OpenMP. Locals that are
read at shifted positions become *temporaries*: computed once per tile over the tile plus
their extent into a per-thread buffer, instead of being recomputed at every use (with
``temporaries=False`` they are recomputed inline).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from backends.c.expressions import C_TYPES, ExpressionEmitter, Offsets, convert
from backends.loops import StencilLayout
from pipeline.dsl.types import FieldType, ScalarType
from pipeline.ir.nodes import ProgramIR, Stencil

__all__ = ["StencilCode", "generate_stencil"]


@attrs.frozen
class StencilCode:
    """The C function of one stencil and what the bindings need to call it."""

    name: str
    text: str
    iteration_dims: tuple[str, ...]


@attrs.frozen
class _Temporary:
    name: str
    ctype: str
    extent: Mapping[str, tuple[int, int]]


class _StencilGenerator:
    def __init__(
        self,
        program: ProgramIR,
        stencil: Stencil,
        index: int,
        *,
        unit_stride: Mapping[str, bool],
        temporaries: bool,
        tile_sizes: Sequence[int],
        parallel_min_points: int,
    ) -> None:
        self.program = program
        self.stencil = stencil
        self.index = index
        self.unit_stride = unit_stride
        self.tile_sizes = tuple(tile_sizes)
        self.parallel_min_points = parallel_min_points
        self.counter = 0
        layout = StencilLayout.of(program, stencil, temporaries=temporaries)
        self.dims = layout.dims
        self.definitions = dict(layout.definitions)
        self.temporaries: dict[str, _Temporary] = {}
        for name, extent in layout.temporaries.items():
            local_type = self.definitions[name].type
            assert local_type is not None
            self.temporaries[name] = _Temporary(name, C_TYPES[local_type.dtype], extent)

    def next_id(self) -> int:
        self.counter += 1
        return self.counter

    # -- reads ------------------------------------------------------------------------------
    def read(self, body: ExpressionEmitter, name: str, offsets: Offsets) -> str:
        shift = dict(offsets)
        if name in self.temporaries:
            temp = self.temporaries[name]
            index = self._temp_index(temp, shift)
            return body.let(temp.ctype, f"t_{name}[{index}]")
        if name in self.definitions:
            return body.value(self.definitions[name], offsets)
        param = self.program.param(name)
        if isinstance(param.type, ScalarType):
            return f"sc_{name}"
        dims = param.type.dim_names
        terms = []
        for axis, dim in enumerate(dims):
            position = f"(x_{dim} + {shift[dim]})" if shift.get(dim) else f"x_{dim}"
            last = axis == len(dims) - 1
            terms.append(
                position
                if last and self.unit_stride.get(name, False)
                else f"{position} * s_{name}_{axis}"
            )
        return body.let(C_TYPES[param.type.dtype], f"p_{name}[{' + '.join(terms) or '0'}]")

    def _temp_index(self, temp: _Temporary, shift: Mapping[str, int]) -> str:
        index = ""
        for dim in self.dims:
            position = f"(x_{dim} + {shift.get(dim, 0)} - b_{temp.name}_{dim})"
            index = position if not index else f"({index}) * w_{temp.name}_{dim} + {position}"
        return index

    # -- loops -------------------------------------------------------------------------------
    def _loop_nest(
        self, ranges: Mapping[str, tuple[str, str]], indent: str, emit_body: Any
    ) -> list[str]:
        lines = []
        for depth, dim in enumerate(self.dims):
            lo, hi = ranges[dim]
            pad = indent + "    " * depth
            if depth == len(self.dims) - 1:
                # No iteration depends on another (outputs never alias inputs: checked at
                # the call), so skip gcc's alias versioning and peeling on short rows.
                lines.append(f"{pad}#pragma omp simd")
            lines.append(f"{pad}for (int64_t x_{dim} = {lo}; x_{dim} < {hi}; ++x_{dim}) {{")
        inner = indent + "    " * len(self.dims)
        body = ExpressionEmitter(self.read, inner)
        tail = emit_body(body)
        lines.extend(body.lines)
        lines.extend(inner + line for line in tail)
        for depth in reversed(range(len(self.dims))):
            lines.append(indent + "    " * depth + "}")
        return lines

    def generate(self) -> StencilCode:
        """Two functions: ``<name>_tile`` computes one tile (temporaries, then outputs);
        ``<name>`` allocates the temporaries and hands out the tiles, on OpenMP threads when
        the domain is large enough. The tile body exists once, so the compiler optimizes
        (and the build pays for) it once."""
        dims = self.dims
        outer, inner = dims[:-1], dims[-1]
        tiles = dict.fromkeys(outer, 1)
        for d, size in zip(reversed(outer), reversed(self.tile_sizes), strict=False):
            tiles[d] = size
        name = f"sf_stencil_{self.index}"
        temps = list(self.temporaries.values())
        temp_params = "".join(f", {t.ctype}* restrict t_{t.name}" for t in temps)
        temp_args = "".join(f", t_{t.name}" for t in temps)
        lines = [
            f"__attribute__((noinline)) static void {name}_tile(const sf_args* restrict a, "
            "const int64_t* lo, const int64_t* hi, const int64_t* tile, const int64_t* tb, "
            f"const int64_t* te{temp_params}) {{",
        ]
        lines += [
            f"    const int64_t lo_{d} = lo[{i}], hi_{d} = hi[{i}];" for i, d in enumerate(dims)
        ]
        lines += [
            f"    const int64_t tb_{d} = tb[{i}], te_{d} = te[{i}];" for i, d in enumerate(outer)
        ]
        lines += self._unpack()
        for temp in temps:
            for i, d in enumerate(dims):
                grow = temp.extent[d][1] - temp.extent[d][0]
                width = f"(hi_{d} - lo_{d} + {grow})" if d == inner else f"(tile[{i}] + {grow})"
                lines.append(
                    f"    const int64_t w_{temp.name}_{d} = {width}; (void)w_{temp.name}_{d};"
                )
        block_lo = {d: f"tb_{d}" for d in outer} | {inner: f"lo_{inner}"}
        block_hi = {d: f"te_{d}" for d in outer} | {inner: f"hi_{inner}"}
        for temp in temps:
            for d in dims:
                lines.append(
                    f"    const int64_t b_{temp.name}_{d} = {block_lo[d]} + {temp.extent[d][0]};"
                )
            ranges = {
                d: (f"{block_lo[d]} + {temp.extent[d][0]}", f"{block_hi[d]} + {temp.extent[d][1]}")
                for d in dims
            }
            lines += self._loop_nest(ranges, "    ", self._temporary_store(temp))
        lines += self._loop_nest(
            {d: (block_lo[d], block_hi[d]) for d in dims}, "    ", self._store_outputs
        )
        lines.append("}")

        n_outer = max(1, len(outer))
        points = " * ".join(f"(hi_{d} - lo_{d})" for d in dims)
        lines.append(
            f"static int {name}(const sf_args* restrict a, const int64_t* lo, const int64_t* hi) {{"
        )
        lines += [
            f"    const int64_t lo_{d} = lo[{i}], hi_{d} = hi[{i}];" for i, d in enumerate(dims)
        ]
        lines.append("    int failed = 0;")
        # Small domains skip OpenMP: entering a parallel region costs more than a small
        # stencil, and one tile covering the whole domain fits in cache anyway.
        # One-dimensional stencils have no outer dimension to share among threads: they
        # always take the single-thread path.
        threshold = f"{points} >= {self.parallel_min_points}" if outer else "0"
        lines.append(f"    if ({threshold}) {{")
        sizes = ", ".join(str(tiles[d]) for d in outer) or "1"
        lines.append(f"        const int64_t tile[{n_outer}] = {{{sizes}}};")
        lines.append("        #pragma omp parallel")
        lines.append("        {")
        lines += self._allocate(temps, "            ")
        # Every thread must reach the work-sharing loop or none may: agree on allocation
        # failure behind a barrier first.
        lines.append(f"            if (!({' && '.join(f't_{t.name}' for t in temps) or '1'})) {{")
        lines.append("                #pragma omp atomic write")
        lines.append("                failed = 1;")
        lines.append("            }")
        lines.append("            #pragma omp barrier")
        lines.append("            int failed_now;")
        lines.append("            #pragma omp atomic read")
        lines.append("            failed_now = failed;")
        lines.append("            if (!failed_now) {")
        if outer:
            lines.append(f"            #pragma omp for collapse({len(outer)}) schedule(static)")
        indent = "            "
        for i, d in enumerate(outer):
            lines.append(
                f"{indent}for (int64_t tb_{d} = lo_{d}; tb_{d} < hi_{d}; tb_{d} += tile[{i}]) {{"
            )
            indent += "    "
        starts = ", ".join(f"tb_{d}" for d in outer) or "0"
        ends = (
            ", ".join(
                f"(tb_{d} + tile[{i}] < hi_{d} ? tb_{d} + tile[{i}] : hi_{d})"
                for i, d in enumerate(outer)
            )
            or "0"
        )
        lines.append(
            f"{indent}const int64_t tb[{n_outer}] = {{{starts}}}, te[{n_outer}] = {{{ends}}};"
        )
        lines.append(f"{indent}{name}_tile(a, lo, hi, tile, tb, te{temp_args});")
        for _ in outer:
            indent = indent[:-4]
            lines.append(f"{indent}}}")
        lines.append("            }")
        lines += [f"            free(t_{t.name});" for t in temps]
        lines.append("        }")
        lines.append("    } else {")
        whole = ", ".join(f"hi_{d} - lo_{d}" for d in outer) or "1"
        lines.append(f"        const int64_t tile[{n_outer}] = {{{whole}}};")
        lines += self._allocate(temps, "        ")
        lines.append(f"        if ({' && '.join(f't_{t.name}' for t in temps) or '1'}) {{")
        lines.append(f"            {name}_tile(a, lo, hi, tile, lo, hi{temp_args});")
        lines.append("        } else { failed = 1; }")
        lines += [f"        free(t_{t.name});" for t in temps]
        lines.append("    }")
        lines.append("    return failed ? -1 : 0;")
        lines.append("}")
        return StencilCode(name, "\n".join(lines), dims)

    def _allocate(self, temps: Sequence[_Temporary], indent: str) -> list[str]:
        """Per-thread buffers of the temporaries, sized for one tile plus its extent."""
        outer, inner = self.dims[:-1], self.dims[-1]
        lines = []
        for temp in temps:
            lower, upper = temp.extent[inner]
            span = " * ".join(
                [
                    f"(tile[{i}] + {temp.extent[d][1] - temp.extent[d][0]})"
                    for i, d in enumerate(outer)
                ]
                + [f"(hi_{inner} - lo_{inner} + {upper - lower})"]
            )
            lines.append(
                f"{indent}{temp.ctype}* t_{temp.name} = ({temp.ctype}*)malloc(sizeof({temp.ctype}) * {span});"
            )
        return lines

    def _temporary_store(self, temp: _Temporary) -> Any:
        definition = self.definitions[temp.name]
        index = self._temp_index(temp, {})

        def store(body: ExpressionEmitter) -> list[str]:
            return [f"t_{temp.name}[{index}] = {body.value(definition, ())};"]

        return store

    def _store_outputs(self, body: ExpressionEmitter) -> list[str]:
        stores = []
        for target, result in zip(self.stencil.outputs, self.stencil.results, strict=True):
            param = self.program.param(target.name)
            assert isinstance(param.type, FieldType) and result.type is not None
            value = convert(body.value(result, ()), result.type.dtype, param.type.dtype)
            terms = []
            for axis, dim in enumerate(param.type.dim_names):
                last = axis == len(param.type.dims) - 1
                terms.append(
                    f"x_{dim}"
                    if last and self.unit_stride.get(target.name, False)
                    else f"x_{dim} * s_{target.name}_{axis}"
                )
            stores.append(f"p_{target.name}[{' + '.join(terms)}] = {value};")
        return stores

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


def generate_stencil(
    program: ProgramIR,
    stencil: Stencil,
    index: int,
    *,
    unit_stride: Mapping[str, bool],
    temporaries: bool,
    tile_sizes: Sequence[int],
    parallel_min_points: int,
) -> StencilCode:
    """The C function ``sf_stencil_<index>`` computing ``stencil`` over a domain.

    The function takes the argument struct and the domain (``lo``/``hi`` per iteration
    dimension) and returns 0, or -1 when a temporary could not be allocated.
    """
    return _StencilGenerator(
        program,
        stencil,
        index,
        unit_stride=unit_stride,
        temporaries=temporaries,
        tile_sizes=tile_sizes,
        parallel_min_points=parallel_min_points,
    ).generate()
