"""Python AST -> untyped IR, for field operators and programs.

Parsing resolves every name (parameter, local, global or closure value, builtin), turns
shifts into ``Ref`` offsets (pushing a shift of a whole expression down to its reads) and
records calls of other field operators as ``OperatorCall`` nodes for the inlining pass.
"""

from __future__ import annotations

import ast
import math
import types
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import numpy as np

from pipeline.dsl.builtins import BUILTIN_ARITY, builtin_name
from pipeline.dsl.types import Dimension, FieldType, Offset, ScalarType, as_dtype
from pipeline.errors import DSLError, DSLNameError, DSLSyntaxError, DSLTypeError
from pipeline.frontend.source import FunctionSource, captured_values, function_source
from pipeline.ir.nodes import (
    Assign,
    BinaryOp,
    Call,
    Cast,
    Expr,
    FieldOperatorIR,
    Literal,
    OperatorCall,
    OutputTarget,
    Param,
    ProgramIR,
    Ref,
    Stencil,
    Type,
    UnaryOp,
)
from pipeline.stages import ProgramDefinition

__all__ = ["parameter_types", "parse_field_operator", "parse_program"]

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

_UNSUPPORTED_STATEMENTS: dict[type[ast.stmt], str] = {
    ast.For: "`for` loops are not supported in a field operator; write the computation on "
    "whole fields, with shifts like f(I + 1)",
    ast.While: "`while` loops are not supported in a field operator",
    ast.If: "`if` statements are not supported in a field operator; use where(cond, a, b)",
    ast.With: "`with` is not supported in a field operator",
    ast.Try: "`try` is not supported in a field operator",
    ast.AugAssign: "augmented assignment (+=, ...) is not supported; write x = x + ...",
}


def _is_field_operator(value: object) -> bool:
    definition = getattr(value, "definition", None)
    return isinstance(definition, ProgramDefinition) and definition.kind == "field_operator"


