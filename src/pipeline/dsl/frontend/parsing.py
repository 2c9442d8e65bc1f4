"""Python AST -> untyped IR, for field operators and programs.

Parsing resolves every name (parameter, local, global or closure value, builtin), turns
shifts into ``Ref`` offsets (pushing a shift of a whole expression down to its reads) and
records calls of other field operators as ``OperatorCall`` nodes for the inlining pass.
"""

from __future__ import annotations

import ast
import builtins
import math
import types
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from pipeline.dsl.builtins import BUILTIN_ARITY, SCALAR_CHOICE, DType, builtin_name
from pipeline.dsl.errors import DSLError, DSLNameError, DSLSyntaxError, DSLTypeError
from pipeline.dsl.frontend.source import FunctionSource, captured_values, function_source
from pipeline.dsl.ir.nodes import (
    Assign,
    BinaryOp,
    Call,
    Cast,
    ConcatWhere,
    Expr,
    FieldOperatorIR,
    Literal,
    OperatorCall,
    OutputTarget,
    Param,
    ProgramIR,
    Ref,
    Scan,
    ScanOperatorIR,
    SourceLocation,
    Stencil,
    Type,
    UnaryOp,
)
from pipeline.dsl.passes.traversal import walk
from pipeline.dsl.regions import Bound, Region, compare
from pipeline.dsl.stages import ProgramDefinition
from pipeline.dsl.types import Dimension, FieldType, Offset, ScalarType, as_dtype

__all__ = ["parameter_types", "parse_field_operator", "parse_program", "parse_scan_operator"]

# A tuple value as written: an inner tuple stays a tuple, because Python's meaning of t[i]
# and of unpacking depends on the nesting (the IR itself only holds the leaves, in order).
_Values = tuple["Expr | _Values", ...]
# The component locals of a tuple-valued name, nested like its value.
_Names = tuple["str | _Names", ...]

_BINARY_OPS: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
}
_COMPARE_OPS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_UNARY_OPS: dict[type[ast.unaryop], str] = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}
# a < K is K > a.
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

_UNSUPPORTED_STATEMENTS: dict[type[ast.stmt], str] = {
    ast.For: "`for` loops are not supported in a field operator; write the computation on "
    "whole fields, with shifts like f(I + 1)",
    ast.While: "`while` loops are not supported in a field operator",
    ast.With: "`with` is not supported in a field operator",
    ast.Try: "`try` is not supported in a field operator",
    ast.AugAssign: "augmented assignment (+=, ...) is not supported; write x = x + ...",
}


def _is_field_operator(value: object) -> bool:
    definition = getattr(value, "definition", None)
    return isinstance(definition, ProgramDefinition) and definition.kind == "field_operator"


def _is_scan_operator(value: object) -> bool:
    definition = getattr(value, "definition", None)
    return isinstance(definition, ProgramDefinition) and definition.kind == "scan_operator"


def parameter_types(
    function: Callable[..., Any],
    source: FunctionSource,
    *,
    first: int = 0,
    tuples: dict[str, _Names] | None = None,
) -> tuple[Param, ...]:
    """The typed parameters of a DSL function from the ``first`` on, from its annotations.

    With ``tuples`` (a field operator's), a ``tuple[...]`` annotation is one parameter per
    leaf, named ``<name>__<i>`` (leaves numbered in order); ``tuples`` gets the names,
    nested like the annotation.

    Raises:
        DSLTypeError: a parameter without annotation, or with one that is not a field type
            or DSL dtype; ``*args``/``**kwargs``/defaults.
    """
    arguments = source.function_def.args
    if arguments.vararg or arguments.kwarg or arguments.posonlyargs or arguments.kwonlyargs:
        raise source.error(
            DSLSyntaxError,
            "DSL functions take plain positional parameters only",
            arguments.vararg or arguments.kwarg or source.function_def,
        )
    if arguments.defaults:
        raise source.error(
            DSLSyntaxError, "DSL parameters cannot have default values", arguments.defaults[0]
        )
    annotations = _annotations(function)
    params = []
    for arg in arguments.args[first:]:
        if arg.arg not in annotations:
            raise source.error(
                DSLTypeError,
                f"parameter {arg.arg!r} has no type annotation; annotate it with a field "
                "type like Field[[I, J, K], float64] or a dtype like float64",
                arg,
            )
        annotation = annotations[arg.arg]
        node = arg.annotation or arg
        if _is_tuple_type(annotation):
            if tuples is None:
                raise source.error(
                    DSLTypeError,
                    f"parameter {arg.arg!r} is a tuple: tuple parameters are for field "
                    "operators; give a program one parameter per field",
                    node,
                )
            leaves = _flatten_type(annotation)
            names = _component_names(arg.arg, _shape(annotation))
            tuples[arg.arg] = names
            params += [
                Param(n, _as_type(t, source, node))
                for n, t in zip(_name_leaves(names), leaves, strict=True)
            ]
            continue
        params.append(Param(arg.arg, _as_type(annotation, source, node)))
    return tuple(params)


def _annotations(function: Callable[..., Any]) -> dict[str, Any]:
    raw = dict(getattr(function, "__annotations__", {}))
    namespace = {**function.__globals__, **captured_values(function)}
    resolved = {}
    for name, value in raw.items():
        if not isinstance(value, str):
            resolved[name] = value
            continue
        try:
            resolved[name] = eval(value, namespace)  # the user's own annotation text
        except NameError as error:
            raise DSLNameError(
                f"the annotation {value!r} of {function.__name__!r} cannot be evaluated "
                f"({error}); with `from __future__ import annotations`, annotations are "
                "evaluated in the module's namespace, so define the types they name at module "
                "level (or drop the __future__ import)",
                filename=function.__code__.co_filename,
                line=function.__code__.co_firstlineno,
            ) from error
    return resolved


def _as_type(value: object, source: FunctionSource, node: ast.AST) -> Type:
    if isinstance(value, FieldType):
        return value
    dtype = as_dtype(value)
    if dtype is not None:
        return ScalarType(dtype)
    raise source.error(
        DSLTypeError,
        f"annotation {value!r} is neither a field type (Field[[I, J], float64]) nor a dtype",
        node,
    )


def _is_tuple_type(value: object) -> bool:
    return isinstance(value, types.GenericAlias) and value.__origin__ is tuple


def _flatten_type(value: object) -> list[object]:
    """The leaves of a (nested) ``tuple[...]`` annotation, in order."""
    if _is_tuple_type(value):
        return [leaf for item in value.__args__ for leaf in _flatten_type(item)]  # type: ignore[attr-defined]
    return [value]


def _shape(value: object) -> object:
    """The nesting of a tuple value, tuple annotation or tuple expression: a tuple of its
    items' shapes; None for anything that is not a tuple."""
    if isinstance(value, tuple):
        return tuple(_shape(item) for item in value)
    if _is_tuple_type(value):
        return tuple(_shape(item) for item in value.__args__)  # type: ignore[attr-defined]
    if isinstance(value, ast.Tuple):
        return tuple(_shape(item) for item in value.elts)
    return None


def _describe_shape(shape: object) -> str:
    """A shape as the user would write such a tuple: ``(value, (value, value))``."""
    if isinstance(shape, tuple):
        return f"({', '.join(_describe_shape(item) for item in shape)})"
    return "value"


