"""Tuple values as a field operator writes them: their nesting ("shape"), leaves and names.

A tuple value keeps its nesting while parsing, because Python's meaning of ``t[i]`` and of
unpacking depends on it; the IR itself only holds the leaves, in order.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Sequence

from pipeline.dsl.ir.nodes import Expr

__all__ = [
    "Names",
    "Values",
    "as_tuple_shape",
    "component_names",
    "describe_shape",
    "flat_items",
    "is_tuple_type",
    "leaves",
    "name_leaves",
    "nest",
    "path_names",
    "shape",
    "tuple_index",
]

# A tuple value as written: an inner tuple stays a tuple.
Values = tuple["Expr | Values", ...]
# The component locals of a tuple-valued name, nested like its value.
Names = tuple["str | Names", ...]


def is_tuple_type(value: object) -> bool:
    """Whether ``value`` is a ``tuple[...]`` annotation."""
    return isinstance(value, types.GenericAlias) and value.__origin__ is tuple


def shape(value: object) -> object:
    """The nesting of a tuple value, tuple annotation or tuple expression: a tuple of its
    items' shapes; None for anything that is not a tuple."""
    if isinstance(value, tuple):
        return tuple(shape(item) for item in value)
    if is_tuple_type(value):
        return tuple(shape(item) for item in value.__args__)  # type: ignore[attr-defined]
    if isinstance(value, ast.Tuple):
        return tuple(shape(item) for item in value.elts)
    return None


def describe_shape(nesting: object) -> str:
    """A shape as the user would write such a tuple: ``(value, (value, value))``."""
    if isinstance(nesting, tuple):
        return f"({', '.join(describe_shape(item) for item in nesting)})"
    return "value"


def as_tuple_shape(nesting: object) -> tuple[object, ...]:
    """A single value as a tuple of one: ``-> F``, ``return a`` and ``return (a,)`` agree."""
    return nesting if isinstance(nesting, tuple) else (nesting,)


def component_names(name: str, nesting: object) -> Names:
    """Names ``<name>__<i>`` for the leaves of a tuple of shape ``nesting``, numbered in order."""
    counter = iter(range(len(_flatten_shape(nesting))))

    def build(part: tuple[object, ...]) -> Names:
        return tuple(
            build(item) if isinstance(item, tuple) else f"{name}__{next(counter)}"
            for item in part
        )

    return build(as_tuple_shape(nesting))


def path_names(name: str, nesting: object) -> Names:
    """Names ``<name>__<i>__<j>...`` for the leaves of a tuple of shape ``nesting``, each by
    its path (``t[1][0]`` is ``t__1__0``): a program's leaf parameters, so that a generated
    identifier says which leaf it is."""

    def build(prefix: str, part: tuple[object, ...]) -> Names:
        return tuple(
            build(f"{prefix}__{index}", item) if isinstance(item, tuple) else f"{prefix}__{index}"
            for index, item in enumerate(part)
        )

    return build(name, as_tuple_shape(nesting))


def _flatten_shape(nesting: object) -> list[None]:
    if isinstance(nesting, tuple):
        return [leaf for item in nesting for leaf in _flatten_shape(item)]
    return [None]


def leaves(values: Values) -> tuple[Expr, ...]:
    """The values of a (nested) tuple value, in order."""
    return tuple(
        leaf
        for item in values
        for leaf in (leaves(item) if isinstance(item, tuple) else (item,))
    )


def name_leaves(names: Names) -> tuple[str, ...]:
    """The component locals of a (nested) tuple of names, in order."""
    return tuple(
        leaf
        for item in names
        for leaf in (name_leaves(item) if isinstance(item, tuple) else (item,))
    )


def nest(nesting: tuple[object, ...], items: Sequence[Expr]) -> Values:
    """``items`` (in order) as a tuple value nested like ``nesting``."""
    remaining = iter(items)

    def build(part: tuple[object, ...]) -> Values:
        return tuple(build(item) if isinstance(item, tuple) else next(remaining) for item in part)

    return build(nesting)


def tuple_index(node: ast.expr) -> int | None:
    """The integer of a constant index ``t[2]`` or ``t[-1]``; None for any other subscript."""
    match node:
        case ast.Constant(value=int() as index) if not isinstance(index, bool):
            return index
        case ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=int() as index)) if (
            not isinstance(index, bool)
        ):
            return -index
    return None


def flat_items(node: ast.expr) -> list[ast.expr]:
    """The leaves of a (nested) tuple expression, in order; a non-tuple is its own leaf."""
    if isinstance(node, ast.Tuple):
        return [leaf for element in node.elts for leaf in flat_items(element)]
    return [node]
