"""Type inference: fill in every expression's type and check dimensions and dtypes.

Rules (NumPy 2 style, minus implicit mixing of strong dtypes):
- two fields/scalars of different dtypes need an explicit ``astype``;
- Python literals are *weak*: an int literal takes the other operand's dtype (bool -> int64),
  a float literal keeps a float dtype and turns an integer or bool into float64;
- ``/`` of integers is float64; comparisons give bool; ``& | ~`` need booleans;
- math functions of integers are float64 (``floor``/``ceil``/``abs`` keep integers);
- a field of fewer dimensions broadcasts against one of more;
- a dimension and its staggered counterpart never meet in one value; a half shift
  (``IHalf + 0.5``) turns a value over one into a value over the other (ADR 0027).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs
import numpy as np

from pipeline.dsl.builtins import MATH_FUNCTIONS, PREDICATES, SCALAR_CHOICE
from pipeline.dsl.errors import DSLError, DSLTypeError
from pipeline.dsl.ir import nodes as ir
from pipeline.dsl.types import Dimension, FieldType, ScalarType, bool_, float64, int64

__all__ = ["infer_types", "promote", "refill_types", "type_operator", "type_scan_operator"]

_ARITHMETIC = frozenset({"+", "-", "*", "/", "//", "%", "**"})
_COMPARISON = frozenset({"==", "!=", "<", "<=", ">", ">="})
_LOGICAL = frozenset({"&", "|"})
_KEEPS_INTEGERS = frozenset({"floor", "ceil", "trunc", "abs"})
_BINARY_FUNCTIONS = frozenset({"minimum", "maximum", "power", "fmod"})


def _error(message: str, loc: ir.SourceLocation | None) -> DSLError:
    return DSLTypeError.at(loc, message)


def _logical_not(expr: ir.UnaryOp, operand: ir.Expr) -> ir.UnaryOp:
    """``not x`` of a bool scalar: ``~x`` (on a bool, logical); on anything else an error
    that says what to write instead.

    Raises:
        DSLTypeError: ``x`` is a field, or a scalar of another dtype.
    """
    t = operand.type
    assert t is not None
    if isinstance(t, FieldType):
        raise _error(
            "`not` is not supported on fields (a field has no single truth value); use ~ "
            "for a boolean field, or where(c, a, b)",
            expr.loc,
        )
    if t.dtype != bool_:
        raise _error(
            f"`not` takes a bool scalar, got {t.dtype}; compare it (x == 0) for its truth",
            expr.loc,
        )
    return attrs.evolve(expr, op="~", operand=operand, type=t)


def _dtype(t: ir.Type) -> np.dtype[Any]:
    return t.dtype


def _weak(t: ir.Type) -> bool:
    return isinstance(t, ScalarType) and t.weak


def _merge_dims(
    types: list[ir.Type], loc: ir.SourceLocation | None = None, strict: bool = True
) -> tuple[Dimension, ...] | None:
    fields = [t for t in types if isinstance(t, FieldType)]
    if not fields:
        return None
    dims = list(max(fields, key=lambda f: len(f.dims)).dims)
    for f in fields:
        for d in f.dims:
            if d.counterpart in dims and not strict:
                continue  # refilled types: the half shifts that met them were checked
            if d.counterpart in dims:
                cell, edge = (d.counterpart, d) if d.is_staggered else (d, d.counterpart)
                raise _error(
                    f"this combines a field over {cell} with a field over {edge}: cells and "
                    f"their edges are different points; read one at the other's points with a "
                    f"half shift (x({edge} + 0.5) reads a field x over {cell} at the edges, "
                    f"y({cell} + 0.5) a field y over {edge} at the cells)",
                    loc,
                )
            if d not in dims:
                dims.append(d)
    return tuple(dims)


def _dims(t: FieldType) -> str:
    return ", ".join(str(d) for d in t.dims)


def _make(dims: tuple[Dimension, ...] | None, dtype: np.dtype[Any], weak: bool) -> ir.Type:
    if dims is None:
        return ScalarType(dtype, weak)
    return FieldType(dims, dtype)


def _weak_kind(dtype: np.dtype[Any]) -> str:
    return "b" if dtype == bool_ else ("i" if dtype.kind in "iu" else "f")


def promote(
    a: ir.Type, b: ir.Type, what: str, loc: ir.SourceLocation | None
) -> tuple[np.dtype[Any], bool]:
    """The common dtype of two operands, and whether it is weak (both weak)."""
    if _weak(a) and _weak(b):
        kinds = {_weak_kind(a.dtype), _weak_kind(b.dtype)}
        return (float64 if "f" in kinds else int64 if "i" in kinds else bool_), True
    if _weak(a) or _weak(b):
        weak, strong = (a, b) if _weak(a) else (b, a)
        kind = _weak_kind(weak.dtype)
        if kind == "b":
            return strong.dtype, False
        if kind == "i":
            return (int64 if strong.dtype == bool_ else strong.dtype), False
        return (strong.dtype if strong.dtype.kind == "f" else float64), False
    if a.dtype != b.dtype:
        raise _error(
            f"{what} mixes {a.dtype} and {b.dtype}; convert one side explicitly with "
            f"astype(x, {a.dtype}) or astype(x, {b.dtype})",
            loc,
        )
    return a.dtype, False


class _Typer:
    def __init__(self, env: Mapping[str, ir.Type], strict: bool = True) -> None:
        self.env = dict(env)
        self.strict = strict

    def merge(self, types: list[ir.Type], loc: ir.SourceLocation | None) -> Any:
        """``_merge_dims`` as strict as this typer."""
        return _merge_dims(types, loc, self.strict)

    def expr(self, expr: ir.Expr) -> ir.Expr:
        match expr:
            case ir.Literal(type=ScalarType(weak=False)):
                return expr  # a constant of a declared dtype (a bound parameter, a fold)
            case ir.Literal(value=value):
                dtype = (
                    bool_
                    if isinstance(value, bool)
                    else int64
                    if isinstance(value, int)
                    else float64
                )
                return attrs.evolve(expr, type=ScalarType(dtype, weak=True))
            case ir.Ref(name=name, offsets=offsets):
                t = self.env[name]
                if isinstance(t, ScalarType):
                    return attrs.evolve(expr, offsets=(), type=t)
                for dim, _ in offsets:
                    if dim not in t.dim_names:
                        raise _error(
                            f"shift along {dim}, but {name!r} has dimensions ({_dims(t)})",
                            expr.loc,
                        )
                return attrs.evolve(expr, type=t)
            case ir.UnaryOp(op=op, operand=operand):
                typed = self.expr(operand)
                operand_type = typed.type
                assert operand_type is not None
                t = operand_type
                if op == "not":
                    return _logical_not(expr, typed)
                if op == "~" and t.dtype != bool_:
                    raise _error(f"~ needs a boolean operand, got {t.dtype}", expr.loc)
                if op in "-+" and t.dtype == bool_:
                    raise _error(
                        f"unary {op} on booleans is not supported; use ~ or astype", expr.loc
                    )
                return attrs.evolve(expr, operand=typed, type=t)
            case ir.BinaryOp(op=op, left=left, right=right):
                return self.binary(expr, self.expr(left), self.expr(right))
            case ir.Call(args=args):
                return self.call(expr, tuple(self.expr(a) for a in args))
            case ir.Cast(value=value, dtype=dtype):
                typed = self.expr(value)
                assert typed.type is not None
                if expr.constructor is not None and isinstance(typed.type, FieldType):
                    raise _error(
                        f"{expr.constructor}() converts scalars only (a field has no single "
                        f"value when the definition runs embedded); convert fields with "
                        f"astype(x, {dtype}) or {dtype}(x)",
                        expr.loc,
                    )
                return attrs.evolve(
                    expr, value=typed, type=_make(_merge_dims([typed.type]), dtype, False)
                )
            case ir.OperatorCall(args=args):
                return self.operator_call(expr, tuple(self.expr(a) for a in args))
            case ir.Scan(args=args):
                return self.scan(expr, tuple(self.expr(a) for a in args))
            case ir.ConcatWhere(inside=inside, outside=outside):
                return self.concat_where(expr, self.expr(inside), self.expr(outside))
            case ir.Shift(value=value):
                return _shifted(expr, self.expr(value))
        raise TypeError(f"not an IR expression: {expr!r}")

    def concat_where(self, expr: ir.ConcatWhere, inside: ir.Expr, outside: ir.Expr) -> ir.Expr:
        assert inside.type is not None and outside.type is not None
        dims = self.merge([inside.type, outside.type], expr.loc)
        names = {d.name for d in dims or ()}
        missing = sorted(expr.region.dims - names)
        if missing:
            raise _error(
                f"concat_where's condition is on {', '.join(missing)}, which its values lack "
                f"(they are over {', '.join(sorted(names)) or 'no dimension'}); a condition "
                "can only choose along the values' dimensions",
                expr.loc,
            )
        for param in sorted(expr.region.params):
            bound_type = self.env.get(param)
            if not isinstance(bound_type, ScalarType) or bound_type.dtype.kind not in "iu":
                raise _error(f"the index bound {param!r} must be an integer scalar", expr.loc)
        dtype, weak = promote(inside.type, outside.type, "concat_where()", expr.loc)
        _check_literals_fit((inside, outside), dtype)
        return attrs.evolve(
            expr, inside=inside, outside=outside, type=_make(dims, dtype, weak)
        )

    def scan(self, expr: ir.Scan, args: tuple[ir.Expr, ...]) -> ir.Expr:
        operator = type_scan_operator(expr.operator)
        for param, arg in zip(operator.params, args, strict=True):
            assert arg.type is not None and isinstance(param.type, ScalarType)
            if not (_weak(arg.type) or arg.type.dtype == param.type.dtype):
                raise _error(
                    f"argument {param.name!r} of scan operator {operator.name!r} is "
                    f"{param.type.dtype}, got {arg.type}; convert with "
                    f"astype(x, {param.type.dtype})",
                    arg.loc or expr.loc,
                )
        dims = self.merge([a.type for a in args if a.type is not None], expr.loc)
        if dims is None or operator.axis not in {d.name for d in dims}:
            got = ", ".join(d.name for d in dims or ())
            raise _error(
                f"scan operator {operator.name!r} sweeps {operator.axis}, but no argument has "
                f"dimension {operator.axis} (they have: {got or 'none'}); pass at least one "
                f"field over {operator.axis}",
                expr.loc,
            )
        dtype = operator.carry[expr.component].type.dtype
        return attrs.evolve(expr, operator=operator, args=args, type=FieldType(dims, dtype))

    def binary(self, expr: ir.BinaryOp, left: ir.Expr, right: ir.Expr) -> ir.Expr:
        a, b, op = left.type, right.type, expr.op
        assert a is not None and b is not None
        dims = self.merge([a, b], expr.loc)
        if op in _LOGICAL:
            if a.dtype != bool_ or b.dtype != bool_:
                raise _error(f"{op} needs boolean operands, got {a.dtype} and {b.dtype}", expr.loc)
            return attrs.evolve(
                expr, left=left, right=right, type=_make(dims, bool_, _weak(a) and _weak(b))
            )
        dtype, weak = promote(a, b, f"{op!r}", expr.loc)
        _check_literals_fit((left, right), dtype)
        if op in _COMPARISON:
            return attrs.evolve(expr, left=left, right=right, type=_make(dims, bool_, weak))
        if dtype == bool_:
            raise _error(
                f"arithmetic {op!r} on booleans is not supported; use astype first", expr.loc
            )
        if op == "/" and dtype.kind in "iu":
            dtype = float64
        return attrs.evolve(expr, left=left, right=right, type=_make(dims, dtype, weak))

    def call(self, expr: ir.Call, args: tuple[ir.Expr, ...]) -> ir.Expr:
        types_ = [a.type for a in args]
        assert all(t is not None for t in types_)
        name = expr.function
        dims = self.merge(types_, expr.loc)  # type: ignore[arg-type]
        if name == SCALAR_CHOICE:
            condition = types_[0]
            if isinstance(condition, FieldType):
                raise _error(
                    f"this condition is a field ({condition}); `if` and `a if c else b` "
                    "choose on scalars only. Choose per point with where(cond, a, b)",
                    expr.loc,
                )
            if condition is not None and condition.dtype != bool_:
                raise _error(
                    f"an `if` condition must be a bool scalar, got a {condition.dtype} scalar; "
                    "compare it (x > 0.0) or pass a bool_ parameter",
                    expr.loc,
                )
            expr = attrs.evolve(expr, function="where")
            name = "where"
        if name == "where":
            cond, a, b = types_
            assert cond is not None and a is not None and b is not None
            if cond.dtype != bool_:
                raise _error(
                    f"the condition of where() must be boolean, got {cond.dtype}", expr.loc
                )
            dtype, weak = promote(a, b, "where()", expr.loc)
            _check_literals_fit(args[1:], dtype)
            return attrs.evolve(expr, args=args, type=_make(dims, dtype, weak and _weak(cond)))
        if name in _BINARY_FUNCTIONS:
            a, b = types_
            assert a is not None and b is not None
            dtype, weak = promote(a, b, f"{name}()", expr.loc)
            _check_literals_fit(args, dtype)
            if dtype == bool_:
                raise _error(f"{name}() of booleans is not supported", expr.loc)
            return attrs.evolve(expr, args=args, type=_make(dims, dtype, weak))
        (t,) = types_
        assert t is not None and name in MATH_FUNCTIONS | {"abs"}
        if t.dtype == bool_:
            raise _error(f"{name}() of booleans is not supported; use astype first", expr.loc)
        if name in PREDICATES:
            return attrs.evolve(expr, args=args, type=_make(dims, bool_, _weak(t)))
        dtype = t.dtype if t.dtype.kind == "f" or name in _KEEPS_INTEGERS else float64
        return attrs.evolve(expr, args=args, type=_make(dims, dtype, _weak(t)))

    def operator_call(self, expr: ir.OperatorCall, args: tuple[ir.Expr, ...]) -> ir.Expr:
        operator = type_operator(expr.operator)
        for param, arg in zip(operator.params, args, strict=True):
            assert arg.type is not None
            _check_argument(operator.name, param.name, param.type, arg.type, arg.loc or expr.loc)
        results = operator.result_types
        result: ir.Type | None = results[0] if len(results) == 1 else None
        return attrs.evolve(expr, operator=operator, args=args, type=result)

    def assign(self, assign: ir.Assign) -> ir.Assign:
        value = self.expr(assign.value)
        if len(assign.targets) == 1:
            if value.type is None:
                raise _error(
                    "a call returning several fields must be unpacked: a, b = op(...)", assign.loc
                )
            self.env[assign.targets[0]] = value.type
        else:
            if not isinstance(value, ir.OperatorCall):
                raise _error(
                    "only a call of a field operator returning a tuple can be unpacked", assign.loc
                )
            results = value.operator.result_types
            if len(results) != len(assign.targets):
                raise _error(
                    f"{value.operator.name!r} returns {len(results)} field(s), unpacked into "
                    f"{len(assign.targets)}",
                    assign.loc,
                )
            self.env.update(zip(assign.targets, results, strict=True))
        return attrs.evolve(assign, value=value)


def _shifted(shift: ir.Shift, value: ir.Expr) -> ir.Expr:
    """The typed ``value`` (already moved) with the type ``shift`` gives it: each offset
    needs its ``source`` dimension; a half one replaces it with its own dimension."""
    t = value.type
    if not isinstance(t, FieldType):
        return value  # a scalar reads the same everywhere
    dims = list(t.dims)
    for offset in shift.offsets:
        if offset.source in dims:
            if offset.half:
                dims[dims.index(offset.source)] = offset.dimension
            continue
        if offset.half:
            raise _error(
                f"the half shift {offset} reads a field over {offset.source} and gives one "
                f"over {offset.dimension}, but this value is over ({_dims(t)}); shift a "
                f"field over {offset.source}, or one over {offset.dimension} along "
                f"{offset.dimension} by a whole number ({offset.dimension} + 1)",
                shift.loc,
            )
        if offset.dimension.counterpart in dims:
            other = offset.dimension.counterpart
            raise _error(
                f"the shift {offset} moves along {offset.dimension}, but this value is over "
                f"{other} ({_dims(t)}); shift it along {other} ({other} "
                f"{'+' if offset.value >= 0 else '-'} {abs(offset.value)}), or move it to "
                f"{offset.dimension} with a half shift ({offset.dimension} + 0.5)",
                shift.loc,
            )
        raise _error(
            f"shift along {offset.dimension}, but this value has dimensions ({_dims(t)})",
            shift.loc,
        )
    return attrs.evolve(value, type=FieldType(tuple(dims), t.dtype))


def _check_literals_fit(operands: Sequence[ir.Expr], dtype: np.dtype[Any]) -> None:
    """A Python int literal must fit the integer dtype it is used with (NumPy 2 raises)."""
    if dtype.kind not in "iu":
        return
    info = np.iinfo(dtype)
    for operand in operands:
        value = operand.value if isinstance(operand, ir.Literal) else None
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and not info.min <= value <= info.max
        ):
            raise _error(
                f"the literal {value} does not fit {dtype} (range {info.min} to {info.max}); "
                f"convert the other operand with astype(x, int64) or use a smaller constant",
                operand.loc,
            )


def _check_argument(
    callee: str, name: str, expected: ir.Type, got: ir.Type, loc: ir.SourceLocation | None
) -> None:
    if isinstance(expected, ScalarType):
        if isinstance(got, FieldType):
            raise _error(
                f"argument {name!r} of {callee!r} is a scalar ({expected}), got a {got}", loc
            )
        if not got.weak and got.dtype != expected.dtype:
            raise _error(
                f"argument {name!r} of {callee!r} is {expected.dtype}, got {got.dtype}; use astype",
                loc,
            )
        return
    assert isinstance(expected, FieldType)
    if isinstance(got, ScalarType):
        raise _error(f"argument {name!r} of {callee!r} is a field ({expected}), got a scalar", loc)
    if got.dtype != expected.dtype:
        raise _error(
            f"argument {name!r} of {callee!r} has dtype {expected.dtype}, got {got.dtype}; "
            f"convert with astype(x, {expected.dtype})",
            loc,
        )
    if not set(got.dims) <= set(expected.dims):
        raise _error(
            f"argument {name!r} of {callee!r} has dimensions ({_dims(expected)}), "
            f"got ({_dims(got)})",
            loc,
        )


# Typed operators (and scan operators) by untyped operator object: see _typed_once.
_TYPED: dict[int, ir.FieldOperatorIR] = {}


def type_operator(operator: ir.FieldOperatorIR) -> ir.FieldOperatorIR:
    """Type a field operator's body and check its results against its annotation."""
    return _typed_once(_TYPED, operator, _type_operator)