def _as_tuple_shape(shape: object) -> tuple[object, ...]:
    """A single value as a tuple of one: ``-> F``, ``return a`` and ``return (a,)`` agree."""
    return shape if isinstance(shape, tuple) else (shape,)


def _component_names(name: str, shape: object) -> _Names:
    """Names ``<name>__<i>`` for the leaves of a tuple of ``shape``, numbered in order."""
    counter = iter(range(len(_flatten_shape(shape))))

    def build(part: tuple[object, ...]) -> _Names:
        return tuple(
            build(item) if isinstance(item, tuple) else f"{name}__{next(counter)}"
            for item in part
        )

    return build(_as_tuple_shape(shape))


def _flatten_shape(shape: object) -> list[None]:
    if isinstance(shape, tuple):
        return [leaf for item in shape for leaf in _flatten_shape(item)]
    return [None]


def _leaves(values: _Values) -> tuple[Expr, ...]:
    """The values of a (nested) tuple value, in order."""
    return tuple(
        leaf
        for item in values
        for leaf in (_leaves(item) if isinstance(item, tuple) else (item,))
    )


def _name_leaves(names: _Names) -> tuple[str, ...]:
    return tuple(
        leaf
        for item in names
        for leaf in (_name_leaves(item) if isinstance(item, tuple) else (item,))
    )


def _nest(shape: tuple[object, ...], leaves: Sequence[Expr]) -> _Values:
    """``leaves`` (in order) as a tuple value nested like ``shape``."""
    remaining = iter(leaves)

    def build(part: tuple[object, ...]) -> _Values:
        return tuple(build(item) if isinstance(item, tuple) else next(remaining) for item in part)

    return build(shape)


def _result_types(function: Callable[..., Any], source: FunctionSource) -> tuple[FieldType, ...]:
    annotations = _annotations(function)
    node: ast.AST = source.function_def.returns or source.function_def
    if "return" not in annotations:
        raise source.error(
            DSLTypeError,
            f"field operator {function.__name__!r} has no return annotation; add "
            "-> Field[[...], dtype] (or -> tuple[...] for several results)",
            node,
        )
    items = _flatten_type(annotations["return"])
    result = []
    for item in items:
        if not isinstance(item, FieldType):
            raise source.error(
                DSLTypeError,
                f"a field operator returns fields; {item!r} is not a field type",
                node,
            )
        result.append(item)
    return tuple(result)


