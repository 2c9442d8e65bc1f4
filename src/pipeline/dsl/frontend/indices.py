"""Index expressions: the offsets of a shift (``f(I + 1)``), the bounds of a domain
(``n - 1``) and the index conditions of ``concat_where`` (``(K == 0) | (I < n)``)."""

from __future__ import annotations

import ast

import numpy as np

from pipeline.dsl.errors import DSLSyntaxError, DSLTypeError
from pipeline.dsl.frontend.names import MISSING, NameResolver
from pipeline.dsl.frontend.symbols import COMPARE_OPS, FLIPPED
from pipeline.dsl.regions import Bound, Region, compare
from pipeline.dsl.types import Dimension, Offset, ScalarType

__all__ = ["bound", "offsets", "region"]


def region(names: NameResolver, node: ast.expr) -> Region:
    """A condition on indices (``K == 0``, ``I < n``, combined with ``& | ~``).

    Raises:
        DSLSyntaxError: anything else.
    """
    match node:
        case ast.BinOp(op=ast.BitAnd(), left=left, right=right):
            return region(names, left) & region(names, right)
        case ast.BinOp(op=ast.BitOr(), left=left, right=right):
            return region(names, left) | region(names, right)
        case ast.UnaryOp(op=ast.Invert(), operand=operand):
            return ~region(names, operand)
        case ast.Compare(left=left, ops=[op], comparators=[right]) if type(op) in COMPARE_OPS:
            symbol = COMPARE_OPS[type(op)]
            dim = names.dimension(left)
            if dim is not None:
                return compare(dim.name, symbol, bound(names, right))
            dim = names.dimension(right)
            if dim is not None:
                return compare(dim.name, FLIPPED[symbol], bound(names, left))
    raise names.error(
        DSLSyntaxError,
        "the condition of concat_where compares dimensions with integers, like K == 0, "
        "I < n or (K == 0) | (K == n - 1), combined with & | ~",
        node,
    )


def bound(names: NameResolver, node: ast.expr) -> Bound:
    """An index bound: an integer, or an integer scalar parameter plus an integer.

    Raises:
        DSLTypeError: a parameter that is not an integer scalar.
        DSLSyntaxError: anything else.
    """
    match node:
        case ast.Constant(value=int() as value) if not isinstance(value, bool):
            return Bound(value)
        case ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=int() as value)):
            return Bound(-value)
        case ast.Name(id=name) if name in names.params:
            param = names.params[name]
            if isinstance(param, ScalarType) and param.dtype.kind in "iu":
                return Bound(0, name)
            raise names.error(
                DSLTypeError,
                f"an index bound must be an integer; {name!r} is {param}",
                node,
            )
        case ast.BinOp(op=ast.Add() | ast.Sub() as op, left=left, right=ast.Constant(
            value=int() as value
        )) if not isinstance(value, bool):
            base = bound(names, left)
            return base + (value if isinstance(op, ast.Add) else -value)
        case ast.Name() | ast.Attribute():
            constant = names.resolve_constant(node)
            if isinstance(constant, int | np.integer) and not isinstance(constant, bool):
                return Bound(int(constant))
    raise names.error(
        DSLSyntaxError,
        "an index bound is an integer, an integer scalar parameter, or one plus or minus "
        "an integer (n - 1)",
        node,
    )


def offsets(names: NameResolver, node: ast.Call) -> tuple[Offset, ...]:
    """The offsets of a shift ``f(I + 1, J - 2)`` or ``f(IHalf + 0.5)``, sorted by array
    axis; zero whole-number amounts left out (a zero half shift still moves between a
    dimension and its staggered counterpart).

    Raises:
        DSLSyntaxError: keywords, no offset, an axis shifted twice, a non-offset.
        DSLTypeError: an amount neither whole nor half (``I + 0.25``).
    """
    if node.keywords:
        raise names.error(DSLSyntaxError, "a shift takes offsets like I + 1, not keywords", node)
    if not node.args:
        raise names.error(DSLSyntaxError, "a shift needs at least one offset, like f(I + 1)", node)
    result: dict[str, Offset] = {}
    for arg in node.args:
        offset = _offset(names, arg)
        axis = offset.dimension.name
        if axis in result:
            earlier = result[axis].dimension
            shifted = (
                f"dimension {axis} is shifted twice"
                if earlier == offset.dimension
                else f"{earlier} and {offset.dimension} share one array axis and are both shifted"
            )
            raise names.error(DSLSyntaxError, f"{shifted} in one call", arg)
        result[axis] = offset
    return tuple(o for _, o in sorted(result.items()) if o.value != 0 or o.half)


def _offset(names: NameResolver, node: ast.expr) -> Offset:
    value: object
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        dim = names.resolve_constant(node.left)
        amount = node.right
        if (
            isinstance(dim, Dimension)
            and isinstance(amount, ast.Constant)
            and isinstance(amount.value, int | float)
            and not isinstance(amount.value, bool)
        ):
            number: float = amount.value
            try:
                return dim + number if isinstance(node.op, ast.Add) else dim - number
            except TypeError as error:
                raise names.error(DSLTypeError, str(error), node) from error
        value = MISSING
    else:
        value = names.resolve_constant(node)
    if isinstance(value, Offset):
        return value
    if isinstance(value, Dimension):
        return Offset(value, 0)
    raise names.error(
        DSLSyntaxError,
        f"{ast.unparse(node)!r} is not an offset; write shifts like f(I + 1, J - 2)",
        node,
    )

