"""Embedded execution: definitions run directly on fields over an array namespace."""

from backends.embedded.execution import EmbeddedExecutable
from backends.embedded.fields import EmbeddedField, field_parameter

__all__ = ["EmbeddedExecutable", "EmbeddedField", "field_parameter"]