class _ExprParser:
    """Turns expression ASTs of one field operator into IR."""

    def __init__(
        self, function: Callable[..., Any], source: FunctionSource, params: Mapping[str, Type]
    ) -> None:
        self.function = function
        self.source = source
        self.params = params
        self.locals: set[str] = set()
        # Inside a branch of an `if`, a local's current binding has a branch-private name.
        self.renames: dict[str, str] = {}
        # Locals assigned in only one branch of an `if` (and not before it): the line of that
        # `if`. Only a read of one is an error (Python's UnboundLocalError on the other path).
        self.unbound: dict[str, int] = {}
        self.branches = 0
        self.private_names = 0
        # Tuple-valued names (a tuple parameter or carry, a tuple local): their component
        # locals, nested like the value.
        self.tuples: dict[str, _Names] = {}
        # The statements parsed so far: a call of a field operator returning a tuple binds
        # its results to new locals here (the inliner unpacks such a call).
        self.body: list[Assign] = []
        # In a scan operator every value is per point: no `if` on them.
        self.in_scan = False
        self.captured = captured_values(function)

    def error(self, cls: type[DSLError], message: str, node: ast.AST) -> DSLError:
        return self.source.error(cls, message, node)

    # -- names -------------------------------------------------------------------------
    def resolve(self, node: ast.Name) -> object:
        """The captured value of a global/closure name, or a Python builtin.

        Raises:
            DSLNameError: the name is none of these, or a local that may have no value here.
        """
        self.check_bound(node.id, (node.id,), node)
        if node.id in self.captured:
            return self.captured[node.id]
        builtin = getattr(__import__("builtins"), node.id, _MISSING)
        if builtin is not _MISSING:
            return builtin
        raise self.error(
            DSLNameError,
            f"name {node.id!r} is not defined: not a parameter, a local variable, or a "
            f"global of {self.function.__name__!r}",
            node,
        )

    def check_bound(self, name: str, leaves: Sequence[str], node: ast.AST) -> None:
        """Refuse a read of ``name`` (whose locals are ``leaves``) where one of them was
        assigned in only one branch of an earlier `if`."""
        lines = [self.unbound[leaf] for leaf in leaves if leaf in self.unbound]
        if lines:
            raise self.error(
                DSLNameError,
                f"{name!r} is read here but is assigned in only one branch of the `if` at line "
                f"{lines[0]} and not before it, so on the other path it has no value; assign "
                "it in both branches (or before the `if`)",
                node,
            )

    def resolve_constant(self, node: ast.expr) -> object:
        """Evaluate a Name/Attribute chain that refers to a global (e.g. ``np.pi``)."""
        if isinstance(node, ast.Name):
            if node.id in self.params or node.id in self.locals:
                return _MISSING
            return self.resolve(node)
        if isinstance(node, ast.Attribute):
            base = self.resolve_constant(node.value)
            if base is _MISSING:
                raise self.error(
                    DSLSyntaxError,
                    f"attribute access on fields is not supported (.{node.attr}); fields "
                    "have no attributes inside a field operator",
                    node,
                )
            if not isinstance(base, types.ModuleType) and not attrs.has(type(base)):
                raise self.error(
                    DSLSyntaxError, f"attribute access .{node.attr} is not supported here", node
                )
            try:
                return getattr(base, node.attr)
            except AttributeError as error:
                raise self.error(DSLNameError, str(error), node) from error
        return _MISSING

    # -- expressions -------------------------------------------------------------------
    def expr(self, node: ast.expr) -> Expr:
        loc = self.source.location(node)
        match node:
            case ast.Constant(value=value):
                if isinstance(value, bool | int | float) and not isinstance(value, complex):
                    return Literal(value, loc=loc)
                raise self.error(DSLSyntaxError, f"literal {value!r} is not a number or bool", node)
            case ast.Name(id=name) if name in self.params or name in self.locals:
                return Ref(self.renames.get(name, name), loc=loc)
            case ast.Name() | ast.Attribute():
                return self._constant(self.resolve_constant(node), node)
            case ast.UnaryOp(op=ast.Not()):
                raise self.error(DSLSyntaxError, "`not` is not supported on fields; use ~", node)
            case ast.UnaryOp(op=op, operand=operand):
                return UnaryOp(_UNARY_OPS[type(op)], self.expr(operand), loc=loc)
            case ast.BinOp(op=op, left=left, right=right):
                if type(op) not in _BINARY_OPS:
                    raise self.error(
                        DSLSyntaxError, f"operator {type(op).__name__} is not supported", node
                    )
                return BinaryOp(_BINARY_OPS[type(op)], self.expr(left), self.expr(right), loc=loc)
            case ast.Compare(left=left, ops=[op], comparators=[right]):
                if type(op) not in _COMPARE_OPS:
                    raise self.error(
                        DSLSyntaxError, f"comparison {type(op).__name__} is not supported", node
                    )
                return BinaryOp(_COMPARE_OPS[type(op)], self.expr(left), self.expr(right), loc=loc)
            case ast.Compare():
                raise self.error(
                    DSLSyntaxError,
                    "chained comparisons are not supported; combine with & or |",
                    node,
                )
            case ast.BoolOp():
                raise self.error(
                    DSLSyntaxError,
                    "`and`/`or` are not supported on fields; use & and | (with parentheses)",
                    node,
                )
            case ast.IfExp() if self.in_scan:
                raise self.error(
                    DSLSyntaxError,
                    "a scan operator's values are per point: choose with where(c, a, b)",
                    node,
                )
            case ast.IfExp(test=test, body=then, orelse=otherwise):
                return Call(
                    SCALAR_CHOICE, (self.expr(test), self.expr(then), self.expr(otherwise)), loc=loc
                )
            case ast.Subscript(slice=index) if _tuple_index(index) is not None:
                item = self.structured(node)
                if isinstance(item, tuple):
                    text = ast.unparse(node)
                    raise self.error(
                        DSLTypeError,
                        f"{text!r} is a tuple of {len(item)} value(s), not a single value (as "
                        f"in Python, an inner tuple stays a tuple); index it again ({text}[0]) "
                        f"or unpack it (a, b = {text})",
                        node,
                    )
                return item
            case ast.Subscript():
                raise self._subscript_error(node)
            case ast.Call():
                return self.call(node)
        raise self.error(
            DSLSyntaxError,
            f"{type(node).__name__} expressions are not supported in a field operator",
            node,
        )

    def _subscript_error(self, node: ast.Subscript) -> DSLError:
        return self.error(
            DSLSyntaxError,
            "subscripts are not supported inside a field operator; read neighbours "
            "with shifts like f(I + 1), and choose the output domain with out=out[...] "
            "in the program",
            node,
        )

    def _constant(self, value: object, node: ast.expr) -> Expr:
        if isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating):
            number = value.item() if isinstance(value, np.generic) else value
            if isinstance(number, float) and not math.isfinite(number):
                raise self.error(DSLTypeError, f"constant {value!r} is not finite", node)
            return Literal(number, loc=self.source.location(node))
        what = type(value).__name__
        hint = ""
        if _is_field_operator(value) or builtin_name(value) is not None:
            hint = "; call it"
        elif isinstance(value, Dimension):
            hint = "; dimensions are used in shifts, like f(I + 1)"
        raise self.error(
            DSLTypeError, f"{ast.unparse(node)!r} is a {what}, not a field or number{hint}", node
        )

    def call(self, node: ast.Call) -> Expr:
        loc = self.source.location(node)
        callee = node.func
        if isinstance(callee, ast.Name) and (callee.id in self.params or callee.id in self.locals):
            if self.params.get(callee.id, None) is not None and isinstance(
                self.params[callee.id], ScalarType
            ):
                raise self.error(
                    DSLTypeError, f"{callee.id!r} is a scalar and cannot be shifted", node
                )
            local = Ref(self.renames.get(callee.id, callee.id), loc=self.source.location(callee))
            return shift_expr(local, self.offsets(node))
        value = (
            self.resolve_constant(callee)
            if isinstance(callee, ast.Name | ast.Attribute)
            else _MISSING
        )
        if value is _MISSING:
            # (expression)(I + 1): shift every read inside the expression.
            shifted = self.expr(callee)
            if any(isinstance(n, Scan) for n in walk(shifted)):
                raise self.error(
                    DSLTypeError,
                    "a scan's result is only read where it is computed, not shifted; write "
                    "it to a field with out= in the program and read that field shifted",
                    node,
                )
            return shift_expr(shifted, self.offsets(node))
        if _is_scan_operator(value):
            operator, args = self.scan_call(node, value)
            if len(operator.carry) > 1:
                raise self.error(
                    DSLTypeError,
                    f"{operator.name!r} returns a tuple of {len(operator.carry)} values; unpack "
                    f"it (a, b = {operator.name}(...)) or index it ({operator.name}(...)[0])",
                    node,
                )
            return Scan(operator, args, 0, loc=loc)
        if _is_field_operator(value) and self.in_scan:
            raise self.error(
                DSLSyntaxError,
                "a scan operator cannot call field operators; write the computation in it",
                node,
            )
        if node.keywords and not _is_field_operator(value):
            raise self.error(
                DSLSyntaxError,
                "keyword arguments are only supported in calls of field operators",
                node.keywords[0],
            )
        if isinstance(value, DType) or any(value is c for c in _PYTHON_CONSTRUCTORS):
            if len(node.args) != 1:
                raise self.error(DSLTypeError, f"{ast.unparse(callee)}() takes one value", node)
            constructor = None if isinstance(value, DType) else getattr(value, "__name__", None)
            dtype = value.dtype if isinstance(value, DType) else as_dtype(value)
            assert dtype is not None
            return Cast(self.expr(node.args[0]), dtype, constructor=constructor, loc=loc)
        name = builtin_name(value)
        if name == "astype":
            if len(node.args) != 2:
                raise self.error(DSLTypeError, "astype() takes a value and a dtype", node)
            dtype = as_dtype(self.resolve_constant(node.args[1]))
            if dtype is None:
                raise self.error(
                    DSLTypeError,
                    "the second argument of astype() must be a DSL dtype (float64, ...)",
                    node.args[1],
                )
            return Cast(self.expr(node.args[0]), dtype, loc=loc)
        if name == "concat_where":
            if len(node.args) != 3:
                raise self.error(
                    DSLTypeError, "concat_where() takes a condition and two values", node
                )
            region = self.region(node.args[0])
            inside, outside = self.expr(node.args[1]), self.expr(node.args[2])
            return ConcatWhere(region, inside, outside, loc=loc)
        if name is not None:
            arity = BUILTIN_ARITY[name]
            if len(node.args) != arity:
                raise self.error(
                    DSLTypeError, f"{name}() takes {arity} argument(s), got {len(node.args)}", node
                )
            return Call(name, tuple(self.expr(a) for a in node.args), loc=loc)
        if _is_field_operator(value):
            called = parse_field_operator(value.definition)  # type: ignore[attr-defined]
            names = [name for name, _ in called.signature]
            arguments = call_arguments(node, called.name, names, node.keywords, self.source)
            declared = _annotations(value.function)  # type: ignore[attr-defined]
            flat: list[Expr] = []
            for (name, parts), argument in zip(called.signature, arguments, strict=True):
                if parts is None:
                    flat.append(self.expr(argument))
                    continue
                items = self.structured(argument)
                shape = _shape(declared[name])
                if not isinstance(items, tuple) or _shape(items) != shape:
                    raise self.error(
                        DSLTypeError,
                        f"argument {name!r} of {called.name!r} is a tuple "
                        f"{_describe_shape(shape)}; pass a tuple of that form, like (a, b)",
                        argument,
                    )
                flat += _leaves(items)
            return OperatorCall(called, tuple(flat), loc=loc)
        raise self.error(
            DSLTypeError,
            f"{ast.unparse(callee)!r} is not a field, a DSL builtin or a field operator, so it "
            "cannot be called in a field operator",
            node,
        )

    def region(self, node: ast.expr) -> Region:
        """A condition on indices (``K == 0``, ``I < n``, combined with ``& | ~``)."""
        match node:
            case ast.BinOp(op=ast.BitAnd(), left=left, right=right):
                return self.region(left) & self.region(right)
            case ast.BinOp(op=ast.BitOr(), left=left, right=right):
                return self.region(left) | self.region(right)
            case ast.UnaryOp(op=ast.Invert(), operand=operand):
                return ~self.region(operand)
            case ast.Compare(left=left, ops=[op], comparators=[right]) if type(op) in _COMPARE_OPS:
                symbol = _COMPARE_OPS[type(op)]
                dim = self._dimension(left)
                if dim is not None:
                    return compare(dim.name, symbol, self.bound(right))
                dim = self._dimension(right)
                if dim is not None:
                    return compare(dim.name, _FLIPPED[symbol], self.bound(left))
        raise self.error(
            DSLSyntaxError,
            "the condition of concat_where compares dimensions with integers, like K == 0, "
            "I < n or (K == 0) | (K == n - 1), combined with & | ~",
            node,
        )

    def _dimension(self, node: ast.expr) -> Dimension | None:
        if isinstance(node, ast.Name | ast.Attribute):
            value = self.resolve_constant(node)
            if isinstance(value, Dimension):
                return value
        return None

    def bound(self, node: ast.expr) -> Bound:
        """An index bound: an integer, or an integer scalar parameter plus an integer."""
        match node:
            case ast.Constant(value=int() as value) if not isinstance(value, bool):
                return Bound(value)
            case ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=int() as value)):
                return Bound(-value)
            case ast.Name(id=name) if name in self.params:
                param = self.params[name]
                if isinstance(param, ScalarType) and param.dtype.kind in "iu":
                    return Bound(0, name)
                raise self.error(
                    DSLTypeError,
                    f"an index bound must be an integer; {name!r} is {param}",
                    node,
                )
            case ast.BinOp(op=ast.Add() | ast.Sub() as op, left=left, right=ast.Constant(
                value=int() as value
            )) if not isinstance(value, bool):
                base = self.bound(left)
                return base + (value if isinstance(op, ast.Add) else -value)
            case ast.Name() | ast.Attribute():
                constant = self.resolve_constant(node)
                if isinstance(constant, int | np.integer) and not isinstance(constant, bool):
                    return Bound(int(constant))
        raise self.error(
            DSLSyntaxError,
            "an index bound is an integer, an integer scalar parameter, or one plus or minus "
            "an integer (n - 1)",
            node,
        )

    def structured(self, node: ast.expr) -> Expr | _Values:
        """The value of ``node``: a tuple value for a tuple-valued expression (a tuple
        literal, a tuple name, a call returning several values, an item of a tuple that is
        itself a tuple), nested as in Python; the expression otherwise.

        Raises:
            DSLTypeError: an index past the end of a tuple.
        """
        loc = self.source.location(node)
        match node:
            case ast.Tuple(elts=elements):
                return tuple(self.structured(element) for element in elements)
            case ast.Name(id=name) if name in self.tuples:
                self.check_bound(name, _name_leaves(self.tuples[name]), node)
                return self._reads(self.tuples[name], loc)
            case ast.Subscript(value=base, slice=index_node) if (
                _tuple_index(index_node) is not None
            ):
                items = self.structured(base)
                if not isinstance(items, tuple):
                    raise self._subscript_error(node)
                index = _tuple_index(index_node)
                assert index is not None
                if not -len(items) <= index < len(items):
                    raise self.error(
                        DSLTypeError,
                        f"index {index} of a tuple of {len(items)} value(s); an inner tuple "
                        "counts as one value, as in Python",
                        node,
                    )
                return items[index]
            case ast.Call(func=ast.Name() | ast.Attribute() as callee):
                value = self.resolve_constant(callee)
                if _is_scan_operator(value):
                    operator, args = self.scan_call(node, value)
                    if len(operator.carry) > 1:
                        return tuple(
                            Scan(operator, args, i, loc=loc) for i in range(len(operator.carry))
                        )
                elif _is_field_operator(value) and not self.in_scan:
                    results = _tuple_call(self, node, value, loc)
                    if results is not None:
                        return results
        return self.expr(node)

    def _reads(self, names: _Names, loc: SourceLocation | None) -> _Values:
        return tuple(
            self._reads(n, loc) if isinstance(n, tuple) else Ref(self.renames.get(n, n), loc=loc)
            for n in names
        )

    def scan_call(self, node: ast.Call, value: object) -> tuple[ScanOperatorIR, tuple[Expr, ...]]:
        """The scan operator ``value`` called by ``node``, and its point arguments."""
        if self.in_scan:
            raise self.error(DSLSyntaxError, "a scan operator cannot call another scan", node)
        operator = parse_scan_operator(value.definition)  # type: ignore[attr-defined]
        names = [p.name for p in operator.params]
        arguments = call_arguments(node, operator.name, names, node.keywords, self.source)
        return operator, tuple(self.expr(a) for a in arguments)

    def offsets(self, node: ast.Call) -> tuple[tuple[str, int], ...]:
        if node.keywords:
            raise self.error(DSLSyntaxError, "a shift takes offsets like I + 1, not keywords", node)
        if not node.args:
            raise self.error(
                DSLSyntaxError, "a shift needs at least one offset, like f(I + 1)", node
            )
        result: dict[str, int] = {}
        for arg in node.args:
            dim, value = self.offset(arg)
            if dim in result:
                raise self.error(
                    DSLSyntaxError, f"dimension {dim} is shifted twice in one call", arg
                )
            result[dim] = value
        return tuple(sorted((d, v) for d, v in result.items() if v != 0)) or ()

    def offset(self, node: ast.expr) -> tuple[str, int]:
        value: object
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
            dim = self.resolve_constant(node.left)
            amount = node.right
            if (
                isinstance(dim, Dimension)
                and isinstance(amount, ast.Constant)
                and type(amount.value) is int
            ):
                sign = 1 if isinstance(node.op, ast.Add) else -1
                return dim.name, sign * amount.value
            value = _MISSING
        else:
            value = self.resolve_constant(node)
        if isinstance(value, Offset):
            return value.dimension.name, value.value
        if isinstance(value, Dimension):
            return value.name, 0
        raise self.error(
            DSLSyntaxError,
            f"{ast.unparse(node)!r} is not an offset; write shifts like f(I + 1, J - 2)",
            node,
        )


