"""A program's stencils as straight NumPy slicing: the fast path of embedded NumPy runs.

Running the definition builds an ``EmbeddedField`` per operation and intersects domains on
every call. A program whose stencils use only pointwise arithmetic, builtins, casts and
shifted reads has a fixed sequence of array operations instead: ``plan_program`` writes it
as one Python function from the typed IR, once per program, and each call only slices::

    SlicePlan(*args)
      key = field shapes + the scalars named by domain= bounds
      table = slices per read, made once per key       (_slice_table)
      run(*args, table)                                 generated: v1 = inp[S[0]]; ...

Each stencil's expressions are evaluated over its output domain; a local read at offsets is
computed once over its extent around the domain (``Stencil.local_extents``) and sliced, and
deleted after its last read. Each operation converts its operands to the dtype the IR gives
it, as the C translation does. A stencil has two blocks where its outputs allow: on small
domains its values go through temporaries and are stored once (fewest Python calls), on
large ones (``LARGE_DOMAIN`` points) each output is evaluated in place
(``np.add(o, x, out=o)``), sparing a temporary and a copy per output. A scan is a loop over
its axis calling its generated step on whole planes, storing them with the axis outermost.
``concat_where`` and scans read at a shift along their axis have no plan (the definition
runs): ``plan_program`` returns ``None``, and says why in ``unplanned_reason``.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from backends.arrayapi.elementwise import gamma as _gamma
from pipeline.dsl.arguments import resolve_domain
from pipeline.dsl.ir.nodes import (
    BinaryOp,
    Call,
    Cast,
    Expr,
    Literal,
    ProgramIR,
    Ref,
    Scan,
    ScanOperatorIR,
    Stencil,
    Type,
    UnaryOp,
)
from pipeline.dsl.passes.traversal import children, walk
from pipeline.dsl.passes.typing_ import promote
from pipeline.dsl.regions import Bound
from pipeline.dsl.types import FieldType, ScalarType

__all__ = ["LARGE_DOMAIN", "SlicePlan", "plan_program"]

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

#: Points of a stencil's domain from which it is evaluated in its outputs (``np.add(o, x,
#: out=o)``) rather than in temporaries stored once: at that size (256 KiB of float64) a
#: temporary costs page faults and a pass over memory, below it the ufuncs' keyword calls
#: and strided outputs cost more than they save.
LARGE_DOMAIN = 1 << 15

Box = tuple[tuple[int, int], ...]  # (lower, upper) offsets around the domain, per dimension


class _Unplanned(Exception):
    """A construct the plan does not cover (the definition runs instead)."""


@attrs.frozen
class _Read:
    """One slice a call takes: of a parameter or a local, over ``box`` moved by ``offsets``.

    ``origin`` is None for parameters (indexed absolutely), else where the sliced local
    starts relative to the domain's start (its extent's lower bounds); ``axes`` says per
    dimension of the domain whether the array has it (else: a new axis, or a local's axis of
    size 1).
    """

    stencil: int
    offsets: tuple[int, ...]
    box: Box
    origin: tuple[int, ...] | None
    axes: tuple[bool, ...]


@attrs.frozen
class SlicePlan:
    """The generated function of one program and the slices it takes.

    Called with the checked arguments, in parameter order; writes the outputs in place.

    Attributes:
        source: the generated Python (what ``run`` is), for reading and debugging.
        large_domain: the number of points from which a stencil's domain counts as large,
            so that it runs its block that evaluates in the outputs (where it has one).
    """

    ir: ProgramIR = attrs.field(repr=False)
    source: str = attrs.field(repr=False)
    run: Callable[..., None] = attrs.field(repr=False)
    reads: tuple[_Read, ...] = attrs.field(repr=False)
    large_domain: int = LARGE_DOMAIN
    # The parameters whose shape (fields) or value (named by domain= bounds) decide the slices.
    _fields: tuple[int, ...] = attrs.field(init=False, repr=False, eq=False)
    _bounds: tuple[int, ...] = attrs.field(init=False, repr=False, eq=False)
    _tables: dict[tuple[Any, ...], tuple[Any, ...]] = attrs.field(
        init=False, factory=dict, repr=False, eq=False
    )

    def __attrs_post_init__(self) -> None:
        params = self.ir.params
        bounds = _bound_params(self.ir)
        fields = tuple(i for i, p in enumerate(params) if isinstance(p.type, FieldType))
        object.__setattr__(self, "_fields", fields)
        object.__setattr__(
            self, "_bounds", tuple(i for i, p in enumerate(params) if p.name in bounds)
        )

    def __call__(self, *args: Any) -> None:
        key = (*(args[i].shape for i in self._fields), *(int(args[i]) for i in self._bounds))
        table = self._tables.get(key)
        if table is None:
            table = _slice_table(self, args)
            if len(self._tables) < 64:  # a program called on ever new shapes stays bounded
                self._tables[key] = table
        self.run(*args, table)


def _bound_params(ir: ProgramIR) -> frozenset[str]:
    names: set[str] = set()
    for stencil in ir.stencils:
        for target in stencil.outputs:
            for pair in target.slices:
                names.update(b.param for b in pair if isinstance(b, Bound) and b.param)
    return frozenset(names)


def _slice_table(plan: SlicePlan, args: Sequence[Any]) -> tuple[Any, ...]:
    """Per stencil, 0 when its domain is empty, 1 when it is small, 2 when large (at least
    ``plan.large_domain`` points); then per read its index tuple."""
    ir = plan.ir
    values = {p.name: a for p, a in zip(ir.params, args, strict=True)}
    domains: list[tuple[tuple[int, int], ...] | None] = []
    for stencil in ir.stencils:
        target = stencil.outputs[0]
        domain = resolve_domain(target.slices, values[target.name].shape, values)
        domains.append(None if any(b <= a for a, b in domain) else domain)
    table: list[Any] = [
        0 if d is None else 1 + (math.prod(b - a for a, b in d) >= plan.large_domain)
        for d in domains
    ]
    for read in plan.reads:
        found = domains[read.stencil]
        if found is None:
            table.append(None)
            continue
        index: list[slice | None] = []
        for (start, stop), offset, (lower, upper), present, origin in zip(
            found, read.offsets, read.box, read.axes,
            read.origin or (0,) * len(found), strict=True,
        ):
            if not present:
                # A parameter lacking the dimension gets a new axis; a local has one of size 1.
                index.append(None if read.origin is None else slice(None))
                continue
            base = (start if read.origin is None else 0) + lower + offset - origin
            index.append(slice(base, base + (stop - start) + upper - lower))
        table.append(tuple(index))
    return tuple(table)


def plan_program(ir: ProgramIR, *, large_domain: int = LARGE_DOMAIN) -> SlicePlan | None:
    """The slicing plan of ``ir``, or None when a construct needs the definition to run.

    ``large_domain``: see ``SlicePlan.large_domain`` (0 evaluates every stencil that can be
    in its outputs, whatever its size).
    """
    plan = _plan(ir)[0]
    return None if plan is None else attrs.evolve(plan, large_domain=large_domain)


def unplanned_reason(ir: ProgramIR) -> str | None:
    """Why ``ir`` has no plan (None: it has one)."""
    return _plan(ir)[1]


def _plan(ir: ProgramIR) -> tuple[SlicePlan | None, str | None]:
    writer = _Writer(ir)
    try:
        for number, stencil in enumerate(ir.stencils):
            writer.stencil(number, stencil)
    except _Unplanned as reason:
        return None, str(reason)
    params = ", ".join(f"a_{p.name}" for p in ir.params)
    body = _free_after_last_use(_inline_single_uses(writer.lines))
    source = "\n".join([
        *_inline_single_uses(writer.functions),
        f"def run({params}, T):",
        *body,
        "    return None",
        "",
    ])
    namespace: dict[str, Any] = {"np": np, "_gamma": _gamma, "_sweep": _sweep}
    namespace.update(writer.constants)
    exec(compile(source, f"<slice plan of {ir.name}>", "exec"), namespace)
    return SlicePlan(ir, source, namespace["run"], tuple(writer.reads)), None


class _Writer:
    """Writes the body of ``run``: one block per stencil, one line per operation."""

    def __init__(self, ir: ProgramIR) -> None:
        self.ir = ir
        self.params = {p.name: p.type for p in ir.params}
        self.lines: list[str] = []
        self.reads: list[_Read] = []
        self.constants: dict[str, Any] = {}
        self.functions: list[str] = []  # the scan steps, defined before run
        self._steps: dict[ScanOperatorIR, str] = {}
        self._counter = 0
        # Converted scalar parameters, by name: each is converted once per call.
        self._scalars: dict[str, str] = {}

    def _name(self, prefix: str = "v") -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def _slot(self, read: _Read) -> int:
        self.reads.append(read)
        # The table starts with one flag per stencil (its domain is non-empty).
        return len(self.ir.stencils) + len(self.reads) - 1

    def stencil(self, number: int, stencil: Stencil) -> None:
        """The block of ``stencil``; two when some output can be evaluated in place (for
        small domains in temporaries stored once, for large ones in the outputs)."""
        dims = _output_dims(self.ir, stencil)
        name = stencil.operator_name
        if not any(_StencilCode(self, number, stencil, dims).in_place(stencil)):
            self.lines.append(f"    if T[{number}]:  # {name}")
            self._block(number, stencil, dims, in_place=False)
            return
        self.lines.append(f"    if T[{number}] == 1:  # {name}, on a small domain")
        self._block(number, stencil, dims, in_place=False)
        self.lines.append(f"    elif T[{number}]:  # {name}, on a large one: in its outputs")
        self._block(number, stencil, dims, in_place=True)

    def _block(self, number: int, stencil: Stencil, dims: tuple[str, ...], in_place: bool) -> None:
        code = _StencilCode(self, number, stencil, dims)
        where = code.in_place(stencil) if in_place else (False,) * len(stencil.results)
        values = [
            None if inside else code.value(result, code.zero)
            for result, inside in zip(stencil.results, where, strict=True)
        ]
        for target, result, value in zip(stencil.outputs, stencil.results, values, strict=True):
            slot = self._slot(_Read(number, (0,) * len(dims), code.zero, None, (True,) * len(dims)))
            if value is not None:
                code.emit(f"a_{target.name}[T[{slot}]] = {value}")
                continue
            view = f"o{slot}"
            code.emit(f"{view} = a_{target.name}[T[{slot}]]")
            code.into(result, code.zero, view)
        if code.empty:
            code.emit("pass")

    def scalar(self, name: str, dtype: np.dtype[Any]) -> str:
        """The variable holding scalar parameter ``name`` as a NumPy scalar of ``dtype``."""
        known = self._scalars.get(name)
        if known is None:
            known = f"s_{name}"
            self._scalars[name] = known
            self.constants[f"t_{name}"] = dtype.type
            self.lines.insert(0, f"    {known} = t_{name}(a_{name})")
        return known

    def scan_step(self, operator: ScanOperatorIR) -> str:
        """The name of the generated step function of ``operator`` (written once)."""
        known = self._steps.get(operator)
        if known is None:
            known = self._name("step")
            self._steps[operator] = known
            _ScanStep(self, operator, known)
        return known

    def constant(self, value: Any) -> str:
        name = f"c{len(self.constants)}"
        self.constants[name] = value
        return name


def _output_dims(ir: ProgramIR, stencil: Stencil) -> tuple[str, ...]:
    dims: tuple[str, ...] | None = None
    for target in stencil.outputs:
        target_type = ir.param(target.name).type
        assert isinstance(target_type, FieldType)
        if dims is not None and target_type.dim_names != dims:
            raise _Unplanned(f"the outputs of {stencil.operator_name!r} differ in dimensions")
        dims = target_type.dim_names
    assert dims is not None
    return dims


class _StencilCode:
    """The lines of one stencil: each expression over a box around the domain, memoized."""

    def __init__(
        self, writer: _Writer, number: int, stencil: Stencil, dims: tuple[str, ...]
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
        self._memo: dict[tuple[Expr, Box], str] = {}
        self._sweeps: dict[tuple[ScanOperatorIR, tuple[Expr, ...], Box], str] = {}
        self.empty = True
        # How often each expression occurs in the stencil (an over-count where the same
        # expression is evaluated over different boxes): one used once may take its user's
        # output as its own.
        trees = (*stencil.results, *self.definitions.values())
        self._uses = Counter(node for tree in trees for node in walk(tree))

    def in_place(self, stencil: Stencil) -> tuple[bool, ...]:
        """Per result, whether it can be evaluated in its output (``into``): it is a ufunc
        of its output's dtype used only there, the outputs have dimensions, and the stencil
        reads none of them (the checks make sure that no other field it reads shares memory
        with one)."""
        trees = (*stencil.results, *self.definitions.values())
        read = {n.name for tree in trees for n in walk(tree) if isinstance(n, Ref)}
        outputs = [t.name for t in stencil.outputs]
        if read & set(outputs) or not self.dims:  # a 0-d array indexed by () is a scalar
            return (False,) * len(outputs)
        return tuple(
            self._ufunc(result) is not None
            and self._uses[result] == 1
            and _dtype(result.type) == _dtype(self.writer.params[name])
            for result, name in zip(stencil.results, outputs, strict=True)
        )

    def into(self, expr: Expr, box: Box, out: str) -> None:
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

    def _ufunc(self, expr: Expr) -> tuple[str, tuple[Expr, ...], np.dtype[Any]] | None:
        """The ufunc ``expr`` is, its operands and the dtype they are converted to; None
        when it is no single ufunc."""
        dtype = _dtype(expr.type)
        boolean = np.dtype(np.bool_)
        match expr:
            case UnaryOp(op="-", operand=operand):
                return "np.negative", (operand,), dtype
            case UnaryOp(op="~", operand=operand):
                return "np.invert", (operand,), boolean
            case BinaryOp(op=op, left=left, right=right) if op in {"&", "|"}:
                return _UFUNCS[op], (left, right), boolean
            case BinaryOp(op=op, left=left, right=right) if op in _COMPARISONS:
                assert left.type is not None and right.type is not None
                return _UFUNCS[op], (left, right), promote(left.type, right.type, op, None)[0]
            case BinaryOp(op=op, left=left, right=right) if op in _ARITHMETIC:
                return _UFUNCS[op], (left, right), dtype
            case Call(function="power", args=(a, b)):
                return "np.power", (a, b), dtype
            case Call(function=function, args=(a, b)) if function in _BINARY_FUNCTIONS:
                return _BINARY_FUNCTIONS[function], (a, b), dtype
            case Call(function=function, args=(a,)) if function in _UNARY_FUNCTIONS:
                if function in {"gamma", "isfinite", "isinf", "isnan"} or (
                    _dtype(a.type).kind in "iu" and function in {"floor", "ceil", "trunc"}
                ):
                    return None
                return f"np.{function}", (a,), dtype
        return None

    def _boxes(self, stencil: Stencil) -> dict[str, Box]:
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
        name = self.writer._name()
        self.emit(f"{name} = {text}")
        return name

    def typed(self, expr: Expr, box: Box, dtype: np.dtype[Any]) -> str:
        """``expr``'s value converted to ``dtype`` (where its own dtype differs)."""
        value = self.value(expr, box)
        if _dtype(expr.type) == dtype:
            return value
        return self.let(f"{value}.astype({self.writer.constant(dtype)})")

    def value(self, expr: Expr, box: Box) -> str:
        key = (expr, box)
        known = self._memo.get(key)
        if known is None:
            known = self._value(expr, box)
            self._memo[key] = known
        return known

    def _value(self, expr: Expr, box: Box) -> str:
        dtype = _dtype(expr.type)
        match expr:
            case Literal(value=value):
                return self.writer.constant(dtype.type(value))
            case Ref(name=name) if name in self.bound:
                return self.bound[name]
            case Scan(operator=operator, args=args, component=component):
                return self.let(f"{self._sweep(operator, args, box)}[{component}]")
            case Ref(name=name, offsets=offsets) if name in self.definitions:
                return self._local(name, dict(offsets), box)
            case Ref(name=name, offsets=offsets):
                return self._parameter(name, dict(offsets), box)
            case UnaryOp(op="+", operand=operand):
                return self.typed(operand, box, dtype)
            case UnaryOp(op="~", operand=operand):
                return self.let(f"~{self.typed(operand, box, np.dtype(np.bool_))}")
            case UnaryOp(op="-", operand=operand):
                return self.let(f"-{self.typed(operand, box, dtype)}")
            case BinaryOp(op=op, left=left, right=right) if op in {"&", "|"}:
                boolean = np.dtype(np.bool_)
                x, y = self.typed(left, box, boolean), self.typed(right, box, boolean)
                return self.let(f"{x} {op} {y}")
            case BinaryOp(op=op, left=left, right=right) if op in _COMPARISONS:
                assert left.type is not None and right.type is not None
                common = promote(left.type, right.type, op, None)[0]
                x, y = self.typed(left, box, common), self.typed(right, box, common)
                return self.let(f"{x} {op} {y}")
            case BinaryOp(op=op, left=left, right=right) if op in _ARITHMETIC:
                x, y = self.typed(left, box, dtype), self.typed(right, box, dtype)
                return self.let(f"{x} {op} {y}")
            case Call(function="where", args=(cond, a, b)):
                c = self.typed(cond, box, np.dtype(np.bool_))
                x, y = self.typed(a, box, dtype), self.typed(b, box, dtype)
                return self.let(f"np.where({c}, {x}, {y})")
            case Call(function="power", args=(a, b)):
                x, y = self.typed(a, box, dtype), self.typed(b, box, dtype)
                return self.let(f"{x} ** {y}")
            case Call(function=function, args=(a, b)) if function in _BINARY_FUNCTIONS:
                x, y = self.typed(a, box, dtype), self.typed(b, box, dtype)
                return self.let(f"{_BINARY_FUNCTIONS[function]}({x}, {y})")
            case Call(function=function, args=(a,)) if function in _UNARY_FUNCTIONS:
                return self._unary(function, a, box, dtype)
            case Cast(value=value):
                return self.typed(value, box, dtype)
        raise _Unplanned(f"{type(expr).__name__} has no slicing plan")

    def _sweep(self, operator: ScanOperatorIR, args: tuple[Expr, ...], box: Box) -> str:
        """The variable holding the list of the scan's carry components over ``box``; each
        operator and arguments swept once."""
        key = (operator, args, box)
        known = self._sweeps.get(key)
        if known is not None:
            return known
        if operator.axis not in self.dims:
            raise _Unplanned(f"the scan {operator.name!r} sweeps a dimension the domain lacks")
        axis = self.dims.index(operator.axis)
        if box[axis] != (0, 0):
            raise _Unplanned(f"the scan {operator.name!r} is read at a shift along its axis")
        values = [
            self.typed(arg, box, param.type.dtype)
            for arg, param in zip(args, operator.params, strict=True)
        ]
        carry = [param.type.dtype for param in operator.carry]
        init = self.writer.constant(
            tuple(dtype.type(v) for dtype, v in zip(carry, operator.init, strict=True))
        )
        step = self.writer.scan_step(operator)
        known = self.let(
            f"_sweep({step}, {axis}, {operator.forward}, {init}, "
            f"{self.writer.constant(tuple(carry))}, ({', '.join(values)},))"
        )
        self._sweeps[key] = known
        return known

    def _unary(self, function: str, a: Expr, box: Box, dtype: np.dtype[Any]) -> str:
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
        read = _Read(self.number, tuple(offsets.get(d, 0) for d in self.dims), box, None, axes)
        return self.let(f"a_{name}[T[{self.writer._slot(read)}]]")

    def _local(self, name: str, offsets: Mapping[str, int], box: Box) -> str:
        definition = self.definitions[name]
        if not isinstance(definition.type, FieldType):
            return self.value(definition, self.zero)  # a scalar: the same at every point
        if not _reads_a_field(definition, self.definitions, self.writer.params):
            raise _Unplanned(f"the local {name!r} is a field that reads no field")
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
        read = _Read(self.number, moved, box, origin, axes)
        return self.let(f"{array}[T[{self.writer._slot(read)}]]")

    def _axes(self, name: str, field_type: FieldType) -> tuple[bool, ...]:
        own = field_type.dim_names
        present = [d for d in self.dims if d in own]
        if tuple(present) != own:
            raise _Unplanned(
                f"{name!r} has dimensions {own}, not a subsequence of the domain's {self.dims}"
            )
        return tuple(d in own for d in self.dims)


