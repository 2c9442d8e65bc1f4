"""Exception types raised by :mod:`allocators`.

Each subclasses the closest built-in exception, so ``except ValueError`` / ``except TypeError`` /
``except ImportError`` keep working for callers that do not know these names.
"""

from __future__ import annotations

__all__ = [
    "DeviceMismatchError",
    "DtypeUnavailableError",
    "MissingOptionalDependencyError",
    "NotAnAllocatorError",
]


class DeviceMismatchError(ValueError):
    """A requested device does not agree with the device type of the allocator or namespace."""


class NotAnAllocatorError(TypeError):
    """An object given as an allocator is neither a buffer allocator, an array namespace, nor a
    factory yielding one."""


class MissingOptionalDependencyError(ImportError):
    """An optional package (e.g. CuPy) needed for the requested allocator is not installed."""


class DtypeUnavailableError(TypeError):
    """A requested dtype cannot be allocated by the array namespace as it is configured (JAX
    with 64-bit types disabled), which would otherwise silently allocate a narrower one."""
