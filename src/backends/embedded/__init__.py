"""Embedded execution: definitions run directly on fields over an array namespace."""

from backends.embedded.execution import EmbeddedExecutable
from backends.embedded.fields import EmbeddedField, field_parameter
from backends.embedded.loading import EmbeddedLoading, embedded_pipeline

__all__ = [
    "EmbeddedExecutable",
    "EmbeddedField",
    "EmbeddedLoading",
    "embedded_pipeline",
    "field_parameter",
]