def call_arguments(
    node: ast.Call,
    callee: str,
    names: Sequence[str],
    keywords: list[ast.keyword],
    source: FunctionSource,
) -> list[ast.expr]:
    """The argument expressions of a call of ``callee`` (taking parameters ``names``), in
    parameter order.

    ``keywords`` are the call's keyword arguments naming parameters (a program's ``out=``
    and ``domain=`` already taken out).

    Raises:
        DSLTypeError: too many or missing arguments, an unknown or repeated keyword.
    """
    takes = f"{callee}() takes {len(names)} argument(s) ({', '.join(names)})"
    if len(node.args) > len(names):
        raise source.error(DSLTypeError, f"{takes}, got {len(node.args)}", node)
    bound: dict[str, ast.expr] = dict(zip(names, node.args, strict=False))
    for keyword in keywords:
        if keyword.arg is None:
            raise source.error(DSLSyntaxError, "**kwargs are not supported in calls", keyword)
        if keyword.arg not in names:
            raise source.error(
                DSLTypeError,
                f"{callee}() has no parameter {keyword.arg!r}; {takes}",
                keyword,
            )
        if keyword.arg in bound:
            raise source.error(
                DSLTypeError, f"{callee}() got argument {keyword.arg!r} twice", keyword
            )
        bound[keyword.arg] = keyword.value
    missing = [name for name in names if name not in bound]
    if missing:
        raise source.error(
            DSLTypeError, f"{callee}() is missing argument(s): {', '.join(missing)}", node
        )
    return [bound[name] for name in names]


