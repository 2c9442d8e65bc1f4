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

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from pipeline.dsl.types import FieldType, ScalarType, bool_, float32, float64, int32, int64
from pipeline.ir.nodes import (
    BinaryOp,
    Call,
    Cast,
    Expr,
    FieldExtent,
    Literal,
    ProgramIR,
    Ref,
    Stencil,
    UnaryOp,
    combine_offsets,
)
from pipeline.passes.traversal import walk
from pipeline.passes.typing_ import promote

__all__ = ["C_TYPES", "StencilCode", "generate_stencil"]

Offsets = tuple[tuple[str, int], ...]

C_TYPES: Mapping[np.dtype[Any], str] = {
    float32: "float",
    float64: "double",
    int32: "int32_t",
    int64: "int64_t",
    bool_: "sf_bool",
}
_SUFFIX = {float32: "f32", float64: "f64", int32: "i32", int64: "i64"}
_UNSIGNED = {int32: "uint32_t", int64: "uint64_t"}
_FLOAT_FUNCTIONS = {
    "sqrt": "sqrt",
    "exp": "exp",
    "log": "log",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "floor": "floor",
    "ceil": "ceil",
    "abs": "fabs",
}
_COMPARISONS = {"==", "!=", "<", "<=", ">", ">="}


def _literal(value: bool | int | float, dtype: np.dtype[Any]) -> str:
    if dtype == bool_:
        return f"((sf_bool){int(bool(value))})"
    if dtype.kind in "iu":
        return f"(({C_TYPES[dtype]}){int(value)}LL)"
    text = float(value).hex() if math.isfinite(float(value)) else repr(float(value))
    return f"(({C_TYPES[dtype]}){text})"


def convert(text: str, source: np.dtype[Any], target: np.dtype[Any]) -> str:
    """C text converting a value of dtype ``source`` to ``target`` (NumPy's casting)."""
    if source == target:
        return text
    if target == bool_:
        return f"((sf_bool)(({text}) != 0))"
    return f"(({C_TYPES[target]})({text}))"


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