_DEFINITION = re.compile(r"^(\s+)(v\d+) = (.*)$")
_NAME = re.compile(r"\bv\d+\b")


def _inline_single_uses(lines: list[str]) -> list[str]:
    """Each value used once written into its user's expression instead of a variable.

    An intermediate array bound to a name has a second reference, so NumPy cannot reuse its
    buffer for the next operation (its temporary elision needs a reference count of one):
    ``(a + b) + c`` allocates once, ``v1 = a + b; v2 = v1 + c`` twice, which on large grids
    costs a page fault per page. Values do not move across a store (outputs may be read).
    """
    uses: dict[str, int] = {}
    for line in lines:
        for name in _NAME.findall(line.partition(" = ")[2] if _DEFINITION.match(line) else line):
            uses[name] = uses.get(name, 0) + 1
    pending: dict[str, tuple[str, str]] = {}  # single-use (indent, definition), by name
    result: list[str] = []
    for line in lines:
        match = _DEFINITION.match(line)
        text = match.group(3) if match else line
        text = _NAME.sub(lambda m: f"({pending.pop(m.group())[1]})" if m.group() in pending else
                         m.group(), text)
        if match and uses.get(match.group(2)) == 1:
            pending[match.group(2)] = (match.group(1), text)
            continue
        if pending and not match:  # a store, a return or a new block: nothing moves past it
            for name, (indent, value) in pending.items():
                result.append(f"{indent}{name} = {value}")
            pending.clear()
        result.append(f"{match.group(1)}{match.group(2)} = {text}" if match else text)
    assert not pending, "every single-use value has its user"
    return result