def _type_operator(operator: ir.FieldOperatorIR) -> ir.FieldOperatorIR:
    typer = _Typer({p.name: p.type for p in operator.params})
    body = tuple(typer.assign(a) for a in operator.body)
    results = tuple(typer.expr(r) for r in operator.results)
    for index, (result, declared) in enumerate(zip(results, operator.result_types, strict=True)):
        got = result.type
        assert got is not None
        which = (
            f"result {index} of {operator.name!r}"
            if len(results) > 1
            else f"the result of {operator.name!r}"
        )
        if got.dtype != declared.dtype:
            raise _error(
                f"{which} has dtype {got.dtype} but the annotation says {declared.dtype}; "
                f"convert with astype(..., {declared.dtype})",
                result.loc,
            )
        if isinstance(got, FieldType) and not set(got.dims) <= set(declared.dims):
            raise _error(
                f"{which} has dimensions ({_dims(got)}) but the annotation says "
                f"({_dims(declared)})",
                result.loc,
            )
    return attrs.evolve(operator, body=body, results=results)


_TYPED_SCANS: dict[int, ir.ScanOperatorIR] = {}
Operator = TypeVar("Operator", ir.FieldOperatorIR, ir.ScanOperatorIR)


def _typed_once(
    typed: dict[int, Operator], operator: Operator, type_it: Callable[[Operator], Operator]
) -> Operator:
    """``type_it(operator)``, once per operator object (``typed`` keeps it by id until the
    operator is collected: hashing an IR tree by value on every lookup would cost more)."""
    found = typed.get(id(operator))
    if found is None:
        found = type_it(operator)
        typed[id(operator)] = found
        weakref.finalize(operator, typed.pop, id(operator), None)
    return found