class _Body:
    """SSA statements for one loop body, memoized by (expression, shift)."""

    def __init__(self, gen: _StencilGenerator, indent: str) -> None:
        self.gen = gen
        self.indent = indent
        self.lines: list[str] = []
        self.memo: dict[tuple[Expr, Offsets], str] = {}

    def let(self, ctype: str, text: str) -> str:
        name = f"v{self.gen.next_id()}"
        self.lines.append(f"{self.indent}const {ctype} {name} = {text};")
        return name

    def value(self, expr: Expr, shift: Offsets) -> str:
        """A C expression (usually an SSA name) for ``expr`` at the point moved by ``shift``."""
        key = (expr, shift)
        if key not in self.memo:
            self.memo[key] = self._compute(expr, shift)
        return self.memo[key]

    def _typed(self, expr: Expr, shift: Offsets, dtype: np.dtype[Any]) -> str:
        assert expr.type is not None
        return convert(self.value(expr, shift), expr.type.dtype, dtype)

    def _compute(self, expr: Expr, shift: Offsets) -> str:
        assert expr.type is not None
        dtype = expr.type.dtype
        ctype = C_TYPES[dtype]
        match expr:
            case Literal(value=value):
                return _literal(value, dtype)
            case Ref(name=name, offsets=offsets):
                return self.gen.read(self, name, combine_offsets(offsets, shift))
            case UnaryOp(op=op, operand=operand):
                x = self._typed(operand, shift, dtype)
                if op == "~":
                    return self.let(ctype, f"(sf_bool)!{x}")
                if op == "+":
                    return x
                if dtype.kind in "iu":
                    return self.let(ctype, f"({ctype})(0u - ({_UNSIGNED[dtype]}){x})")
                return self.let(ctype, f"-{x}")
            case BinaryOp(op=op, left=left, right=right):
                return self._binary(op, left, right, shift, dtype)
            case Call(function="where", args=(cond, a, b)):
                c = self._condition(cond, shift)
                return self.let(
                    ctype, f"{c} ? {self._typed(a, shift, dtype)} : {self._typed(b, shift, dtype)}"
                )
            case Call(function=function, args=(a, b)):
                x, y = self._typed(a, shift, dtype), self._typed(b, shift, dtype)
                kind = {"minimum": "min", "maximum": "max", "power": "pow"}[function]
                if kind == "pow" and dtype.kind == "f":
                    return self.let(ctype, f"pow{'f' if dtype == float32 else ''}({x}, {y})")
                return self.let(ctype, f"sf_{kind}_{_SUFFIX[dtype]}({x}, {y})")
            case Call(function=function, args=(a,)):
                assert a.type is not None
                if dtype.kind in "iu":
                    x = self._typed(a, shift, dtype)
                    return (
                        x
                        if function in {"floor", "ceil"}
                        else self.let(ctype, f"sf_abs_{_SUFFIX[dtype]}({x})")
                    )
                x = self._typed(a, shift, dtype)
                suffix = "f" if dtype == float32 else ""
                return self.let(ctype, f"{_FLOAT_FUNCTIONS[function]}{suffix}({x})")
            case Cast(value=value):
                assert value.type is not None
                return self.let(ctype, convert(self.value(value, shift), value.type.dtype, dtype))
        raise NotImplementedError(f"no C translation for {expr!r}")

    def _condition(self, cond: Expr, shift: Offsets) -> str:
        """A select's condition; a comparison stays inline, so the compiler can keep the
        mask at the width of the compared values instead of narrowing it to a byte."""
        if (
            isinstance(cond, BinaryOp)
            and cond.op in _COMPARISONS
            and (cond, shift) not in self.memo
        ):
            assert cond.left.type is not None and cond.right.type is not None
            operand = promote(cond.left.type, cond.right.type, cond.op, None)[0]
            x = self._typed(cond.left, shift, operand)
            y = self._typed(cond.right, shift, operand)
            return f"({x} {cond.op} {y})"
        return f"({self._typed(cond, shift, bool_)})"

    def _binary(
        self, op: str, left: Expr, right: Expr, shift: Offsets, dtype: np.dtype[Any]
    ) -> str:
        assert left.type is not None and right.type is not None
        ctype = C_TYPES[dtype]
        if op in {"&", "|"}:
            return self.let(
                ctype,
                f"(sf_bool)({self._typed(left, shift, bool_)} {op} {self._typed(right, shift, bool_)})",
            )
        operand = promote(left.type, right.type, op, None)[0] if op in _COMPARISONS else dtype
        x, y = self._typed(left, shift, operand), self._typed(right, shift, operand)
        if op in _COMPARISONS:
            return self.let(ctype, f"(sf_bool)({x} {op} {y})")
        if op in {"//", "%", "**"}:
            if op == "**" and dtype.kind == "f":
                return self.let(ctype, f"pow{'f' if dtype == float32 else ''}({x}, {y})")
            name = {"//": "floordiv", "%": "mod", "**": "pow"}[op]
            return self.let(ctype, f"sf_{name}_{_SUFFIX[dtype]}({x}, {y})")
        if dtype.kind in "iu":
            unsigned = _UNSIGNED[dtype]
            return self.let(ctype, f"({ctype})(({unsigned}){x} {op} ({unsigned}){y})")
        return self.let(ctype, f"{x} {op} {y}")


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
        first = program.param(stencil.outputs[0].name).type
        assert isinstance(first, FieldType)
        self.dims = first.dim_names
        for target in stencil.outputs[1:]:
            other = program.param(target.name).type
            assert isinstance(other, FieldType)
            if set(other.dim_names) != set(self.dims):
                raise NotImplementedError(
                    f"c translation: outputs of {stencil.operator_name!r} have different "
                    "dimensions; give them the same dimensions"
                )
        self.definitions = {a.targets[0]: a.value for a in stencil.body}
        self.temporaries: dict[str, _Temporary] = {}
        if temporaries:
            # A local read at a shifted position somewhere would be recomputed per use:
            # keep it in a buffer. Locals read only in place are computed where needed.
            shifted = {
                node.name
                for expr in (*(a.value for a in stencil.body), *stencil.results)
                for node in walk(expr)
                if isinstance(node, Ref) and node.offsets and node.name in self.definitions
            }
            for extent in stencil.local_extents:
                if extent.name in shifted:
                    self.temporaries[extent.name] = self._temporary(extent)

    def _temporary(self, extent: FieldExtent) -> _Temporary:
        bounds = {d.dim: (d.lower, d.upper) for d in extent.dims}
        local_type = self.definitions[extent.name].type
        assert local_type is not None
        full = {d: bounds.get(d, (0, 0)) for d in self.dims}
        return _Temporary(extent.name, C_TYPES[local_type.dtype], full)

    def next_id(self) -> int:
        self.counter += 1
        return self.counter

    # -- reads ------------------------------------------------------------------------------
    def read(self, body: _Body, name: str, offsets: Offsets) -> str:
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
        body = _Body(self, inner)
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

        def store(body: _Body) -> list[str]:
            return [f"t_{temp.name}[{index}] = {body.value(definition, ())};"]

        return store

    def _store_outputs(self, body: _Body) -> list[str]:
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
