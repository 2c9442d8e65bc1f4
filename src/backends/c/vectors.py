"""A tiled sweep's output loop in explicit vectors, its outputs stored past the caches.

gcc vectorizes the sweep's inner loops itself, but never into non-temporal stores: a
streamed output is computed into a stack buffer and copied out by ``sf_stream_row``, one
more load and store per point and a burst of streaming stores after each row, which the
arithmetic then waits behind. For a stencil of plain float64 arithmetic the loop that
stores the outputs is written here in gcc's vector extension instead (``VectorEmitter``, a
vector of ``SF_VLANES`` doubles per step, the width of the target's registers), and each
output vector goes to memory with one streaming store where the row is aligned
(``sf_vput``); a row off a vector boundary, as NumPy's own arrays' rows are, is stored into
the tile's row buffer and streamed out of it (``tile_sweep``). On the Zen 3 VM hdiff ran 7 %
faster in a standalone harness, within the noise in the program's own shared object (ADR
0009).

``vectorizable`` says which stencils qualify: every value float64, built from fields
contiguous along the inner dimension, temporaries, scalars and literals with ``+ - * /``,
negation, ``where`` on a comparison and ``astype`` to float64; no temporary read at a
shifted inner position (the loop's lanes would see each other's stores); every output
streamed; and a compile-time inner extent that a whole number of vectors covers on every
target (a multiple of 8).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from backends.clike.expressions import ExpressionEmitter, Offsets, literal
from pipeline.dsl.ir.nodes import BinaryOp, Call, Cast, Expr, Literal, Ref, UnaryOp, combine_offsets
from pipeline.dsl.types import bool_, float64

__all__ = ["VECTOR_C", "VECTOR_TYPE", "VectorEmitter", "vectorizable"]

#: The C type of one vector of doubles.
VECTOR_TYPE = "sf_vf64"

#: The vector type and its loads and stores: in a unit after ``STREAM_FENCE_C``.
VECTOR_C = r"""
#include <string.h>
#if defined(__AVX512F__)
#define SF_VLANES 8
#elif defined(__AVX__)
#define SF_VLANES 4
#else
#define SF_VLANES 2
#endif
typedef double sf_vf64 __attribute__((vector_size(8 * SF_VLANES)));
typedef long long sf_vmask __attribute__((vector_size(8 * SF_VLANES)));
static inline sf_vf64 sf_vload(const double* p) { sf_vf64 v; memcpy(&v, p, sizeof v); return v; }
static inline void sf_vstore(double* p, sf_vf64 v) { memcpy(p, &v, sizeof v); }
static inline sf_vf64 sf_vsplat(double x) {
    sf_vf64 v;
    for (int i = 0; i < SF_VLANES; ++i) v[i] = x;
    return v;
}
/* Lane by lane, m ? a : b (m: all ones or all zeros per lane, as comparisons give). */
static inline sf_vf64 sf_vselect(sf_vmask m, sf_vf64 a, sf_vf64 b) {
    return (sf_vf64)((m & (sf_vmask)a) | (~m & (sf_vmask)b));
}
/* Stores v at p: past the caches when nt (p then a multiple of the vector's size). */
static inline void sf_vput(double* p, sf_vf64 v, int nt) {
#if SF_STREAMS
    if (nt) {
#if defined(__clang__)
        __builtin_nontemporal_store(v, (sf_vf64*)p);
#elif defined(__AVX512F__)
        __builtin_ia32_movntpd512(p, v);
#elif defined(__AVX__)
        __builtin_ia32_movntpd256(p, v);
#else
        __builtin_ia32_movntpd(p, v);
#endif
        return;
    }
#else
    (void)nt;
#endif
    sf_vstore(p, v);
}
"""

_ARITHMETIC = {"+", "-", "*", "/"}
_COMPARISONS = {"==", "!=", "<", "<=", ">", ">="}


def vectorizable(
    expressions: Iterable[Expr],
    definitions: Mapping[str, Expr],
    temporaries: Iterable[str],
    fields: Collection[str],
    scalars: Collection[str],
    inner: str,
) -> bool:
    """Whether ``expressions`` (and the locals they inline, ``definitions``) are all plain
    float64 arithmetic that ``VectorEmitter`` writes: reading ``temporaries`` only at
    offset 0 along the inner dimension ``inner``, and no parameters but ``fields``
    (contiguous along ``inner``: a vector of points is a vector of neighbours in memory) and
    ``scalars``."""
    kept = set(temporaries)
    seen: set[str] = set()

    def value(expr: Expr) -> bool:
        if expr.type is None or expr.type.dtype != float64:
            return False
        match expr:
            case Literal():
                return True
            case Ref(name=name, offsets=offsets):
                if name in kept:
                    return dict(offsets).get(inner, 0) == 0
                if name in definitions:
                    if name not in seen:
                        seen.add(name)
                        return value(definitions[name])
                    return True
                return name in fields or name in scalars
            case UnaryOp(op=op, operand=operand):
                return op in {"-", "+"} and value(operand)
            case BinaryOp(op=op, left=left, right=right):
                return op in _ARITHMETIC and value(left) and value(right)
            case Call(function="where", args=(cond, a, b)):
                return condition(cond) and value(a) and value(b)
            case Cast(value=operand):
                return value(operand)  # float64 to float64 (``astype`` of a float64)
        return False

    def condition(expr: Expr) -> bool:
        if isinstance(expr, Literal):  # a condition folded to a constant
            return True
        if isinstance(expr, Ref) and expr.name in definitions:  # a comparison shared (CSE)
            return condition(definitions[expr.name])
        return (
            isinstance(expr, BinaryOp)
            and expr.op in _COMPARISONS
            and value(expr.left)
            and value(expr.right)
        )

    return all(value(expr) for expr in expressions)


class VectorEmitter(ExpressionEmitter):
    """An ``ExpressionEmitter`` whose values are vectors of ``SF_VLANES`` consecutive points
    along the inner dimension (the loop's index is the first lane's); only for expressions
    that ``vectorizable`` accepts. Literals and scalars stay scalars, which gcc's vector
    arithmetic broadcasts; ``vector`` broadcasts one where a vector is needed."""

    def __init__(
        self,
        read: Callable[[ExpressionEmitter, str, Offsets], str],
        definitions: Mapping[str, Expr],
        indent: str = "",
    ) -> None:
        super().__init__(read, indent)
        self._definitions = definitions
        self._vectors: set[str] = set()

    def load(self, ctype: str, element: str) -> str:
        name = self.let(VECTOR_TYPE, f"sf_vload(&{element})")
        self._vectors.add(name)
        return name

    def store(self, element: str, value: str) -> str:
        return f"sf_vstore(&{element}, {self.vector(value)});"

    def vector(self, value: str) -> str:
        """``value`` as a vector (a scalar broadcast to every lane)."""
        return value if value in self._vectors else f"sf_vsplat({value})"

    def _compute(self, expr: Expr, shift: Offsets) -> str:
        match expr:
            case Literal(value=value):
                return literal(value, float64)
            case Ref():
                return super()._compute(expr, shift)
            case UnaryOp(op="+", operand=operand) | Cast(value=operand):
                return self.value(operand, shift)
            case UnaryOp(op="-", operand=operand):
                x = self.value(operand, shift)
                return self._bind(f"-{x}", x)
            case BinaryOp(op=op, left=left, right=right):
                x, y = self.value(left, shift), self.value(right, shift)
                return self._bind(f"{x} {op} {y}", x, y)
            case Call(function="where", args=(cond, a, b)):
                # A comparison shared by several selects is a local: compare where it is used.
                at = shift
                while isinstance(cond, Ref) and cond.name in self._definitions:
                    at = combine_offsets(cond.offsets, at)
                    cond = self._definitions[cond.name]
                if isinstance(cond, Literal):
                    cx = cy = literal(cond.value, bool_)
                    test = f"({cx})"
                else:
                    assert isinstance(cond, BinaryOp)
                    cx, cy = self.value(cond.left, at), self.value(cond.right, at)
                    test = f"({cx} {cond.op} {cy})"
                x, y = self.value(a, shift), self.value(b, shift)
                if not {x, y, cx, cy} & self._vectors:
                    return self._bind(f"{test} ? {x} : {y}")
                if not {cx, cy} & self._vectors:
                    # One condition for every lane: C's select, between two vectors.
                    return self._bind(f"{test} ? {self.vector(x)} : {self.vector(y)}", x, y)
                # Comparing vectors gives a mask per lane.
                mask = f"(sf_vmask){test}"
                return self._bind(f"sf_vselect({mask}, {self.vector(x)}, {self.vector(y)})", cx, cy)
        raise NotImplementedError(f"no vector translation for {expr!r} (see vectorizable)")

    def _bind(self, text: str, *operands: str) -> str:
        """``text`` bound to a vector when any of ``operands`` is one, else to a scalar."""
        if set(operands) & self._vectors:
            name = self.let(VECTOR_TYPE, text)
            self._vectors.add(name)
            return name
        return self.let("double", text)