def _free_after_last_use(lines: list[str]) -> list[str]:
    """``del`` each variable after the line that reads it last.

    A variable lives until ``run`` returns otherwise: on large grids an intermediate whose
    memory is given back as soon as it is dead lets the next ones reuse it, instead of
    mapping fresh pages (measured: hdiff 1.15x NumPy's time without, 0.95x with).
    """
    last: dict[str, int] = {}
    for number, line in enumerate(lines):
        for name in _NAME.findall(line):
            last[name] = number
    dead: dict[int, list[str]] = {}
    for name, number in last.items():
        dead.setdefault(number, []).append(name)
    result: list[str] = []
    for number, line in enumerate(lines):
        result.append(line)
        if number in dead:
            indent = line[: len(line) - len(line.lstrip())]
            result.append(f"{indent}del {', '.join(dead[number])}")
    return result


def _dtype(type_: Type | None) -> np.dtype[Any]:
    assert type_ is not None, "the plan is written from typed IR"
    return type_.dtype


def _reads_a_field(expr: Expr, definitions: Mapping[str, Expr], params: Mapping[str, Type]) -> bool:
    match expr:
        case Ref(name=name) if name in definitions:
            return _reads_a_field(definitions[name], definitions, params)
        case Ref(name=name):
            return isinstance(params[name], FieldType)
        case Literal():
            return False
    return any(_reads_a_field(child, definitions, params) for child in children(expr))


