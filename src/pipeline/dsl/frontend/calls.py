"""Calls in a DSL body that are not shifts or operator calls (conversions and DSL
builtins), and the matching of any call's arguments to the callee's parameters."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Sequence

from pipeline.dsl.builtins import BUILTIN_ARITY, DType, builtin_name
from pipeline.dsl.errors import DSLSyntaxError, DSLTypeError
from pipeline.dsl.frontend.names import NameResolver
from pipeline.dsl.frontend.source import FunctionSource
from pipeline.dsl.ir.nodes import Call, Cast, Expr
from pipeline.dsl.types import as_dtype

__all__ = ["builtin_call", "call_arguments"]

# bool(x), int(x), float(x) of scalars: the Python types as conversions.
_PYTHON_CONSTRUCTORS = (builtins.bool, builtins.int, builtins.float)


def builtin_call(
    node: ast.Call, value: object, names: NameResolver, expr: Callable[[ast.expr], Expr]
) -> Expr:
    """The call ``node`` of ``value``, a conversion (``float64(x)``, ``int(x)``) or a DSL
    builtin other than those of tuples too (``choices.ELEMENTWISE_BUILTINS``), with its
    arguments parsed by ``expr``.

    Raises:
        DSLTypeError: ``value`` is neither, or the arguments do not fit it.
    """
    loc = names.source.location(node)
    if isinstance(value, DType) or any(value is c for c in _PYTHON_CONSTRUCTORS):
        if len(node.args) != 1:
            raise names.error(DSLTypeError, f"{ast.unparse(node.func)}() takes one value", node)
        constructor = None if isinstance(value, DType) else getattr(value, "__name__", None)
        dtype = value.dtype if isinstance(value, DType) else as_dtype(value)
        assert dtype is not None
        return Cast(expr(node.args[0]), dtype, constructor=constructor, loc=loc)
    name = builtin_name(value)
    if name is None:
        raise names.error(
            DSLTypeError,
            f"{ast.unparse(node.func)!r} is not a field, a DSL builtin or a field operator, "
            "so it cannot be called in a field operator",
            node,
        )
    arity = BUILTIN_ARITY[name]
    if len(node.args) != arity:
        raise names.error(
            DSLTypeError, f"{name}() takes {arity} argument(s), got {len(node.args)}", node
        )
    return Call(name, tuple(expr(a) for a in node.args), loc=loc)


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
