"""A program's tuple-typed parameters in its body: ``t``, ``t[1]``, ``s.u``, ``out[0][1:-1, :]``.

A program's tuple parameter is one IR parameter per leaf (``t__1__0`` for ``t[1][0]``). In the
body, an argument or ``out=`` that names such a parameter, or indexes it, resolves to the
leaves it means in Python: ``t`` to the whole tuple, ``t[1]`` (or a named collection's ``s.u``)
to an item (a tuple again if the item is one), ``out[0][1:-1, :]`` to the leaf ``out[0]``
sliced, ``State(a, b)`` to a named collection. Tuple expressions keep their nesting, so that a
call's nesting is checked as Python would unpack it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

import attrs

from pipeline.dsl.errors import DSLTypeError
from pipeline.dsl.frontend.calls import call_arguments
from pipeline.dsl.frontend.source import FunctionSource
from pipeline.dsl.frontend.tuples import Names, like, tuple_index
from pipeline.dsl.ir.nodes import shown_parameter
from pipeline.dsl.types import Named, record_of

__all__ = ["ProgramTuples", "Resolved", "resolved_leaves"]

# An argument as resolved: a leaf expression (a parameter's name, a slice of one, a constant),
# or a tuple of resolved items nested as written.
Resolved = ast.expr | tuple["Resolved", ...]


def resolved_leaves(value: Resolved) -> list[ast.expr]:
    """The leaf expressions of ``value``, in order."""
    if isinstance(value, tuple):
        return [leaf for item in value for leaf in resolved_leaves(item)]
    return [value]


@attrs.frozen
class ProgramTuples:
    """The tuple parameters of one program, by name, each with its leaves' names nested as
    its annotation."""

    source: FunctionSource
    tuples: Mapping[str, Names]
    # What a name or attribute chain of the program's globals is (a collection class, say).
    constant: Callable[[ast.expr], object]

    def ir_tuples(self) -> tuple[tuple[str, Names], ...]:
        """What ``ProgramIR.tuples`` holds: the tuple parameters in order."""
        return tuple(self.tuples.items())

    def shown(self, name: str) -> str:
        """Leaf parameter ``name`` as the user writes it (``t[1][0]``); other names as
        they are."""
        return shown_parameter(name, self.tuples.items())

    def resolve(self, node: ast.expr) -> Resolved:
        """``node`` with every tuple parameter, and index of one, replaced by the leaves it
        means (leaves are ``ast.Name``\\ s of the leaf parameters, at ``node``'s place).

        Raises:
            DSLTypeError: a tuple parameter indexed by anything but an integer constant in
                range, or sliced as a whole.
        """
        if isinstance(node, ast.Tuple):
            return tuple(self.resolve(item) for item in node.elts)
        if isinstance(node, ast.Name) and node.id in self.tuples:
            return _names(self.tuples[node.id], node)
        if isinstance(node, ast.Attribute) and self._rooted(node.value):
            return self._field(node, self.resolve(node.value))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
            record = record_of(self.constant(node.func))
            if record is not None:
                fields = list(record.fields)
                items = call_arguments(node, record.name, fields, node.keywords, self.source)
                return Named([self.resolve(item) for item in items], record)
        if not isinstance(node, ast.Subscript):
            return node
        base = self.resolve(node.value)
        if isinstance(base, tuple):
            return self._item(base, node)
        if base is node.value:
            return node
        # A leaf of a tuple parameter, sliced: out[0][1:-1, :].
        return ast.copy_location(ast.Subscript(base, node.slice, ast.Load()), node)

    def _rooted(self, node: ast.expr) -> bool:
        """Whether ``node`` is a tuple parameter, or an item or field of one."""
        if isinstance(node, ast.Name):
            return node.id in self.tuples
        return isinstance(node, ast.Subscript | ast.Attribute) and self._rooted(node.value)

    def _field(self, node: ast.Attribute, base: Resolved) -> Resolved:
        written = ast.unparse(node.value)
        if not isinstance(base, Named):
            raise self.source.error(
                DSLTypeError,
                f"{written!r} has no attribute {node.attr!r}: only a dataclass or NamedTuple "
                "parameter has its fields as attributes",
                node,
            )
        if node.attr not in base.record.fields:
            raise self.source.error(
                DSLTypeError,
                f"{written!r} is a {base.record.name}, which has no field {node.attr!r}; its "
                f"fields are {', '.join(base.record.fields)}",
                node,
            )
        item: Resolved = base[base.position(node.attr)]
        return item

    def _item(self, base: tuple[Resolved, ...], node: ast.Subscript) -> Resolved:
        written = ast.unparse(node.value)
        if isinstance(base, Named) and not base.record.is_tuple:
            raise self.source.error(
                DSLTypeError,
                f"{written!r} is a {base.record.name}, a dataclass: read its fields by name "
                f"({written}.{base.record.fields[0]}), as Python does",
                node,
            )
        index = tuple_index(node.slice)
        if index is None:
            raise self.source.error(
                DSLTypeError,
                f"{written!r} is a tuple of {len(base)} item(s): index it with an integer "
                f"constant like {written}[0] (an output's domain is sliced on a field, like "
                f"{written}[0][1:-1, :])",
                node,
            )
        if not -len(base) <= index < len(base):
            raise self.source.error(
                DSLTypeError,
                f"{written!r} is a tuple of {len(base)} item(s); index {index} is out of range",
                node,
            )
        return base[index]


def _names(names: Names, node: ast.expr) -> Resolved:
    return like(names, [
        _names(item, node)
        if isinstance(item, tuple)
        else ast.copy_location(ast.Name(item, ast.Load()), node)
        for item in names
    ])

