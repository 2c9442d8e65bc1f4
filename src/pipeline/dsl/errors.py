"""The stencil DSL's errors: definitions it cannot accept, and arguments whose domain does
not cover what a program reads. Each subclasses the closest built-in."""

from __future__ import annotations

from pipeline.errors import SourceError

__all__ = ["DSLError", "DSLNameError", "DSLSyntaxError", "DSLTypeError", "DomainError"]


class DomainError(ValueError):
    """The arrays of a call do not cover the output domain plus the stencil's reach.

    Raised before anything runs, with the same message on every backend: it names the
    program, the field, the dimension and the missing halo.
    """


class DSLError(SourceError):
    """A program definition that the DSL cannot accept, located in the user's source.

    Attributes:
        message: what is wrong and what to change.
        filename, line, column: where (1-based line and column), when known.
        source_line: the offending line of source, when available.
    """

    def __init__(
        self,
        message: str,
        *,
        filename: str | None = None,
        line: int | None = None,
        column: int | None = None,
        source_line: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.filename = filename
        self.line = line
        self.column = column
        self.source_line = source_line

    @classmethod
    def at(cls, location: object | None, message: str) -> DSLError:
        """An error located at ``location`` (anything with ``filename``, ``line``,
        ``column`` and ``source_line``, such as an IR ``SourceLocation``), or unlocated."""
        if location is None:
            return cls(message)
        return cls(
            message,
            filename=getattr(location, "filename", None),
            line=getattr(location, "line", None),
            column=getattr(location, "column", None),
            source_line=getattr(location, "source_line", None),
        )

    def __str__(self) -> str:
        if self.filename is None or self.line is None:
            return self.message
        where = f'File "{self.filename}", line {self.line}'
        if self.column is not None:
            where += f", column {self.column}"
        text = f"{where}: {self.message}"
        if self.source_line is not None:
            stripped = self.source_line.rstrip()
            indent = len(stripped) - len(stripped.lstrip())
            text += f"\n    {stripped.lstrip()}"
            if self.column is not None and self.column - 1 >= indent:
                text += "\n    " + " " * (self.column - 1 - indent) + "^"
        return text


class DSLSyntaxError(DSLError):
    """Python syntax that the DSL does not support (loops, attribute access, subscripts...)."""


class DSLNameError(DSLError, NameError):
    """A name that is neither a parameter, a local, nor a known global of the definition."""


class DSLTypeError(DSLError, TypeError):
    """A type error: dimensions, dtypes, promotion, number of outputs, missing annotations."""
