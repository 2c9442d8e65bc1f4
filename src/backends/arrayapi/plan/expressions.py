"""The code of one stencil of a slicing plan: each expression over a box around the domain,
converted to the dtype the IR gives it, as the C translation does; and the step function of
each scan operator it sweeps."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from backends.arrayapi.plan.writer import Box, PlanWriter, Read, Unplanned
from pipeline.dsl import ir
from pipeline.dsl.passes.traversal import children, walk
from pipeline.dsl.passes.typing_ import promote
from pipeline.dsl.types import FieldType, ScalarType

__all__ = ["ScanStep", "StencilCode", "scan_step"]

_ARITHMETIC = frozenset({"+", "-", "*", "/", "//", "%", "**"})
_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_UNARY_FUNCTIONS = frozenset({
    "sqrt", "exp", "log", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
    "tanh", "arcsinh", "arccosh", "arctanh", "cbrt", "floor", "ceil", "trunc", "abs",
    "isfinite", "isinf", "isnan", "gamma",
})
_BINARY_FUNCTIONS = {"minimum": "np.minimum", "maximum": "np.maximum", "fmod": "np.fmod"}
# The ufunc of each operator, for evaluating in place (``np.add(o, x, out=o)``).
_UFUNCS = {
    "+": "np.add", "-": "np.subtract", "*": "np.multiply", "/": "np.true_divide",
    "//": "np.floor_divide", "%": "np.remainder", "**": "np.power", "<": "np.less",
    "<=": "np.less_equal", ">": "np.greater", ">=": "np.greater_equal", "==": "np.equal",
    "!=": "np.not_equal", "&": "np.bitwise_and", "|": "np.bitwise_or",
}


class StencilCode:
    """The lines of one stencil: each expression over a box around the domain, memoized."""

    def __init__(
        self, writer: PlanWriter, number: int, stencil: ir.Stencil, dims: tuple[str, ...]
    ) -> None:
        self.writer = writer
        self.number = number
        self.dims = dims
        self.zero: Box = ((0, 0),) * len(dims)
        self.definitions = {a.targets[0]: a.value for a in stencil.body}
        self.extents = self._boxes(stencil)
        self.locals: dict[str, str] = {}
        # Names standing for values of a scan operator's body (its carry and arguments).
        self.bound: dict[str, str] = {}
        self._memo: dict[tuple[ir.Expr, Box], str] = {}
        self._sweeps: dict[tuple[ir.ScanOperatorIR, tuple[ir.Expr, ...], Box], str] = {}
        self.empty = True
        # How often each expression occurs in the stencil (an over-count where the same
        # expression is evaluated over different boxes): one used once may take its user's
        # output as its own.
        trees = (*stencil.results, *self.definitions.values())
        self._uses = Counter(node for tree in trees for node in walk(tree))

    def in_place(self, stencil: ir.Stencil) -> tuple[bool, ...]:
        """Per result, whether it can be evaluated in its output (``into``): it is a ufunc
        of its output's dtype used only there, the outputs have dimensions, and the stencil
        reads none of them (the checks make sure that no other field it reads shares memory
        with one)."""
        trees = (*stencil.results, *self.definitions.values())
        read = {n.name for tree in trees for n in walk(tree) if isinstance(n, ir.Ref)}
        outputs = [t.name for t in stencil.outputs]
        if read & set(outputs) or not self.dims:  # a 0-d array indexed by () is a scalar
            return (False,) * len(outputs)
        return tuple(
            self._ufunc(result) is not None
            and self._uses[result] == 1
            and _dtype(result.type) == _dtype(self.writer.params[name])
            for result, name in zip(stencil.results, outputs, strict=True)
        )

    def into(self, expr: ir.Expr, box: Box, out: str) -> None:
        """Emit the lines evaluating ``expr`` (a ufunc of the dtype of ``out``, which no
        operand reads) over ``box`` in the array named ``out``: an operand used only here
        and itself such a ufunc is evaluated in ``out`` first, as a temporary would be."""
        spec = self._ufunc(expr)
        assert spec is not None, "into is called on what in_place accepts"
        function, operands, dtype = spec
        inner = next(
            (
                i for i, operand in enumerate(operands)
                if dtype == _dtype(operand.type) == _dtype(expr.type)
                and self._ufunc(operand) is not None
                and self._uses[operand] == 1
                and (operand, box) not in self._memo
            ),
            None,
        )
        if inner is not None:
            self.into(operands[inner], box, out)
        values = [
            out if i == inner else self.typed(operand, box, dtype)
            for i, operand in enumerate(operands)
        ]
        self.emit(f"{function}({', '.join(values)}, out={out})")

    def _ufunc(self, expr: ir.Expr) -> tuple[str, tuple[ir.Expr, ...], np.dtype[Any]] | None:
        """The ufunc ``expr`` is, its operands and the dtype they are converted to; None
        when it is no single ufunc."""
        dtype = _dtype(expr.type)
        boolean = np.dtype(np.bool_)
        match expr:
            case ir.UnaryOp(op="-", operand=operand):
                return "np.negative", (operand,), dtype
            case ir.UnaryOp(op="~", operand=operand):
                return "np.invert", (operand,), boolean
            case ir.BinaryOp(op=op, left=left, right=right) if op in {"&", "|"}:
                return _UFUNCS[op], (left, right), boolean
            case ir.BinaryOp(op=op, left=left, right=right) if op in _COMPARISONS:
                assert left.type is not None and right.type is not None
                return _UFUNCS[op], (left, right), promote(left.type, right.type, op, None)[0]
            case ir.BinaryOp(op=op, left=left, right=right) if op in _ARITHMETIC:
                return _UFUNCS[op], (left, right), dtype
            case ir.Call(function="power", args=(a, b)):
                return "np.power", (a, b), dtype
            case ir.Call(function=function, args=(a, b)) if function in _BINARY_FUNCTIONS:
                return _BINARY_FUNCTIONS[function], (a, b), dtype
            case ir.Call(function=function, args=(a,)) if function in _UNARY_FUNCTIONS:
                if function in {"gamma", "isfinite", "isinf", "isnan"} or (
                    _dtype(a.type).kind in "iu" and function in {"floor", "ceil", "trunc"}
                ):
                    return None
                return f"np.{function}", (a,), dtype
        return None

    def _boxes(self, stencil: ir.Stencil) -> dict[str, Box]:
        """Per local field, the box around the domain covering every read of it (its
        extent: exactly where it is read, so its inputs are read only where checked)."""
        boxes: dict[str, Box] = {}
        for extent in stencil.local_extents:
            bounds = {b.dim: (b.lower, b.upper) for b in extent.dims}
            boxes[extent.name] = tuple(bounds.get(d, (0, 0)) for d in self.dims)
        return boxes

    def emit(self, line: str) -> None:
        self.writer.lines.append(f"        {line}")
        self.empty = False

    def let(self, text: str) -> str:
        name = self.writer.new_name()
        self.emit(f"{name} = {text}")
        return name

    def typed(self, expr: ir.Expr, box: Box, dtype: np.dtype[Any]) -> str:
        """``expr``'s value converted to ``dtype`` (where its own dtype differs)."""
        value = self.value(expr, box)
        if _dtype(expr.type) == dtype:
            return value
        return self.let(f"{value}.astype({self.writer.constant(dtype)})")

    def value(self, expr: ir.Expr, box: Box) -> str:
        key = (expr, box)
        known = self._memo.get(key)
        if known is None:
            known = self._value(expr, box)
            self._memo[key] = known
        return known

    def _value(self, expr: ir.Expr, box: Box) -> str:
        dtype = _dtype(expr.type)
        match expr:
            case ir.Literal(value=value):
                return self.writer.constant(dtype.type(value))
            case ir.Ref(name=name) if name in self.bound:
                return self.bound[name]
            case ir.Scan(operator=operator, args=args, component=component):
                return self.let(f"{self._sweep(operator, args, box)}[{component}]")
            case ir.Ref(name=name, offsets=offsets) if name in self.definitions:
                return self._local(name, dict(offsets), box)
            case ir.Ref(name=name, offsets=offsets):
                return self._parameter(name, dict(offsets), box)
            case ir.UnaryOp(op="+", operand=operand):
                return self.typed(operand, box, dtype)
            case ir.UnaryOp(op="~", operand=operand):
                return self.let(f"~{self.typed(operand, box, np.dtype(np.bool_))}")
            case ir.UnaryOp(op="-", operand=operand):
                return self.let(f"-{self.typed(operand, box, dtype)}")
            case ir.BinaryOp(op=op, left=left, right=right) if op in {"&", "|"}:
                boolean = np.dtype(np.bool_)
                x, y = self.typed(left, box, boolean), self.typed(right, box, boolean)
                return self.let(f"{x} {op} {y}")
            case ir.BinaryOp(op=op, left=left, right=right) if op in _COMPARISONS:
                assert left.type is not None and right.type is not None
                common = promote(left.type, right.type, op, None)[0]
                x, y = self.typed(left, box, common), self.typed(right, box, common)
                return self.let(f"{x} {op} {y}")
            case ir.BinaryOp(op=op, left=left, right=right) if op in _ARITHMETIC:
                x, y = self.typed(left, box, dtype), self.typed(right, box, dtype)
                return self.let(f"{x} {op} {y}")
            case ir.Call(function="where", args=(cond, a, b)):
                c = self.typed(cond, box, np.dtype(np.bool_))
                x, y = self.typed(a, box, dtype), self.typed(b, box, dtype)
                return self.let(f"np.where({c}, {x}, {y})")
            case ir.Call(function="power", args=(a, b)):
                x, y = self.typed(a, box, dtype), self.typed(b, box, dtype)
                return self.let(f"{x} ** {y}")
            case ir.Call(function=function, args=(a, b)) if function in _BINARY_FUNCTIONS:
                x, y = self.typed(a, box, dtype), self.typed(b, box, dtype)
                return self.let(f"{_BINARY_FUNCTIONS[function]}({x}, {y})")
            case ir.Call(function=function, args=(a,)) if function in _UNARY_FUNCTIONS:
                return self._unary(function, a, box, dtype)
            case ir.Cast(value=value):
                return self.typed(value, box, dtype)
        raise Unplanned(f"{type(expr).__name__} has no slicing plan")

    def _sweep(self, operator: ir.ScanOperatorIR, args: tuple[ir.Expr, ...], box: Box) -> str:
        """The variable holding the list of the scan's carry components over ``box``; each
        operator and arguments swept once."""
        key = (operator, args, box)
        known = self._sweeps.get(key)
        if known is not None:
            return known
        if operator.axis not in self.dims:
            raise Unplanned(f"the scan {operator.name!r} sweeps a dimension the domain lacks")
        axis = self.dims.index(operator.axis)
        if box[axis] != (0, 0):
            raise Unplanned(f"the scan {operator.name!r} is read at a shift along its axis")
        values = [
            self.typed(arg, box, param.type.dtype)
            for arg, param in zip(args, operator.params, strict=True)
        ]
        carry = [param.type.dtype for param in operator.carry]
        init = self.writer.constant(
            tuple(dtype.type(v) for dtype, v in zip(carry, operator.init, strict=True))
        )
        step = scan_step(self.writer, operator)
        known = self.let(
            f"_sweep({step}, {axis}, {operator.forward}, {init}, "
            f"{self.writer.constant(tuple(carry))}, ({', '.join(values)},))"
        )
        self._sweeps[key] = known
        return known

    def _unary(self, function: str, a: ir.Expr, box: Box, dtype: np.dtype[Any]) -> str:
        source = _dtype(a.type)
        if function in {"isfinite", "isinf", "isnan"}:
            return self.let(f"np.{function}({self.value(a, box)})")
        if source.kind in "iu" and function in {"floor", "ceil", "trunc"}:
            return self.value(a, box)
        x = self.typed(a, box, dtype)
        if function == "gamma":
            return self.let(f"_gamma(np, {x})")
        return self.let(f"np.{function}({x})")

    def _parameter(self, name: str, offsets: Mapping[str, int], box: Box) -> str:
        param_type = self.writer.params[name]
        if isinstance(param_type, ScalarType):
            return self.writer.scalar(name, param_type.dtype)
        assert isinstance(param_type, FieldType)
        axes = self._axes(name, param_type)
        read = Read(self.number, tuple(offsets.get(d, 0) for d in self.dims), box, None, axes)
        return self.let(f"a_{name}[T[{self.writer.slot(read)}]]")

    def _local(self, name: str, offsets: Mapping[str, int], box: Box) -> str:
        definition = self.definitions[name]
        if not isinstance(definition.type, FieldType):
            return self.value(definition, self.zero)  # a scalar: the same at every point
        if not _reads_a_field(definition, self.definitions, self.writer.params):
            raise Unplanned(f"the local {name!r} is a field that reads no field")
        extent = self.extents[name]
        array = self.locals.get(name)
        if array is None:
            array = self.value(definition, extent)
            self.locals[name] = array
        moved = tuple(offsets.get(d, 0) for d in self.dims)
        if all(
            (lo + o, hi + o) == e for (lo, hi), o, e in zip(box, moved, extent, strict=True)
        ):
            return array  # the whole computed extent
        axes = self._axes(name, definition.type)
        origin = tuple(lo for lo, _ in extent)
        read = Read(self.number, moved, box, origin, axes)
        return self.let(f"{array}[T[{self.writer.slot(read)}]]")

    def _axes(self, name: str, field_type: FieldType) -> tuple[bool, ...]:
        own = field_type.dim_names
        present = [d for d in self.dims if d in own]
        if tuple(present) != own:
            raise Unplanned(
                f"{name!r} has dimensions {own}, not a subsequence of the domain's {self.dims}"
            )
        return tuple(d in own for d in self.dims)


