"""IR expressions -> C/C++ statements, shared by every translation that emits C-like code.

An ``ExpressionEmitter`` turns a typed IR expression into ``const`` SSA statements with NumPy's
semantics: values are converted to each node's dtype exactly where NumPy converts them,
integer arithmetic wraps, ``where`` is a select on values computed unconditionally (so loops
vectorize), and ``//``, ``%``, ``**``, ``minimum`` and ``maximum`` call the helpers of
``backends.clike.runtime``. How a *read* is emitted (a pointer with strides, a temporary buffer, a
DaCe connector) is the caller's business: it passes a ``read`` callback.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs
import numpy as np

from backends.loops import SweepKey, SweepPlan
from pipeline.dsl import ir
from pipeline.dsl.ir.nodes import combine_offsets
from pipeline.dsl.passes.traversal import substitute
from pipeline.dsl.passes.typing_ import promote
from pipeline.dsl.regions import Bound, Region
from pipeline.dsl.types import bool_, float32, float64, int32, int64

__all__ = [
    "C_TYPES",
    "ExpressionEmitter",
    "Offsets",
    "PassStorage",
    "ScanStorage",
    "Sweep",
    "convert",
    "literal",
]

Offsets = tuple[tuple[str, int], ...]

C_TYPES: Mapping[np.dtype[Any], str] = {
    float32: "float",
    float64: "double",
    int32: "int32_t",
    int64: "int64_t",
    bool_: "sf_bool",
}


def convert(text: str, source: np.dtype[Any], target: np.dtype[Any]) -> str:
    """C text converting a value of dtype ``source`` to ``target`` (NumPy's casting)."""
    if source == target:
        return text
    if target == bool_:
        return f"((sf_bool)(({text}) != 0))"
    return f"(({C_TYPES[target]})({text}))"


_SUFFIX = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64"}
_UNSIGNED = {"int32": "uint32_t", "int64": "uint64_t"}
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
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
    "cbrt": "cbrt",
    "gamma": "tgamma",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "abs": "fabs",
}
# Answers for integers, which are always finite.
_INTEGER_PREDICATES = {"isfinite": 1, "isinf": 0, "isnan": 0}
_COMPARISONS = {"==", "!=", "<", "<=", ">", ">="}


def literal(value: bool | int | float, dtype: np.dtype[Any]) -> str:
    """C++ text of a literal of ``dtype`` (hexadecimal floats: exact, no rounding)."""
    if dtype == bool_:
        return f"((sf_bool){int(bool(value))})"
    if dtype.kind in "iu":
        return f"(({C_TYPES[dtype]}){int(value)}LL)"
    number = float(value)
    if math.isnan(number):
        text = "NAN"
    elif math.isinf(number):
        text = "INFINITY" if number > 0 else "(-INFINITY)"
    else:
        text = number.hex()
    return f"(({C_TYPES[dtype]}){text})"


@attrs.frozen
class Sweep:
    """One scan computed in a loop body: the caller initializes its carry before the pass
    and stores ``new_carry`` into it at the end of each step.

    Attributes:
        key: the scan operator and its arguments.
        new_carry: per component, the text of the new carry (an SSA name).
    """

    key: SweepKey
    new_carry: tuple[str, ...]


class ScanStorage(Protocol):
    """Where a loop body that runs scans finds their values (see ``ExpressionEmitter``)."""

    def carry(self, key: SweepKey, component: int) -> str:
        """The text of the carry's storage (read in the body, stored by the caller)."""
        ...

    def finished(self, key: SweepKey, component: int) -> str | None:
        """The text of the sweep's value at this point when an earlier pass computed it
        (None: this body computes it)."""
        ...