class _Missing:
    pass


# bool(x), int(x), float(x) of scalars: the Python types as conversions.
_PYTHON_CONSTRUCTORS = (builtins.bool, builtins.int, builtins.float)


_MISSING = _Missing()


def shift_expr(expr: Expr, offsets: tuple[tuple[str, int], ...]) -> Expr:
    """``expr`` read at ``offsets``: every ``Ref`` inside moves (stencils commute with shifts)."""
    if not offsets:
        return expr
    match expr:
        case Ref():
            return expr.shifted(offsets)
        case Literal():
            return expr
        case UnaryOp(operand=operand):
            return attrs.evolve(expr, operand=shift_expr(operand, offsets))
        case BinaryOp(left=left, right=right):
            return attrs.evolve(
                expr, left=shift_expr(left, offsets), right=shift_expr(right, offsets)
            )
        case Call(args=args) | OperatorCall(args=args):
            return attrs.evolve(expr, args=tuple(shift_expr(a, offsets) for a in args))
        case Cast(value=value):
            return attrs.evolve(expr, value=shift_expr(value, offsets))
        case ConcatWhere(region=region, inside=inside, outside=outside):
            # Read at x + offset: the condition holds there when x is in the region moved back.
            return attrs.evolve(
                expr,
                region=region.shifted({d: -v for d, v in offsets}),
                inside=shift_expr(inside, offsets),
                outside=shift_expr(outside, offsets),
            )
    raise TypeError(f"not an IR expression: {expr!r}")


# Parsed operators by definition (identity); an entry goes when its definition is collected.
_OPERATOR_CACHE: weakref.WeakKeyDictionary[ProgramDefinition, FieldOperatorIR] = (
    weakref.WeakKeyDictionary()
)


def parse_field_operator(definition: ProgramDefinition) -> FieldOperatorIR:
    """Parse a field operator's definition into untyped IR (calls of others not inlined)."""
    cached = _OPERATOR_CACHE.get(definition)
    if cached is not None:
        return cached
    function = definition.function
    source = function_source(function)
    tuples: dict[str, _Names] = {}
    params = parameter_types(function, source, tuples=tuples)
    result_types = _result_types(function, source)
    parser = _ExprParser(function, source, {p.name: p.type for p in params})
    parser.tuples.update(tuples)
    statements = _without_docstring(source.function_def.body)
    results = _parse_block(statements, parser, parser.body)
    if results is None:
        raise source.error(
            DSLSyntaxError,
            f"field operator {function.__name__!r} must end with a return statement",
            source.function_def,
        )
    leaves = _leaves(results)
    if len(leaves) != len(result_types):
        raise source.error(
            DSLTypeError,
            f"{function.__name__!r} returns {len(leaves)} value(s) but its annotation declares "
            f"{len(result_types)}",
            statements[-1],
        )
    # A caller indexes or unpacks the result by its annotation: the nesting must agree.
    declared = _as_tuple_shape(_shape(_annotations(function)["return"]))
    if _shape(results) != declared:
        raise source.error(
            DSLTypeError,
            f"{function.__name__!r} returns {_describe_shape(_shape(results))} but its "
            f"annotation declares {_describe_shape(declared)}; nest the returned tuple like "
            "the annotation",
            statements[-1],
        )
    operator = FieldOperatorIR(
        function.__name__,
        params,
        tuple(parser.body),
        leaves,
        result_types,
        tuple((name, _name_leaves(names)) for name, names in tuples.items()),
        loc=source.location(source.function_def),
    )
    _OPERATOR_CACHE[definition] = operator
    return operator


def _parse_block(
    statements: list[ast.stmt], parser: _ExprParser, body: list[Assign]
) -> _Values | None:
    """Append the assignments of ``statements`` to ``body``; the returned values (a single
    value as a tuple of one), if the block returns.

    An ``if`` on a scalar becomes a choice per value: each local either branch assigns is
    bound, after the ``if``, to ``SCALAR_CHOICE(cond, then-value, else-value)``. An ``if``
    with a ``return`` anywhere in it continues each branch with the rest of ``statements``
    (which holds the rest of the enclosing blocks too), so that both branches end where the
    function does, and each returned value is such a choice. Statements after a ``return``
    are unreachable and, as in Python, not run.
    """
    source = parser.source
    for index, statement in enumerate(statements):
        match statement:
            case ast.Assign(targets=[target], value=value):
                loc = source.location(statement)
                _assign(parser, target, parser.structured(value), body, loc)
            case ast.AnnAssign(target=ast.Name(id=name), value=value) if value is not None:
                expr = parser.expr(value)
                body.append(Assign(_bind(parser, (name,)), expr, loc=source.location(statement)))
            case ast.Assign():
                raise source.error(
                    DSLSyntaxError, "chained assignment (a = b = ...) is not supported", statement
                )
            case ast.Return(value=value) if value is not None:
                result = parser.structured(value)
                return result if isinstance(result, tuple) else (result,)
            case ast.If() if parser.in_scan:
                raise source.error(
                    DSLSyntaxError,
                    "a scan operator's values are per point: `if` is not supported in it; "
                    "choose with where(c, a, b)",
                    statement,
                )
            case ast.If(test=test, body=then, orelse=otherwise):
                rest = statements[index + 1 :]
                if _has_return(then) or _has_return(otherwise):
                    then, otherwise, rest = then + rest, otherwise + rest, []
                return _parse_if(statement, parser.expr(test), then, otherwise, rest, parser, body)
            case ast.Pass():
                continue
            case _:
                message = _UNSUPPORTED_STATEMENTS.get(
                    type(statement),
                    f"{type(statement).__name__} statements are not supported in a field operator",
                )
                raise source.error(DSLSyntaxError, message, statement)
    return None


def _assign(
    parser: _ExprParser,
    target: ast.expr,
    value: Expr | _Values,
    body: list[Assign],
    loc: SourceLocation | None,
) -> None:
    """Bind ``target`` to ``value`` as Python does: a name to a whole value (a tuple kept
    whole, one local per leaf), a tuple of targets item by item.

    Raises:
        DSLTypeError: a tuple of targets for a single value, or for a tuple of another length.
        DSLSyntaxError: a target that is not a name or a tuple of them.
    """
    source = parser.source
    match target:
        case ast.Name(id=name) if isinstance(value, tuple):
            names = _tuple_local(parser, name, value)
            for component, item in zip(_name_leaves(names), _leaves(value), strict=True):
                body.append(Assign(_bind(parser, (component,)), item, loc=loc))
        case ast.Name(id=name):
            assert not isinstance(value, tuple)
            body.append(Assign(_bind(parser, (name,)), value, loc=loc))
        case ast.Tuple(elts=targets) if not isinstance(value, tuple):
            raise source.error(
                DSLTypeError,
                f"one value unpacked into {len(targets)} name(s); assign it to one name",
                target,
            )
        case ast.Tuple(elts=targets):
            assert isinstance(value, tuple)
            if len(targets) != len(value):
                raise source.error(
                    DSLTypeError,
                    f"{len(value)} value(s) unpacked into {len(targets)} name(s)"
                    + (
                        "; an inner tuple counts as one value, as in Python"
                        if any(isinstance(item, tuple) for item in value)
                        else ""
                    ),
                    target,
                )
            for element, part in zip(targets, value, strict=True):
                _assign(parser, element, part, body, loc)
        case _:
            raise source.error(
                DSLSyntaxError,
                "only assignments to plain names are supported (x = ..., or a, b = op(...))",
                target,
            )


