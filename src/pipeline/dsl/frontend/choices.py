"""``where``, ``concat_where``, ``astype``, the dtype conversions (``float32(x)``) and ``a if c
else b`` in a DSL body, of single values and of tuple values alike.

As in GT4Py, a choice between two tuples is the tuple of the choices between their items, and a
conversion of a tuple converts each item: ``where(m, (a, b), (c, d))`` is ``(where(m, a, c),
where(m, b, d))``, ``float32((a, b))`` is ``(float32(a), float32(b))``, nested tuples and
named collections item by item. The IR holds leaves only,
so each becomes one IR node per leaf, nested like the branches; a single value is one node, as
it always was.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

import numpy as np

from pipeline.dsl.builtins import SCALAR_CHOICE, DType
from pipeline.dsl.errors import DSLTypeError
from pipeline.dsl.frontend.indices import region
from pipeline.dsl.frontend.names import NameResolver
from pipeline.dsl.frontend.tuples import Values, describe_shape, leaves, nest, shape
from pipeline.dsl.ir.nodes import Call, Cast, ConcatWhere, Expr, SourceLocation
from pipeline.dsl.types import as_dtype

__all__ = ["ELEMENTWISE_BUILTINS", "conditional", "conversion", "elementwise_builtin"]

#: The builtins that take tuples as well as single values.
ELEMENTWISE_BUILTINS = frozenset({"where", "concat_where", "astype"})

# What parses an argument: a single value, or a tuple value nested as written.
Structured = Callable[[ast.expr], Expr | Values]


def elementwise_builtin(
    node: ast.Call, name: str, names: NameResolver, structured: Structured
) -> Expr | Values:
    """The call ``node`` of the builtin ``name`` (one of ``ELEMENTWISE_BUILTINS``), its
    arguments parsed by ``structured``: one IR node for single values, a tuple of them, nested
    like the arguments, for tuple values.

    Raises:
        DSLTypeError: the wrong number of arguments, a dtype that is not a DSL dtype, a tuple
            as ``where``'s mask, or branches nested differently.
        DSLSyntaxError: a condition of ``concat_where`` that is not a condition on indices.
    """
    loc = names.source.location(node)
    if name == "astype":
        return _astype(node, names, structured, loc)
    if len(node.args) != 3:
        takes = (
            "a condition and two values"
            if name == "concat_where"
            else f"3 argument(s), got {len(node.args)}"
        )
        raise names.error(DSLTypeError, f"{name}() takes {takes}", node)
    condition, then, otherwise = node.args
    combine: Callable[[Expr, Expr], Expr]
    if name == "concat_where":
        inside = region(names, condition)

        def combine(a: Expr, b: Expr) -> Expr:
            return ConcatWhere(inside, a, b, loc=loc)
    else:
        mask = structured(condition)
        if isinstance(mask, tuple):
            raise names.error(
                DSLTypeError,
                f"the mask of where() is one field or scalar, but {ast.unparse(condition)!r} "
                f"is a tuple {describe_shape(shape(mask))}; the mask chooses every item of "
                "tuple branches alike",
                condition,
            )

        def combine(a: Expr, b: Expr) -> Expr:
            return Call(name, (mask, a, b), loc=loc)

    return _pairwise(node, f"{name}()", (structured(then), structured(otherwise)), combine, names)


def conditional(
    node: ast.IfExp, names: NameResolver, expr: Callable[[ast.expr], Expr], structured: Structured
) -> Expr | Values:
    """``a if c else b`` on a scalar condition ``c``: a choice per leaf of ``a`` and ``b``.

    Raises:
        DSLTypeError: branches nested differently.
    """
    loc = names.source.location(node)
    condition = expr(node.test)

    def combine(a: Expr, b: Expr) -> Expr:
        return Call(SCALAR_CHOICE, (condition, a, b), loc=loc)

    branches = (structured(node.body), structured(node.orelse))
    return _pairwise(node, "this conditional expression", branches, combine, names)


def _astype(
    node: ast.Call, names: NameResolver, structured: Structured, loc: SourceLocation
) -> Expr | Values:
    """``astype(value, dtype)``: each leaf of ``value`` converted to ``dtype``."""
    if len(node.args) != 2:
        raise names.error(DSLTypeError, "astype() takes a value and a dtype", node)
    dtype = as_dtype(names.resolve_constant(node.args[1]))
    if dtype is None:
        raise names.error(
            DSLTypeError,
            "the second argument of astype() must be a DSL dtype (float64, ...)",
            node.args[1],
        )
    return _converted(structured(node.args[0]), dtype, loc)


def conversion(
    node: ast.Call, dtype: DType, names: NameResolver, structured: Structured
) -> Expr | Values:
    """``float32(value)`` (any DSL dtype called): ``astype(value, float32)``, each leaf of a
    tuple value converted.

    Raises:
        DSLTypeError: not exactly one value.
    """
    if len(node.args) != 1 or node.keywords:
        raise names.error(DSLTypeError, f"{ast.unparse(node.func)}() takes one value", node)
    return _converted(structured(node.args[0]), dtype.dtype, names.source.location(node))


def _converted(value: Expr | Values, dtype: np.dtype[Any], loc: SourceLocation) -> Expr | Values:
    if not isinstance(value, tuple):
        return Cast(value, dtype, loc=loc)
    return nest(shape(value), [Cast(leaf, dtype, loc=loc) for leaf in leaves(value)])  # type: ignore[arg-type]


def _pairwise(
    node: ast.expr,
    what: str,
    branches: tuple[Expr | Values, Expr | Values],
    combine: Callable[[Expr, Expr], Expr],
    names: NameResolver,
) -> Expr | Values:
    """``combine`` of two single values, or of each pair of leaves of two tuples nested alike
    (the result nested as they are, a named collection kept as its class).

    Raises:
        DSLTypeError: the branches are nested differently (a tuple and a single value too).
    """
    first, second = branches
    if not isinstance(first, tuple) and not isinstance(second, tuple):
        return combine(first, second)
    nesting = shape(first)
    if shape(second) != nesting:
        raise names.error(
            DSLTypeError,
            f"the branches of {what} are {describe_shape(nesting)} and "
            f"{describe_shape(shape(second))}; a choice between tuples is made item by item, "
            "so nest both branches alike",
            node,
        )
    assert isinstance(first, tuple) and isinstance(second, tuple)
    pairs = zip(leaves(first), leaves(second), strict=True)
    return nest(nesting, [combine(a, b) for a, b in pairs])  # type: ignore[arg-type]
