"""The errors of the CUDA backend."""

from __future__ import annotations

__all__ = ["CudaCompilationError", "UnsupportedConstructError"]


class UnsupportedConstructError(NotImplementedError):
    """A program uses a construct the CUDA translation cannot generate; the message names the
    program, the construct and what to do instead."""


class CudaCompilationError(RuntimeError):
    """The CUDA compiler failed or cannot be run; the message has its output and where the
    source was kept."""