def _tuple_call(
    parser: _ExprParser, node: ast.Call, callee: object, loc: SourceLocation | None
) -> _Values | None:
    """For a call of a field operator returning several fields: bind them to new locals
    in ``parser.body`` (the inliner unpacks such a call) and return reads of them, nested
    like the operator's return annotation; else None."""
    operator = parse_field_operator(callee.definition)  # type: ignore[attr-defined]
    if len(operator.result_types) < 2:
        return None
    call = parser.expr(node)
    parser.private_names += 1
    names = tuple(
        f"{operator.name}__r{parser.private_names}_{i}" for i in range(len(operator.result_types))
    )
    targets = _bind(parser, names)
    parser.body.append(Assign(targets, call, loc=loc))
    declared = _annotations(callee.definition.function)["return"]  # type: ignore[attr-defined]
    return _nest(_as_tuple_shape(_shape(declared)), [Ref(t, loc=loc) for t in targets])


def _tuple_local(parser: _ExprParser, name: str, value: _Values) -> _Names:
    """Make ``name`` a tuple of component locals nested like ``value``; their names."""
    components = _component_names(name, _shape(value))
    parser.tuples[name] = components
    return components


def _has_return(statements: list[ast.stmt]) -> bool:
    """Whether a ``return`` is among ``statements``, or in an ``if`` among them."""
    return any(isinstance(node, ast.Return) for s in statements for node in ast.walk(s))


def _bind(parser: _ExprParser, names: tuple[str, ...]) -> tuple[str, ...]:
    """The targets an assignment of ``names`` binds: the names themselves outside any
    branch, branch-private names inside one (the ``if`` merges them afterwards)."""
    targets = []
    for name in names:
        parser.locals.add(name)
        parser.unbound.pop(name, None)
        if parser.branches:
            parser.private_names += 1
            parser.renames[name] = f"{name}__if{parser.private_names}"
        else:
            parser.renames.pop(name, None)
        targets.append(parser.renames.get(name, name))
    return tuple(targets)


def _parse_if(
    statement: ast.If,
    condition: Expr,
    then: list[ast.stmt],
    otherwise: list[ast.stmt],
    rest: list[ast.stmt],
    parser: _ExprParser,
    body: list[Assign],
) -> _Values | None:
    source = parser.source
    loc = source.location(statement.test)
    outer_locals, outer_renames = set(parser.locals), dict(parser.renames)
    outer_unbound = dict(parser.unbound)
    branch_results: list[_Values | None] = []
    branch_names: list[dict[str, str]] = []
    unbound: dict[str, int] = {}
    parser.branches += 1
    for block in (then, otherwise):
        parser.locals, parser.renames = set(outer_locals), dict(outer_renames)
        parser.unbound = dict(outer_unbound)
        branch_results.append(_parse_block(block, parser, body))
        branch_names.append(
            {n: parser.renames.get(n, n) for n in parser.locals}
        )
        unbound.update(parser.unbound)
    parser.branches -= 1
    parser.locals, parser.renames, parser.unbound = outer_locals, outer_renames, unbound
    then_results, else_results = branch_results
    if (then_results is None) != (else_results is None):
        path = "false" if else_results is None else "true"
        raise source.error(
            DSLSyntaxError,
            f"when the condition of this `if` is {path}, {parser.function.__name__!r} reaches "
            "its end without a return; return a value on that path too",
            statement,
        )
    if then_results is not None and else_results is not None:
        then_leaves, else_leaves = _leaves(then_results), _leaves(else_results)
        if len(then_leaves) != len(else_leaves):
            raise source.error(
                DSLTypeError,
                f"the branches of this `if` return {len(then_leaves)} and "
                f"{len(else_leaves)} value(s)",
                statement,
            )
        shape = _shape(then_results)
        if _shape(else_results) != shape:
            raise source.error(
                DSLTypeError,
                f"the branches of this `if` return {_describe_shape(shape)} and "
                f"{_describe_shape(_shape(else_results))}; nest both alike",
                statement,
            )
        assert isinstance(shape, tuple)
        return _nest(
            shape,
            [
                Call(SCALAR_CHOICE, (condition, a, b), loc=loc)
                for a, b in zip(then_leaves, else_leaves, strict=True)
            ],
        )
    then_names, else_names = branch_names
    for name in sorted(set(then_names) | set(else_names)):
        known = name in outer_locals or name in parser.params
        before = outer_renames.get(name, name) if known else None
        choices = [names.get(name, before) for names in (then_names, else_names)]
        if choices[0] == choices[1]:
            continue  # neither branch assigned it
        if None in choices:
            parser.unbound[name] = statement.lineno
            continue
        value = Call(SCALAR_CHOICE, tuple([condition, *(Ref(c) for c in choices)]), loc=loc)  # type: ignore[arg-type]
        body.append(Assign(_bind(parser, (name,)), value, loc=loc))
    return _parse_block(rest, parser, body)


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[1:]
    return body


_SCAN_CACHE: weakref.WeakKeyDictionary[ProgramDefinition, ScanOperatorIR] = (
    weakref.WeakKeyDictionary()
)


