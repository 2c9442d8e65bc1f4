"""Name resolution in a DSL function body: parameters and locals, captured globals and
closure values, Python builtins, and attribute chains on modules (``np.pi``)."""

from __future__ import annotations

import ast
import types
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from pipeline.dsl.errors import DSLError, DSLNameError, DSLSyntaxError
from pipeline.dsl.frontend.scope import Scope
from pipeline.dsl.frontend.source import FunctionSource, captured_values, python_builtin
from pipeline.dsl.ir.nodes import Type
from pipeline.dsl.stages import ProgramDefinition
from pipeline.dsl.types import Dimension

__all__ = ["MISSING", "NameResolver", "is_field_operator", "is_scan_operator"]


class _Missing:
    """The type of ``MISSING``."""


# What a name that is a parameter or local (not a constant) resolves to as a constant.
MISSING = _Missing()


def is_field_operator(value: object) -> bool:
    """Whether ``value`` is a field operator (a decorated DSL function of that kind)."""
    definition = getattr(value, "definition", None)
    return isinstance(definition, ProgramDefinition) and definition.kind == "field_operator"


def is_scan_operator(value: object) -> bool:
    """Whether ``value`` is a scan operator."""
    definition = getattr(value, "definition", None)
    return isinstance(definition, ProgramDefinition) and definition.kind == "scan_operator"


@attrs.define
class NameResolver:
    """What the names of one DSL function body refer to."""

    function: Callable[..., Any]
    source: FunctionSource
    params: Mapping[str, Type]
    scope: Scope
    captured: dict[str, Any]

    @classmethod
    def of(
        cls,
        function: Callable[..., Any],
        source: FunctionSource,
        params: Mapping[str, Type],
        *,
        single_assignment: bool = False,
    ) -> NameResolver:
        """The resolver of ``function``'s body, with no locals yet (see ``Scope`` for
        ``single_assignment``)."""
        scope = Scope(source, frozenset(params), single_assignment)
        return cls(function, source, params, scope, captured_values(function))

    def error(self, cls: type[DSLError], message: str, node: ast.AST) -> DSLError:
        """An error of class ``cls`` located at ``node``."""
        return self.source.error(cls, message, node)

    def is_variable(self, name: str) -> bool:
        """Whether ``name`` is a parameter or a local (a value, not a constant)."""
        return name in self.params or name in self.scope.locals

    def resolve(self, node: ast.Name) -> object:
        """The captured value of a global/closure name, or a Python builtin.

        Raises:
            DSLNameError: the name is none of these, or a local that may have no value here.
        """
        self.scope.check_bound(node.id, (node.id,), node)
        if node.id in self.captured:
            return self.captured[node.id]
        try:
            return python_builtin(node.id)
        except KeyError:
            raise self.error(
                DSLNameError,
                f"name {node.id!r} is not defined: not a parameter, a local variable, or a "
                f"global of {self.function.__name__!r}",
                node,
            ) from None

    def resolve_constant(self, node: ast.expr) -> object:
        """Evaluate a Name/Attribute chain that refers to a global (e.g. ``np.pi``);
        ``MISSING`` for a parameter or local, or any other expression.

        Raises:
            DSLSyntaxError: an attribute of a field, or of something that is neither a module
                nor an attrs value.
            DSLNameError: an unknown name or attribute.
        """
        if isinstance(node, ast.Name):
            return MISSING if self.is_variable(node.id) else self.resolve(node)
        if not isinstance(node, ast.Attribute):
            return MISSING
        base = self.resolve_constant(node.value)
        if base is MISSING:
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

    def callee(self, node: ast.expr) -> object:
        """What a called expression names: a constant for a name or attribute chain,
        ``MISSING`` for a variable or any other expression."""
        if isinstance(node, ast.Name | ast.Attribute):
            return self.resolve_constant(node)
        return MISSING

    def dimension(self, node: ast.expr) -> Dimension | None:
        """The dimension ``node`` names, if it names one."""
        if isinstance(node, ast.Name | ast.Attribute):
            value = self.resolve_constant(node)
            if isinstance(value, Dimension):
                return value
        return None
