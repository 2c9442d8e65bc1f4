"""Tuple values as a field operator writes them: their nesting ("shape"), leaves and names.

A tuple value keeps its nesting while parsing, because Python's meaning of ``t[i]`` and of
unpacking depends on it; the IR itself only holds the leaves, in order. A named collection (a
dataclass or ``typing.NamedTuple`` of fields and scalars) is a tuple with field names: a
``types.Named``, kept as such by every function here that rebuilds a nesting.
"""

from __future__ import annotations

import ast
import types
import typing
from collections.abc import Sequence
from typing import Any

from pipeline.dsl.ir.nodes import Expr
from pipeline.dsl.types import Named, Record, record_of

__all__ = [
    "Names",
    "Values",
    "as_tuple_shape",
    "component_names",
    "describe_shape",
    "flat_items",
    "is_tuple_type",
    "leaves",
    "like",
    "name_leaves",
    "nest",
    "path_names",
    "record_types",
    "shape",
    "tuple_index",
]

# A tuple value as written: an inner tuple stays a tuple.
Values = tuple["Expr | Values", ...]
# The component locals of a tuple-valued name, nested like its value.
Names = tuple["str | Names", ...]


def is_tuple_type(value: object) -> bool:
    """Whether ``value`` is a ``tuple[...]`` annotation or a named collection class."""
    return (
        isinstance(value, types.GenericAlias) and value.__origin__ is tuple
    ) or record_of(value) is not None


def record_types(record: Record) -> tuple[object, ...]:
    """The annotations of a named collection's fields, in order.

    Raises:
        NameError: a string annotation of the class names something its module lacks.
    """
    hints = typing.get_type_hints(record.cls)
    return tuple(hints.get(field) for field in record.fields)


def like(template: object, items: Sequence[Any]) -> tuple[Any, ...]:
    """``items`` as a tuple of ``template``'s kind: a ``Named`` of its record, or plain."""
    if isinstance(template, Named):
        return Named(items, template.record)
    return tuple(items)


def shape(value: object) -> object:
    """The nesting of a tuple value, tuple annotation or tuple expression: a tuple of its
    items' shapes (a ``Named`` for a named collection); None for anything else."""
    if isinstance(value, tuple):
        return like(value, [shape(item) for item in value])
    record = record_of(value)
    if record is not None:
        return Named([shape(item) for item in record_types(record)], record)
    if is_tuple_type(value):
        return tuple(shape(item) for item in value.__args__)  # type: ignore[attr-defined]
    if isinstance(value, ast.Tuple):
        return tuple(shape(item) for item in value.elts)
    return None


def describe_shape(nesting: object) -> str:
    """A shape as the user would write such a tuple: ``(value, (value, value))``, a named
    collection as ``State(u=value, v=value)``."""
    if isinstance(nesting, Named):
        items = zip(nesting.record.fields, nesting, strict=True)
        return f"{nesting.record.name}({', '.join(f'{f}={describe_shape(i)}' for f, i in items)})"
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
        return like(part, [
            build(item) if isinstance(item, tuple) else f"{name}__{next(counter)}"
            for item in part
        ])

    return build(as_tuple_shape(nesting))


def path_names(name: str, nesting: object) -> Names:
    """Names ``<name>__<i>__<j>...`` for the leaves of a tuple of shape ``nesting``, each by
    its path (``t[1][0]`` is ``t__1__0``, a collection's field ``s.u`` is ``s__u``): a
    program's leaf parameters, so that a generated identifier says which leaf it is."""

    def build(prefix: str, part: tuple[object, ...]) -> Names:
        steps = part.record.fields if isinstance(part, Named) else range(len(part))
        return like(part, [
            build(f"{prefix}__{step}", item) if isinstance(item, tuple) else f"{prefix}__{step}"
            for step, item in zip(steps, part, strict=True)
        ])

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
        return like(part, [
            build(item) if isinstance(item, tuple) else next(remaining) for item in part
        ])

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