def parse_scan_operator(definition: ProgramDefinition) -> ScanOperatorIR:
    """Parse a scan operator's definition into untyped IR.

    Raises:
        DSLTypeError: a parameter that is not a dtype, a return annotation or ``init`` that
            does not match the carry.
    """
    cached = _SCAN_CACHE.get(definition)
    if cached is not None:
        return cached
    settings = definition.scan
    assert settings is not None
    function = definition.function
    source = function_source(function)
    where = source.function_def
    if not where.args.args:
        raise source.error(
            DSLTypeError, f"scan operator {function.__name__!r} needs a carry parameter", where
        )
    carry_arg, *point_args = where.args.args
    annotations = _annotations(function)
    carry_types = _carry_types(carry_arg, annotations.get(carry_arg.arg), source)
    # The point values, typed as any DSL parameter is (the carry set aside).
    point_params = parameter_types(function, source, first=1)
    for param, node in zip(point_params, point_args, strict=True):
        if not isinstance(param.type, ScalarType):
            raise source.error(
                DSLTypeError,
                f"parameter {param.name!r} of a scan operator is a value at one point: "
                "annotate it with a dtype like float64 (the call passes fields)",
                node,
            )
    declared = _annotations(function).get("return")
    returned = _scan_return_types(declared, source)
    if returned != tuple(t.dtype for t in carry_types):
        raise source.error(
            DSLTypeError,
            f"scan operator {function.__name__!r} returns "
            f"{_describe_dtypes(returned)} but its carry is {_describe_dtypes(carry_types)}; "
            "annotate the return like the carry",
            source.function_def.returns or where,
        )
    init = _scan_init(settings.init, carry_types, function.__name__, source)
    tuple_carry = isinstance(settings.init, tuple)
    carry = (
        tuple(Param(f"{carry_arg.arg}__{i}", t) for i, t in enumerate(carry_types))
        if tuple_carry
        else (Param(carry_arg.arg, carry_types[0]),)
    )
    env = {p.name: p.type for p in (*carry, *point_params)}
    parser = _ExprParser(function, source, env)
    parser.in_scan = True
    if tuple_carry:
        parser.tuples[carry_arg.arg] = tuple(p.name for p in carry)
    new_carry = _parse_block(_without_docstring(source.function_def.body), parser, parser.body)
    if new_carry is None:
        raise source.error(
            DSLSyntaxError, f"scan operator {function.__name__!r} must return the new carry", where
        )
    results = _leaves(new_carry)
    if len(results) != len(carry):
        raise source.error(
            DSLTypeError,
            f"{function.__name__!r} returns {len(results)} value(s) but its carry has {len(carry)}",
            source.function_def.body[-1],
        )
    operator = ScanOperatorIR(
        function.__name__,
        settings.axis,
        settings.forward,
        init,
        carry,
        tuple(point_params),
        tuple(parser.body),
        results,
        loc=source.location(where),
    )
    _SCAN_CACHE[definition] = operator
    return operator


def _tuple_index(node: ast.expr) -> int | None:
    """The integer of a constant index ``t[2]`` or ``t[-1]``; None for any other subscript."""
    match node:
        case ast.Constant(value=int() as index) if not isinstance(index, bool):
            return index
        case ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=int() as index)) if (
            not isinstance(index, bool)
        ):
            return -index
    return None


def _carry_types(
    arg: ast.arg, annotation: object, source: FunctionSource
) -> tuple[ScalarType, ...]:
    """The dtype of each carry component, from the carry's annotation."""
    items = (
        annotation.__args__
        if isinstance(annotation, types.GenericAlias) and annotation.__origin__ is tuple
        else (annotation,)
    )
    dtypes = [as_dtype(item) for item in items]
    if annotation is None or any(d is None for d in dtypes):
        raise source.error(
            DSLTypeError,
            f"annotate the carry {arg.arg!r} of a scan operator with a dtype (float64) or a "
            "tuple of dtypes (tuple[float64, float64])",
            arg.annotation or arg,
        )
    return tuple(ScalarType(d) for d in dtypes if d is not None)


def _scan_return_types(declared: object, source: FunctionSource) -> tuple[np.dtype[Any], ...]:
    items = (
        declared.__args__
        if isinstance(declared, types.GenericAlias) and declared.__origin__ is tuple
        else (declared,)
    )
    dtypes = tuple(as_dtype(item) for item in items)
    return tuple(d for d in dtypes if d is not None) if all(d is not None for d in dtypes) else ()


def _describe_dtypes(items: tuple[Any, ...]) -> str:
    names = [str(getattr(item, "dtype", item)) for item in items]
    return names[0] if len(names) == 1 else f"({', '.join(names)})" if names else "no dtype"


def _scan_init(
    init: object, carry: tuple[ScalarType, ...], name: str, source: FunctionSource
) -> tuple[bool | int | float, ...]:
    """``init`` as one number per carry component, each of its component's kind."""
    values = init if isinstance(init, tuple) else (init,)
    problem = None
    if len(values) != len(carry):
        problem = f"has {len(values)} value(s) for a carry of {len(carry)}"
    else:
        for value, carry_type in zip(values, carry, strict=True):
            kind = carry_type.dtype.kind
            number = value.item() if isinstance(value, np.generic) else value
            fits = (
                isinstance(number, bool)
                if kind == "b"
                else isinstance(number, int) and not isinstance(number, bool)
                if kind in "iu"
                else isinstance(number, float)
            )
            if not fits:
                problem = f"value {value!r} does not match the carry's {carry_type.dtype}"
                break
    if problem is not None:
        raise source.error(
            DSLTypeError,
            f"init of scan operator {name!r} {problem}; give init one "
            f"{'tuple of ' if len(carry) > 1 else ''}number(s) of the carry's dtype(s) "
            f"({_describe_dtypes(carry)})",
            source.function_def,
        )
    return tuple(v.item() if isinstance(v, np.generic) else v for v in values)


def parse_program(definition: ProgramDefinition) -> ProgramIR:
    """Parse a program (or a field operator called directly) into untyped IR.

    A field operator called directly becomes a program of one stencil whose outputs are extra
    parameters named ``__out0``, ``__out1``, ... over their full domains.
    """
    if definition.kind == "field_operator":
        return _direct_call_program(definition)
    function = definition.function
    source = function_source(function)
    params = parameter_types(function, source)
    by_name = {p.name: p.type for p in params}
    parser = _ExprParser(function, source, by_name)
    stencils = []
    for statement in _without_docstring(source.function_def.body):
        if isinstance(statement, ast.Pass):
            continue
        if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
            raise source.error(
                DSLSyntaxError,
                "a program body is a sequence of field operator calls like "
                "op(a, b, out=out[1:-1, 1:-1, :])",
                statement,
            )
        stencils.append(_parse_stencil_call(statement.value, parser, by_name))
    if not stencils:
        raise source.error(
            DSLSyntaxError,
            f"program {function.__name__!r} calls no field operator",
            source.function_def,
        )
    return ProgramIR(
        function.__name__, params, tuple(stencils), loc=source.location(source.function_def)
    )


