"""Finding a definition's source and the values its body refers to."""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import types
from collections.abc import Callable
from typing import Any

import attrs

from pipeline.dsl.errors import DSLError, DSLSyntaxError
from pipeline.dsl.ir.nodes import SourceLocation

__all__ = ["FunctionSource", "captured_values", "function_source", "with_captured_globals"]


@attrs.frozen
class FunctionSource:
    """A function's parsed source and how to map AST positions back into the user's file."""

    function_def: ast.FunctionDef
    filename: str
    first_line: int
    indent: int
    lines: tuple[str, ...]

    def location(self, node: ast.AST) -> SourceLocation:
        """The user's file, line and column (1-based) of ``node``."""
        line_in_source = getattr(node, "lineno", 1)
        column = getattr(node, "col_offset", 0) + self.indent + 1
        index = line_in_source - 1
        text = self.lines[index] if 0 <= index < len(self.lines) else None
        return SourceLocation(self.filename, self.first_line + index, column, text)

    def error(self, cls: type[DSLError], message: str, node: ast.AST) -> DSLError:
        """An error of class ``cls`` located at ``node``."""
        return cls.at(self.location(node), message)


def function_source(function: Callable[..., Any]) -> FunctionSource:
    """Parse ``function``'s source.

    Raises:
        DSLSyntaxError: the source cannot be found (e.g. a function typed into a REPL or made
            with ``exec``) or is not a plain ``def``.
    """
    try:
        lines, first_line = inspect.getsourcelines(function)
        filename = inspect.getsourcefile(function) or "<unknown>"
    except (OSError, TypeError) as error:
        raise DSLSyntaxError(
            f"cannot read the source of {function.__qualname__!r} ({error}); define DSL "
            "functions in a file, not in an interactive session or with exec()"
        ) from error
    text = "".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
    tree = ast.parse(textwrap.dedent(text))
    function_def = tree.body[0] if tree.body else None
    if not isinstance(function_def, ast.FunctionDef):
        raise DSLSyntaxError(
            f"{function.__qualname__!r} must be defined with a plain `def` statement",
            filename=filename,
            line=first_line,
        )
    stripped = tuple(line.rstrip("\n") for line in lines)
    return FunctionSource(function_def, filename, first_line, indent, stripped)


def captured_values(function: Callable[..., Any]) -> dict[str, Any]:
    """The global and closure values ``function``'s body refers to, by name.

    Builtins are not included (they are resolved by the frontend itself), except that a
    global or closure value shadowing a builtin wins, as in Python.
    """
    closure = inspect.getclosurevars(function)
    values: dict[str, Any] = {}
    values.update(closure.globals)
    values.update(closure.nonlocals)
    # getclosurevars lists attribute names as "unbound"; names used as bare globals that are
    # not yet defined end up there too and are reported by the frontend when used.
    return values


def with_captured_globals(function: Callable[..., Any], captured: dict[str, Any]) -> Any:
    """``function`` reading its globals from a snapshot that holds the ``captured`` values.

    Compiled backends bake the globals a definition uses into the code on first use; running
    the embedded definition against the same snapshot makes every backend see the same values
    when a global changes later.
    """
    if not isinstance(function, types.FunctionType):
        return function
    namespace = dict(function.__globals__)
    namespace.update({k: v for k, v in captured.items() if k in function.__code__.co_names})
    frozen = types.FunctionType(
        function.__code__,
        namespace,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    frozen.__kwdefaults__ = function.__kwdefaults__
    return frozen


def python_builtin(name: str) -> Any:
    """Python's builtin called ``name``, or raise ``KeyError``."""
    return vars(builtins)[name]