def parameter_types(function: Callable[..., Any], source: FunctionSource) -> tuple[Param, ...]:
    """The typed parameters of a DSL function, from its annotations.

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
    for arg in arguments.args:
        if arg.arg not in annotations:
            raise source.error(
                DSLTypeError,
                f"parameter {arg.arg!r} has no type annotation; annotate it with a field "
                "type like Field[[I, J, K], float64] or a dtype like float64",
                arg,
            )
        params.append(Param(arg.arg, _as_type(annotations[arg.arg], source, arg.annotation or arg)))
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
    value = annotations["return"]
    items = (
        value.__args__
        if isinstance(value, types.GenericAlias) and value.__origin__ is tuple
        else (value,)
    )
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
        self.captured = captured_values(function)

    def error(self, cls: type[DSLError], message: str, node: ast.AST) -> DSLError:
        return self.source.error(cls, message, node)

    # -- names -------------------------------------------------------------------------
    def resolve(self, node: ast.Name) -> object:
        """The captured value of a global/closure name, or a Python builtin."""
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
                return Ref(name, loc=loc)
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
            case ast.IfExp():
                raise self.error(
                    DSLSyntaxError,
                    "conditional expressions are not supported; use where(c, a, b)",
                    node,
                )
            case ast.Subscript():
                raise self.error(
                    DSLSyntaxError,
                    "subscripts are not supported inside a field operator; read neighbours "
                    "with shifts like f(I + 1), and choose the output domain with out=out[...] "
                    "in the program",
                    node,
                )
            case ast.Call():
                return self.call(node)
        raise self.error(
            DSLSyntaxError,
            f"{type(node).__name__} expressions are not supported in a field operator",
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
            return shift_expr(Ref(callee.id, loc=self.source.location(callee)), self.offsets(node))
        value = (
            self.resolve_constant(callee)
            if isinstance(callee, ast.Name | ast.Attribute)
            else _MISSING
        )
        if value is _MISSING:
            # (expression)(I + 1): shift every read inside the expression.
            return shift_expr(self.expr(callee), self.offsets(node))
        if node.keywords:
            raise self.error(
                DSLSyntaxError, "keyword arguments are not supported here", node.keywords[0]
            )
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
        if name is not None:
            arity = BUILTIN_ARITY[name]
            if len(node.args) != arity:
                raise self.error(
                    DSLTypeError, f"{name}() takes {arity} argument(s), got {len(node.args)}", node
                )
            return Call(name, tuple(self.expr(a) for a in node.args), loc=loc)
        if _is_field_operator(value):
            operator = parse_field_operator(value.definition)  # type: ignore[attr-defined]
            if len(node.args) != len(operator.params):
                raise self.error(
                    DSLTypeError,
                    f"{operator.name}() takes {len(operator.params)} argument(s), "
                    f"got {len(node.args)}",
                    node,
                )
            return OperatorCall(operator, tuple(self.expr(a) for a in node.args), loc=loc)
        raise self.error(
            DSLTypeError,
            f"{ast.unparse(callee)!r} is not a field, a DSL builtin or a field operator, so it "
            "cannot be called in a field operator",
            node,
        )

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


class _Missing:
    pass


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
    params = parameter_types(function, source)
    result_types = _result_types(function, source)
    parser = _ExprParser(function, source, {p.name: p.type for p in params})
    body: list[Assign] = []
    results: tuple[Expr, ...] | None = None
    statements = _without_docstring(source.function_def.body)
    for index, statement in enumerate(statements):
        if results is not None:
            raise source.error(
                DSLSyntaxError, "statements after `return` are not allowed", statement
            )
        match statement:
            case ast.Assign(targets=[target], value=value):
                names = _target_names(target, source)
                body.append(Assign(names, parser.expr(value), loc=source.location(statement)))
                parser.locals.update(names)
            case ast.AnnAssign(target=ast.Name(id=name), value=value) if value is not None:
                body.append(Assign((name,), parser.expr(value), loc=source.location(statement)))
                parser.locals.add(name)
            case ast.Assign():
                raise source.error(
                    DSLSyntaxError, "chained assignment (a = b = ...) is not supported", statement
                )
            case ast.Return(value=value) if value is not None:
                items = value.elts if isinstance(value, ast.Tuple) else [value]
                results = tuple(parser.expr(item) for item in items)
            case ast.Pass():
                continue
            case _:
                message = _UNSUPPORTED_STATEMENTS.get(
                    type(statement),
                    f"{type(statement).__name__} statements are not supported in a field operator",
                )
                raise source.error(DSLSyntaxError, message, statement)
        del index
    if results is None:
        raise source.error(
            DSLSyntaxError,
            f"field operator {function.__name__!r} must end with a return statement",
            source.function_def,
        )
    if len(results) != len(result_types):
        raise source.error(
            DSLTypeError,
            f"{function.__name__!r} returns {len(results)} value(s) but its annotation declares "
            f"{len(result_types)}",
            statements[-1],
        )
    operator = FieldOperatorIR(
        function.__name__,
        params,
        tuple(body),
        results,
        result_types,
        loc=source.location(source.function_def),
    )
    _OPERATOR_CACHE[definition] = operator
    return operator


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[1:]
    return body


def _target_names(target: ast.expr, source: FunctionSource) -> tuple[str, ...]:
    if isinstance(target, ast.Name):
        return (target.id,)
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        return tuple(e.id for e in target.elts)  # type: ignore[attr-defined]
    raise source.error(
        DSLSyntaxError,
        "only assignments to plain names are supported (x = ..., or a, b = op(...))",
        target,
    )


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
    if not _is_field_operator(callee):
        raise source.error(
            DSLTypeError,
            f"{ast.unparse(node.func)!r} is not a field operator; a program can only "
            "call field operators",
            node.func,
        )
    operator = parse_field_operator(callee.definition)  # type: ignore[attr-defined]
    keywords = {k.arg: k for k in node.keywords}
    if None in keywords or set(keywords) - {"out"}:
        bad = next(k for k in node.keywords if k.arg != "out")
        raise source.error(
            DSLSyntaxError, f"unexpected keyword {bad.arg!r}; only out= is allowed", bad
        )
    if "out" not in keywords:
        raise source.error(
            DSLTypeError,
            f"the call of {operator.name!r} needs out=..., e.g. out=out[1:-1, 1:-1, :]",
            node,
        )
    out_node = keywords["out"].value
    out_items = out_node.elts if isinstance(out_node, ast.Tuple) else [out_node]
    outputs = tuple(_output_target(item, parser, params) for item in out_items)
    if len(outputs) != len(operator.result_types):
        raise source.error(
            DSLTypeError,
            f"{operator.name!r} returns {len(operator.result_types)} field(s) but out= gives "
            f"{len(outputs)}",
            out_node,
        )
    if len(node.args) != len(operator.params):
        raise source.error(
            DSLTypeError,
            f"{operator.name}() takes {len(operator.params)} argument(s), got {len(node.args)}",
            node,
        )
    args: list[Expr] = []
    for arg in node.args:
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
    call = OperatorCall(operator, tuple(args), loc=source.location(node))
    return Stencil((), (call,), outputs, operator.name, loc=source.location(node))


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