def _parse_stencil_call(node: ast.Call, parser: _ExprParser, params: Mapping[str, Type]) -> Stencil:
    source = parser.source
    callee = (
        parser.resolve_constant(node.func)
        if isinstance(node.func, ast.Name | ast.Attribute)
        else _MISSING
    )
    if not (_is_field_operator(callee) or _is_scan_operator(callee)):
        raise source.error(
            DSLTypeError,
            f"{ast.unparse(node.func)!r} is not a field operator; a program can only "
            "call field operators and scan operators",
            node.func,
        )
    operator: FieldOperatorIR | ScanOperatorIR
    if _is_scan_operator(callee):
        operator = parse_scan_operator(callee.definition)  # type: ignore[attr-defined]
        result_count = len(operator.carry)
    else:
        operator = parse_field_operator(callee.definition)  # type: ignore[attr-defined]
        result_count = len(operator.result_types)
    keywords = {k.arg: k for k in node.keywords}
    if "out" not in keywords:
        raise source.error(
            DSLTypeError,
            f"the call of {operator.name!r} needs out=..., e.g. out=out[1:-1, 1:-1, :]",
            node,
        )
    out_node = keywords["out"].value
    out_items = _flat_items(out_node)
    outputs = tuple(_output_target(item, parser, params) for item in out_items)
    if len(outputs) != result_count:
        raise source.error(
            DSLTypeError,
            f"{operator.name!r} returns {result_count} field(s) but out= gives {len(outputs)}",
            out_node,
        )
    if "domain" in keywords:
        outputs = _with_domain(outputs, keywords["domain"].value, parser, params)
    keyword_args = [k for k in node.keywords if k.arg not in {"out", "domain"}]
    signature = (
        operator.signature
        if isinstance(operator, FieldOperatorIR)
        else tuple((p.name, None) for p in operator.params)
    )
    names = [name for name, _ in signature]
    grouped = call_arguments(node, operator.name, names, keyword_args, source)
    arguments: list[ast.expr] = []
    for (name, parts), arg in zip(signature, grouped, strict=True):
        if parts is None:
            arguments.append(arg)
            continue
        items = _flat_items(arg)
        if not isinstance(arg, ast.Tuple) or len(items) != len(parts):
            raise source.error(
                DSLTypeError,
                f"argument {name!r} of {operator.name!r} is a tuple of {len(parts)} field(s); "
                "pass a tuple of program parameters, like (a, b)",
                arg,
            )
        arguments += items
    args: list[Expr] = []
    for arg in arguments:
        if isinstance(arg, ast.Name) and arg.id in params:
            args.append(Ref(arg.id, loc=source.location(arg)))
        else:
            value = parser.expr(arg)
            if not isinstance(value, Literal):
                raise source.error(
                    DSLSyntaxError,
                    "program arguments to a field operator must be program parameters or "
                    "constants; compute expressions inside a field operator",
                    arg,
                )
            args.append(value)
    loc = source.location(node)
    results: tuple[Expr, ...]
    if isinstance(operator, ScanOperatorIR):
        results = tuple(Scan(operator, tuple(args), i, loc=loc) for i in range(result_count))
    else:
        results = (OperatorCall(operator, tuple(args), loc=loc),)
    return Stencil((), results, outputs, operator.name, loc=loc)


def _output_target(node: ast.expr, parser: _ExprParser, params: Mapping[str, Type]) -> OutputTarget:
    source = parser.source
    base, slice_node = (node.value, node.slice) if isinstance(node, ast.Subscript) else (node, None)
    if not (isinstance(base, ast.Name) and base.id in params):
        raise source.error(DSLSyntaxError, "out= must name a field parameter of the program", node)
    target_type = params[base.id]
    if not isinstance(target_type, FieldType):
        raise source.error(DSLTypeError, f"out= names {base.id!r}, which is a scalar", node)
    rank = len(target_type.dims)
    if slice_node is None:
        return OutputTarget(base.id, ((None, None),) * rank, loc=source.location(node))
    items = slice_node.elts if isinstance(slice_node, ast.Tuple) else [slice_node]
    if len(items) > rank:
        raise source.error(
            DSLTypeError, f"{base.id!r} has {rank} dimension(s) but is sliced in {len(items)}", node
        )
    slices = []
    for item in items:
        if not isinstance(item, ast.Slice) or item.step is not None:
            raise source.error(
                DSLSyntaxError, "the output domain is given with slices like out[1:-1, 2:, :]", item
            )
        slices.append((_bound(item.lower, parser), _bound(item.upper, parser)))
    slices.extend([(None, None)] * (rank - len(slices)))
    return OutputTarget(base.id, tuple(slices), loc=source.location(node))


def _flat_items(node: ast.expr) -> list[ast.expr]:
    """The leaves of a (nested) tuple expression, in order; a non-tuple is its own leaf."""
    if isinstance(node, ast.Tuple):
        return [leaf for element in node.elts for leaf in _flat_items(element)]
    return [node]


def _with_domain(
    outputs: tuple[OutputTarget, ...],
    node: ast.expr,
    parser: _ExprParser,
    params: Mapping[str, Type],
) -> tuple[OutputTarget, ...]:
    """``outputs`` restricted to ``domain={I: (lo, hi), ...}``: absolute indices of the
    outputs, integers or integer scalar parameters (plus or minus an integer)."""
    source = parser.source
    if not isinstance(node, ast.Dict):
        raise source.error(
            DSLSyntaxError, "domain= is a dict like {I: (0, n), K: (1, 10)}", node
        )
    bounds: dict[str, tuple[Bound, Bound]] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        dim = parser._dimension(key) if key is not None else None
        if dim is None:
            raise source.error(
                DSLSyntaxError, "the keys of domain= are dimensions, like {I: (0, n)}", key or node
            )
        if not (isinstance(value, ast.Tuple) and len(value.elts) == 2):
            raise source.error(
                DSLSyntaxError, f"give the domain along {dim} as (start, stop)", value
            )
        lo, hi = (parser.bound(e) for e in value.elts)
        for bound, element in ((lo, value.elts[0]), (hi, value.elts[1])):
            if bound.param is None and bound.offset < 0:
                raise source.error(
                    DSLTypeError,
                    f"domain= takes absolute indices; {bound.offset} along {dim} is before the "
                    "first point",
                    element,
                )
        if lo.param is None and hi.param is None and lo.offset > hi.offset:
            raise source.error(
                DSLTypeError, f"the domain along {dim} ends ({hi}) before it starts ({lo})", value
            )
        bounds[dim.name] = (lo, hi)
    result = []
    for target in outputs:
        target_type = params[target.name]
        assert isinstance(target_type, FieldType)
        missing = sorted(set(bounds) - set(target_type.dim_names))
        if missing:
            raise source.error(
                DSLTypeError,
                f"domain= bounds {', '.join(missing)}, but out field {target.name!r} has "
                f"dimensions ({', '.join(target_type.dim_names)})",
                node,
            )
        slices = list(target.slices)
        for axis, name in enumerate(target_type.dim_names):
            if name not in bounds:
                continue
            if slices[axis] != (None, None):
                raise source.error(
                    DSLSyntaxError,
                    f"{target.name!r} is sliced along {name} and domain= bounds {name} too; "
                    "give the output domain once",
                    node,
                )
            slices[axis] = bounds[name]
        result.append(attrs.evolve(target, slices=tuple(slices)))
    return tuple(result)


def _bound(node: ast.expr | None, parser: _ExprParser) -> int | None:
    if node is None:
        return None
    value = parser.expr(node)
    if isinstance(value, UnaryOp) and value.op == "-" and isinstance(value.operand, Literal):
        value = Literal(-value.operand.value)
    if isinstance(value, Literal) and type(value.value) is int:
        return value.value
    raise parser.source.error(DSLSyntaxError, "slice bounds must be integer constants", node)


def _direct_call_program(definition: ProgramDefinition) -> ProgramIR:
    operator = parse_field_operator(definition)
    params = list(operator.params)
    outputs = []
    for index, result_type in enumerate(operator.result_types):
        name = f"__out{index}"
        params.append(Param(name, result_type))
        rank = len(result_type.dims)
        slices = definition.output_slices or ()
        if len(slices) > rank:
            raise DSLTypeError(
                f"domain= of {operator.name!r} has {len(slices)} slice(s) but its output has "
                f"{rank} dimension(s)"
            )
        outputs.append(OutputTarget(name, (*slices, *((None, None),) * (rank - len(slices)))))
    args = tuple(Ref(p.name) for p in operator.params)
    call = OperatorCall(operator, args, loc=operator.loc)
    stencil = Stencil((), (call,), tuple(outputs), operator.name, loc=operator.loc)
    return ProgramIR(operator.name, tuple(params), (stencil,), loc=operator.loc)
