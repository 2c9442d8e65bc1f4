"""Embedded backends: the loading step and pipeline that run a definition directly on an array
namespace (the execution itself is ``backends.arrayapi``'s)."""

from backends.embedded.loading import EmbeddedLoading, embedded_pipeline

__all__ = ["EmbeddedLoading", "embedded_pipeline"]
