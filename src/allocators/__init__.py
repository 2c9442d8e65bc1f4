"""Devices, field buffer allocators, array namespaces and field construction.

``allocators`` is the bottom layer of stencilforge (``allocators`` <- ``pipeline`` <-
``backends``): it imports neither of the others, and imports optional array libraries (CuPy,
JAX) only when an object of theirs is passed in or a CuPy buffer is allocated.
"""

from __future__ import annotations

from .buffers import CuPyBufferAllocator, FieldBufferAllocator, NumPyBufferAllocator
from .construction import DEFAULT_ALLOCATOR, DeviceLike, empty, full, ones, zeros
from .devices import Device, DeviceType, as_device_type, device_of
from .errors import (
    DeviceMismatchError,
    DtypeUnavailableError,
    MissingOptionalDependencyError,
    NotAnAllocatorError,
)
from .factories import (
    FIELD_ALLOCATOR_ATTRIBUTE,
    MAX_FACTORY_DEPTH,
    is_field_allocator,
    is_field_allocator_factory,
    is_field_allocator_factory_for,
    is_field_allocator_for,
    resolve_allocator,
)
from .layouts import DEFAULT_BYTE_ALIGNMENT, BufferLayout, c_layout, plan_buffer
from .namespaces import (
    JAX_ENABLE_X64_ADVICE,
    NAMESPACE_ATTRIBUTE_ALIASES,
    REQUIRED_NAMESPACE_ATTRIBUTES,
    disabled_dtype_reason,
    is_array_namespace,
    namespace_attribute,
    namespace_device_type,
    namespace_name,
    validate_array_namespace,
)

__all__ = [
    "DEFAULT_ALLOCATOR",
    "DEFAULT_BYTE_ALIGNMENT",
    "FIELD_ALLOCATOR_ATTRIBUTE",
    "JAX_ENABLE_X64_ADVICE",
    "MAX_FACTORY_DEPTH",
    "NAMESPACE_ATTRIBUTE_ALIASES",
    "REQUIRED_NAMESPACE_ATTRIBUTES",
    "BufferLayout",
    "CuPyBufferAllocator",
    "Device",
    "DeviceLike",
    "DeviceMismatchError",
    "DeviceType",
    "DtypeUnavailableError",
    "FieldBufferAllocator",
    "MissingOptionalDependencyError",
    "NotAnAllocatorError",
    "NumPyBufferAllocator",
    "as_device_type",
    "c_layout",
    "device_of",
    "disabled_dtype_reason",
    "empty",
    "full",
    "is_array_namespace",
    "is_field_allocator",
    "is_field_allocator_factory",
    "is_field_allocator_factory_for",
    "is_field_allocator_for",
    "namespace_attribute",
    "namespace_device_type",
    "namespace_name",
    "ones",
    "plan_buffer",
    "resolve_allocator",
    "validate_array_namespace",
    "zeros",
]