@attrs.frozen
class PassStorage:
    """The ``ScanStorage`` of one pass of a multi-pass sweep, in the names every C-like
    kernel uses: carry ``c<n>_<component>`` (indexed by ``carry_index`` where the carries are
    buffers, else a variable) and an earlier pass's values ``k<n>_<component>[kept_index]``;
    ``stores`` writes both at the end of a step.

    Attributes:
        plan: the stencil's passes.
        phase: the pass this body runs.
        numbers: each sweep's number ``n`` in the names.
    """

    plan: SweepPlan
    phase: int
    numbers: Mapping[SweepKey, int]
    kept_index: str
    carry_index: str | None = None

    def carry(self, key: SweepKey, component: int) -> str:
        name = f"c{self.numbers[key]}_{component}"
        return name if self.carry_index is None else f"{name}[{self.carry_index}]"

    def finished(self, key: SweepKey, component: int) -> str | None:
        if self.plan.phase_of(key) < self.phase:
            return self._kept(key, component)
        return None

    def stores(self, sweeps: Sequence[Sweep]) -> list[str]:
        """The statements that end a step of this pass: each of ``sweeps``' new carry into
        its carry and, unless this is the last pass, into the values later passes read."""
        kept = self.phase < len(self.plan.phases) - 1
        lines = []
        for sweep in sweeps:
            for component, value in enumerate(sweep.new_carry):
                lines.append(f"{self.carry(sweep.key, component)} = {value};")
                if kept:
                    lines.append(f"{self._kept(sweep.key, component)} = {value};")
        return lines

    def _kept(self, key: SweepKey, component: int) -> str:
        return f"k{self.numbers[key]}_{component}[{self.kept_index}]"