def type_scan_operator(operator: ir.ScanOperatorIR) -> ir.ScanOperatorIR:
    """Type a scan operator's body and check its new carry against the carry's dtypes."""
    return _typed_once(_TYPED_SCANS, operator, _type_scan_operator)


def _type_scan_operator(operator: ir.ScanOperatorIR) -> ir.ScanOperatorIR:
    typer = _Typer({p.name: p.type for p in (*operator.carry, *operator.params)})
    body = tuple(typer.assign(a) for a in operator.body)
    results = tuple(typer.expr(r) for r in operator.results)
    for index, (result, carry) in enumerate(zip(results, operator.carry, strict=True)):
        got = result.type
        assert got is not None
        which = f"component {index} of the new carry" if len(results) > 1 else "the new carry"
        if isinstance(got, FieldType):
            raise _error(f"{which} of {operator.name!r} is a field", result.loc)
        dtype = promote(carry.type, got, which, result.loc)[0] if _weak(got) else got.dtype
        if dtype != carry.type.dtype:
            raise _error(
                f"{which} of {operator.name!r} is {got.dtype} but the carry is "
                f"{carry.type.dtype}; convert with astype(..., {carry.type.dtype})",
                result.loc,
            )
    return attrs.evolve(operator, body=body, results=results)


def _type_stencil(
    stencil: ir.Stencil, env: Mapping[str, ir.Type], strict: bool = True
) -> ir.Stencil:
    typer = _Typer(env, strict)
    body = tuple(typer.assign(a) for a in stencil.body)
    results = tuple(typer.expr(r) for r in stencil.results)
    if len(results) == 1 and isinstance(results[0], ir.OperatorCall):
        result_types: tuple[ir.Type, ...] = results[0].operator.result_types
    else:
        result_types = tuple(r.type for r in results)  # type: ignore[misc]
    for target, result_type in zip(stencil.outputs, result_types, strict=True):
        expected = env[target.name]
        assert isinstance(expected, FieldType)
        if result_type.dtype != expected.dtype:
            raise _error(
                f"{stencil.operator_name!r} produces {result_type.dtype} but out= field "
                f"{target.name!r} is {expected.dtype}",
                target.loc or stencil.loc,
            )
        if isinstance(result_type, FieldType) and not (
            set(result_type.dims) <= set(expected.dims)
            if strict
            else set(result_type.dim_names) <= set(expected.dim_names)
        ):
            raise _error(
                f"{stencil.operator_name!r} produces a field over ({_dims(result_type)}) "
                f"but out= field {target.name!r} has ({_dims(expected)})",
                target.loc or stencil.loc,
            )
    return attrs.evolve(stencil, body=body, results=results)


def infer_types(program: ir.ProgramIR) -> ir.ProgramIR:
    """The type-inference pass (a ``Step[ProgramIR, ProgramIR]``).

    Raises:
        DSLTypeError: located at the offending expression in the user's source.
    """
    env = {p.name: p.type for p in program.params}
    return attrs.evolve(program, stencils=tuple(_type_stencil(s, env) for s in program.stencils))


def refill_types(program: ir.ProgramIR) -> ir.ProgramIR:
    """The types of a program ``infer_types`` has checked, filled in again after a pass
    rebuilt its expressions (inlining, folding).

    The same rules, blind to staggering: the ``Shift`` nodes that turned an ``I`` value
    into an ``IHalf`` one are gone (``infer_types`` checked them), so a value over ``I``
    and one over ``IHalf`` may meet here; they share the array axis, which is all the
    passes after type inference and the translations read.
    """
    env = {p.name: p.type for p in program.params}
    stencils = tuple(_type_stencil(s, env, strict=False) for s in program.stencils)
    return attrs.evolve(program, stencils=stencils)
