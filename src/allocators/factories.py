"""The allocator-factory protocol.

Any object with a ``__field_allocator__`` attribute (a plain attribute or a property, read
without calling it) is an *allocator factory*: the attribute yields a field buffer allocator, an
array namespace, or another factory. Backends, programs and user objects use it so that
``allocators.zeros(..., allocator=backend)`` works.
"""

from __future__ import annotations

import logging
from typing import Any, TypeGuard

from ._naming import describe
from .buffers import FieldBufferAllocator
from .devices import DeviceType
from .errors import NotAnAllocatorError
from .namespaces import is_array_namespace, missing_namespace_attributes

__all__ = [
    "FIELD_ALLOCATOR_ATTRIBUTE",
    "MAX_FACTORY_DEPTH",
    "is_field_allocator",
    "is_field_allocator_factory",
    "is_field_allocator_factory_for",
    "is_field_allocator_for",
    "resolve_allocator",
]

_logger = logging.getLogger(__name__)

#: The attribute that makes an object an allocator factory.
FIELD_ALLOCATOR_ATTRIBUTE = "__field_allocator__"

#: How many factories :func:`resolve_allocator` unwraps before giving up.
MAX_FACTORY_DEPTH = 16


def is_field_allocator(obj: object) -> TypeGuard[FieldBufferAllocator]:
    """Tell whether ``obj`` is a field buffer allocator: it has ``allocate`` and a
    ``device_type`` that is a :class:`DeviceType`. Never raises."""
    try:
        return (
            isinstance(obj, FieldBufferAllocator)
            and callable(obj.allocate)
            and isinstance(obj.device_type, DeviceType)
        )
    except Exception:  # a raising property means "not an allocator", never a crash
        _logger.debug("%r raised while checked as an allocator", type(obj), exc_info=True)
        return False


def is_field_allocator_for(obj: object, device_type: DeviceType) -> bool:
    """Tell whether ``obj`` is a field buffer allocator for ``device_type``. Never raises."""
    # is_field_allocator has just read device_type without raising, so this cannot raise.
    return is_field_allocator(obj) and obj.device_type == device_type


def _has_factory_attribute(obj: object) -> bool:
    try:
        return hasattr(obj, FIELD_ALLOCATOR_ATTRIBUTE)
    except Exception:  # a getter raising something else than AttributeError
        _logger.debug("%r raised reading %s", type(obj), FIELD_ALLOCATOR_ATTRIBUTE, exc_info=True)
        return False


def is_field_allocator_factory(obj: object) -> bool:
    """Tell whether ``obj`` is an allocator factory that yields a field buffer allocator.

    Nested factories are unwrapped. A factory that yields an array namespace, yields something
    else, raises, or forms a cycle answers False. Never raises.
    """
    return _factory_buffer_allocator(obj) is not None


def is_field_allocator_factory_for(obj: object, device_type: DeviceType) -> bool:
    """Tell whether ``obj`` is an allocator factory yielding a field buffer allocator for
    ``device_type`` (see :func:`is_field_allocator_factory`). Never raises."""
    allocator = _factory_buffer_allocator(obj)
    return allocator is not None and allocator.device_type == device_type


def _factory_buffer_allocator(obj: object) -> FieldBufferAllocator | None:
    if not _has_factory_attribute(obj):
        return None
    try:
        resolved = resolve_allocator(obj)
    except Exception:  # these predicates answer, they do not raise
        _logger.debug("resolving allocator factory %r failed", type(obj), exc_info=True)
        return None
    return resolved if isinstance(resolved, FieldBufferAllocator) else None


def resolve_allocator(obj: object) -> Any:
    """Unwrap allocator factories until a field buffer allocator or an array namespace remains.

    An object that is already an allocator or a namespace is returned as it is, even if it also
    has ``__field_allocator__``.

    Args:
        obj: A field buffer allocator, an array namespace, or an allocator factory (possibly
            yielding another factory).

    Returns:
        The field buffer allocator, or the validated array namespace.

    Raises:
        NotAnAllocatorError: (a ``TypeError``) If ``obj`` or what a factory yields is none of
            these, if reading ``__field_allocator__`` raises, if it is a method rather than an
            attribute, or if factories form a cycle or nest deeper than
            :data:`MAX_FACTORY_DEPTH`. The message names ``obj``.
    """
    current: object = obj
    seen: list[object] = []
    while True:
        if is_field_allocator(current) or is_array_namespace(current):
            return current
        if any(current is earlier for earlier in seen):
            raise NotAnAllocatorError(
                f"The allocator factories of {describe(obj)} form a cycle: "
                f"{FIELD_ALLOCATOR_ATTRIBUTE} leads back to {describe(current)}. Make "
                f"{FIELD_ALLOCATOR_ATTRIBUTE} yield a buffer allocator or an array namespace."
            )
        if len(seen) >= MAX_FACTORY_DEPTH:
            raise NotAnAllocatorError(
                f"{describe(obj)} nests allocator factories deeper than {MAX_FACTORY_DEPTH}; "
                f"make {FIELD_ALLOCATOR_ATTRIBUTE} yield an allocator more directly."
            )
        try:
            yielded = getattr(current, FIELD_ALLOCATOR_ATTRIBUTE)
        except AttributeError:
            break  # not a factory
        except Exception as error:
            raise NotAnAllocatorError(
                f"Reading {FIELD_ALLOCATOR_ATTRIBUTE} of {describe(current)} raised "
                f"{type(error).__name__}: {error}. Fix the attribute so that it yields a "
                "buffer allocator or an array namespace."
            ) from error
        if callable(yielded) and getattr(yielded, "__self__", None) is current:
            raise NotAnAllocatorError(
                f"{FIELD_ALLOCATOR_ATTRIBUTE} of {describe(current)} is a method; it must be an "
                "attribute or a property that yields a buffer allocator or an array namespace "
                "(decorate it with @property)."
            )
        seen.append(current)
        current = yielded
    missing = missing_namespace_attributes(current)
    lacks = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    via = "" if current is obj else f" (reached through {FIELD_ALLOCATOR_ATTRIBUTE})"
    raise NotAnAllocatorError(
        f"{describe(obj)} is not an allocator: {describe(current)}{via} is neither a field "
        "buffer allocator (with device_type and allocate), nor an array namespace (it lacks "
        f"{lacks}), nor an object with a {FIELD_ALLOCATOR_ATTRIBUTE} attribute. "
        "Pass e.g. allocators.NumPyBufferAllocator(), numpy, or a backend."
    )