class ExpressionEmitter:
    """SSA statements for one loop body (or tasklet), memoized by (expression, shift).

    Args:
        read: ``read(emitter, name, offsets)`` returns the text that reads parameter or
            local ``name`` at ``offsets`` (it may bind a value with ``let`` or call back
            into ``value`` for a local computed in place).
        indent: prefixed to every emitted line.
        scans: for a body that runs scans, where their carries and earlier passes' values
            are; the sweeps this body computes are listed in ``sweeps``.
        index: for a body that chooses by index (``concat_where``), ``index(dim)`` is the
            text of the point's index along ``dim``.
    """

    def __init__(
        self,
        read: Callable[[ExpressionEmitter, str, Offsets], str],
        indent: str = "",
        scans: ScanStorage | None = None,
        index: Callable[[str], str] | None = None,
    ) -> None:
        self._read = read
        self._indent = indent
        self._scans = scans
        self._index = index
        self.lines: list[str] = []
        self.sweeps: list[Sweep] = []
        self._memo: dict[tuple[ir.Expr, Offsets], str] = {}
        self._counter = 0
        # The names a scan's body reads (prefixed per sweep): its carry, point values, locals.
        self._scan_values: dict[str, str] = {}
        self._scan_locals: dict[str, ir.Expr] = {}
        self._sweep_memo: dict[SweepKey, Sweep] = {}

    def let(self, ctype: str, text: str) -> str:
        """Bind ``text`` to a fresh ``const`` variable and return its name."""
        self._counter += 1
        name = f"v{self._counter}"
        self.lines.append(f"{self._indent}const {ctype} {name} = {text};")
        return name

    def load(self, ctype: str, element: str) -> str:
        """Bind the value of memory ``element`` (C text of an lvalue of type ``ctype``)."""
        return self.let(ctype, element)

    def store(self, element: str, value: str) -> str:
        """The statement storing ``value`` (a ``value`` of this body) into ``element``."""
        return f"{element} = {value};"

    def value(self, expr: ir.Expr, shift: Offsets) -> str:
        """C++ text (usually an SSA name) for ``expr`` at the point moved by ``shift``."""
        key = (expr, shift)
        if key not in self._memo:
            self._memo[key] = self._compute(expr, shift)
        return self._memo[key]

    def typed(self, expr: ir.Expr, shift: Offsets, dtype: np.dtype[Any]) -> str:
        """``value`` converted to ``dtype`` as NumPy converts it."""
        assert expr.type is not None
        return convert(self.value(expr, shift), expr.type.dtype, dtype)

    def _compute(self, expr: ir.Expr, shift: Offsets) -> str:
        assert expr.type is not None
        dtype = expr.type.dtype
        ctype = C_TYPES[dtype]
        match expr:
            case ir.Literal(value=value):
                return literal(value, dtype)
            case ir.Ref(name=name) if name in self._scan_values:
                return self._scan_values[name]
            case ir.Ref(name=name) if name in self._scan_locals:
                return self.value(self._scan_locals[name], ())
            case ir.Ref(name=name, offsets=offsets):
                return self._read(self, name, combine_offsets(offsets, shift))
            case ir.ConcatWhere(region=region, inside=inside, outside=outside):
                return self._concat_where(region, inside, outside, shift, dtype)
            case ir.Scan(operator=operator, args=args, component=component):
                assert self._scans is not None, "this loop body was not set up to run scans"
                done = self._scans.finished((operator, args), component)
                if done is not None:
                    return done
                return self.sweep(expr, shift).new_carry[component]
            case ir.UnaryOp(op=op, operand=operand):
                x = self.typed(operand, shift, dtype)
                if op == "~":
                    return self.let(ctype, f"(sf_bool)!{x}")
                if op == "+":
                    return x
                if dtype.kind in "iu":
                    return self.let(ctype, f"({ctype})(0u - ({_UNSIGNED[dtype.name]}){x})")
                return self.let(ctype, f"-{x}")
            case ir.BinaryOp(op=op, left=left, right=right):
                return self._binary(op, left, right, shift, dtype)
            case ir.Call(function="where", args=(cond, a, b)):
                c = self._condition(cond, shift)
                x, y = self.typed(a, shift, dtype), self.typed(b, shift, dtype)
                return self.let(ctype, f"{c} ? {x} : {y}")
            case ir.Call(function=function, args=(a, b)):
                x, y = self.typed(a, shift, dtype), self.typed(b, shift, dtype)
                kind = {"minimum": "min", "maximum": "max", "power": "pow", "fmod": "fmod"}[
                    function
                ]
                if kind in {"pow", "fmod"} and dtype.kind == "f":
                    return self.let(ctype, f"{kind}{'f' if dtype == float32 else ''}({x}, {y})")
                return self.let(ctype, f"sf_{kind}_{_SUFFIX[dtype.name]}({x}, {y})")
            case ir.Call(function=function, args=(a,)) if function in _INTEGER_PREDICATES:
                assert a.type is not None
                if a.type.dtype.kind in "iu":
                    return literal(bool(_INTEGER_PREDICATES[function]), bool_)
                return self.let(ctype, f"(sf_bool)({function}({self.value(a, shift)}) != 0)")
            case ir.Call(function=function, args=(a,)):
                x = self.typed(a, shift, dtype)
                if dtype.kind in "iu":
                    if function in {"floor", "ceil", "trunc"}:
                        return x
                    return self.let(ctype, f"sf_abs_{_SUFFIX[dtype.name]}({x})")
                suffix = "f" if dtype == float32 else ""
                return self.let(ctype, f"{_FLOAT_FUNCTIONS[function]}{suffix}({x})")
            case ir.Cast(value=value):
                assert value.type is not None
                return self.let(ctype, convert(self.value(value, shift), value.type.dtype, dtype))
        raise NotImplementedError(f"no C translation for {expr!r}")

    def _concat_where(
        self,
        region: Region,
        inside: ir.Expr,
        outside: ir.Expr,
        shift: Offsets,
        dtype: np.dtype[Any],
    ) -> str:
        """An ``if``/``else`` computing each branch only where it is chosen (a branch may
        read outside the arrays where the other one is chosen); values computed inside a
        branch are not reused outside it."""
        self._counter += 1
        name = f"v{self._counter}"
        indent = self._indent
        self.lines.append(f"{indent}{C_TYPES[dtype]} {name};")
        self.lines.append(f"{indent}if ({self._region(region, shift)}) {{")
        for branch, closing in ((inside, "} else {"), (outside, "}")):
            known = set(self._memo)
            self._indent = indent + "    "
            value = self.typed(branch, shift, dtype)
            self.lines.append(f"{self._indent}{name} = {value};")
            self._indent = indent
            for key in set(self._memo) - known:
                del self._memo[key]
            self.lines.append(f"{indent}{closing}")
        return name

    def _region(self, region: Region, shift: Offsets) -> str:
        """C text: whether the point moved by ``shift`` lies in ``region``."""
        assert self._index is not None, "this loop body was not set up to choose by index"
        moved = dict(shift)
        boxes = []
        for box in region.boxes:
            terms = []
            for interval in box:
                at = f"({self._index(interval.dim)} + {moved.get(interval.dim, 0)})"
                terms += [f"{at} >= {self._bound(b)}" for b in interval.lowers]
                terms += [f"{at} < {self._bound(b)}" for b in interval.uppers]
            boxes.append(f"({' && '.join(terms) or '1'})")
        return " || ".join(boxes) or "0"

    def _bound(self, bound: Bound) -> str:
        if bound.param is None:
            return f"{bound.offset}LL"
        return f"((int64_t){self._read(self, bound.param, ())} + {bound.offset}LL)"

    def sweep(self, scan: ir.Scan, shift: Offsets = ()) -> Sweep:
        """The step of ``scan``'s sweep at this point: its point values, then its body on
        them and the carry; once per operator and arguments."""
        key = (scan.operator, scan.args)
        if key in self._sweep_memo:
            return self._sweep_memo[key]
        assert self._scans is not None and not shift, "scans are read where they are computed"
        operator = scan.operator
        prefix = f"__scan{len(self._sweep_memo)}_"
        renamed: dict[str, ir.Expr] = {}
        for component, param in enumerate(operator.carry):
            renamed[param.name] = ir.Ref(prefix + param.name, type=param.type)
            self._scan_values[prefix + param.name] = self._scans.carry(key, component)
        for param, arg in zip(operator.params, scan.args, strict=True):
            renamed[param.name] = ir.Ref(prefix + param.name, type=param.type)
            self._scan_values[prefix + param.name] = self.typed(arg, shift, param.type.dtype)
        for assign in operator.body:
            (target,) = assign.targets
            value = substitute(assign.value, renamed)
            renamed[target] = ir.Ref(prefix + target, type=value.type)
            self._scan_locals[prefix + target] = value
        new_carry = tuple(
            self.typed(substitute(result, renamed), (), param.type.dtype)
            for result, param in zip(operator.results, operator.carry, strict=True)
        )
        sweep = Sweep(key, new_carry)
        self.sweeps.append(sweep)
        self._sweep_memo[key] = sweep
        return sweep

    def _condition(self, cond: ir.Expr, shift: Offsets) -> str:
        """A select's condition; a comparison stays inline, so the compiler can keep the
        mask at the width of the compared values instead of narrowing it to a byte."""
        if (
            isinstance(cond, ir.BinaryOp)
            and cond.op in _COMPARISONS
            and (cond, shift) not in self._memo
        ):
            assert cond.left.type is not None and cond.right.type is not None
            operand = promote(cond.left.type, cond.right.type, cond.op, None)[0]
            x = self.typed(cond.left, shift, operand)
            y = self.typed(cond.right, shift, operand)
            return f"({x} {cond.op} {y})"
        return f"({self.typed(cond, shift, bool_)})"

    def _binary(
        self, op: str, left: ir.Expr, right: ir.Expr, shift: Offsets, dtype: np.dtype[Any]
    ) -> str:
        assert left.type is not None and right.type is not None
        ctype = C_TYPES[dtype]
        if op in {"&", "|"}:
            x, y = self.typed(left, shift, bool_), self.typed(right, shift, bool_)
            return self.let(ctype, f"(sf_bool)({x} {op} {y})")
        operand = promote(left.type, right.type, op, None)[0] if op in _COMPARISONS else dtype
        x, y = self.typed(left, shift, operand), self.typed(right, shift, operand)
        if op in _COMPARISONS:
            return self.let(ctype, f"(sf_bool)({x} {op} {y})")
        if op in {"//", "%", "**"}:
            if op == "**" and dtype.kind == "f":
                return self.let(ctype, f"pow{'f' if dtype == float32 else ''}({x}, {y})")
            name = {"//": "floordiv", "%": "mod", "**": "pow"}[op]
            return self.let(ctype, f"sf_{name}_{_SUFFIX[dtype.name]}({x}, {y})")
        if dtype.kind in "iu":
            unsigned = _UNSIGNED[dtype.name]
            return self.let(ctype, f"({ctype})(({unsigned}){x} {op} ({unsigned}){y})")
        return self.let(ctype, f"{x} {op} {y}")