def _dtype(type_: ir.Type | None) -> np.dtype[Any]:
    assert type_ is not None, "the plan is written from typed IR"
    return type_.dtype


def _reads_a_field(
    expr: ir.Expr, definitions: Mapping[str, ir.Expr], params: Mapping[str, ir.Type]
) -> bool:
    match expr:
        case ir.Ref(name=name) if name in definitions:
            return _reads_a_field(definitions[name], definitions, params)
        case ir.Ref(name=name):
            return isinstance(params[name], FieldType)
        case ir.Literal():
            return False
    return any(_reads_a_field(child, definitions, params) for child in children(expr))


class ScanStep(StencilCode):
    """The lines of one scan operator's step: ``step(*carry, *arguments) -> new carry``,
    on planes (or numbers) as the sweep passes them."""

    def __init__(self, writer: PlanWriter, operator: ir.ScanOperatorIR, name: str) -> None:
        self.writer = writer
        self.dims = ()
        self.zero = ()
        self.definitions = {}
        self.extents = {}
        self.locals = {}
        self._memo = {}
        self._sweeps = {}
        self._uses = Counter()
        self.empty = False
        names = [f"k_{p.name}" for p in operator.carry] + [f"q_{p.name}" for p in operator.params]
        self.bound = dict(
            zip([p.name for p in (*operator.carry, *operator.params)], names, strict=True)
        )
        self.writer.functions.append(f"def {name}({', '.join(names)}):")
        for assign in operator.body:
            (target,) = assign.targets
            self.bound[target] = self.value(assign.value, ())
        results = [
            self.typed(result, (), param.type.dtype)
            for result, param in zip(operator.results, operator.carry, strict=True)
        ]
        self.emit(f"return ({', '.join(results)},)")

    def emit(self, line: str) -> None:
        self.writer.functions.append(f"    {line}")


def scan_step(writer: PlanWriter, operator: ir.ScanOperatorIR) -> str:
    """The name of the generated step function of ``operator`` (written once)."""
    known = writer.steps.get(operator)
    if known is None:
        known = writer.new_name("step")
        writer.steps[operator] = known
        ScanStep(writer, operator, known)
    return known