class _ScanStep(_StencilCode):
    """The lines of one scan operator's step: ``step(*carry, *arguments) -> new carry``,
    on planes (or numbers) as the sweep passes them."""

    def __init__(self, writer: _Writer, operator: ScanOperatorIR, name: str) -> None:
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


def _sweep(
    step: Callable[..., tuple[Any, ...]],
    axis: int,
    forward: bool,
    init: tuple[Any, ...],
    dtypes: tuple[np.dtype[Any], ...],
    args: tuple[Any, ...],
) -> list[np.ndarray[Any, Any]]:
    """Run ``step`` plane by plane along ``axis`` (up or down): the carry components over
    the arguments' common shape, one array each."""
    arrays = [a for a in args if isinstance(a, np.ndarray) and a.ndim]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    first_plane: tuple[slice | int, ...] = (*(slice(None),) * axis, 0)
    others = tuple(d for d in range(len(shape)) if d != axis)
    planes: list[Iterator[Any]] = []
    for a in args:
        if not (isinstance(a, np.ndarray) and a.ndim):
            planes.append(itertools.repeat(a))
        elif a.shape[axis] == 1:  # broadcast along the axis: the same plane at every point
            planes.append(itertools.repeat(a[first_plane]))
        else:
            moved = a.transpose(axis, *others)
            planes.append(iter(moved if forward else moved[::-1]))
    points = range(shape[axis]) if forward else range(shape[axis] - 1, -1, -1)
    # The axis first in memory: each step stores its planes contiguously (the arguments,
    # K-contiguous in the harness, are read strided as NumPy slicing would), and a sweep
    # reading this one reads them contiguously.
    first = (shape[axis], *shape[:axis], *shape[axis + 1 :])
    results = [np.empty(first, dtype) for dtype in dtypes]
    carry = init
    # Broadcast arguments repeat without end: the points bound the loop.
    for point, values in zip(points, zip(*planes, strict=False), strict=False):
        carry = step(*carry, *values)
        for result, value in zip(results, carry, strict=True):
            result[point] = value
    back = (*range(1, axis + 1), 0, *range(axis + 1, len(shape)))
    return [result.transpose(back) for result in results]
