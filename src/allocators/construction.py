"""Field construction: ``empty``, ``zeros``, ``ones`` and ``full`` with any allocator.

The ``allocator`` argument may be a field buffer allocator, an array namespace, or an allocator
factory (a backend, a program, any object with ``__field_allocator__``). Factories are unwrapped
first; then a buffer allocator allocates and the buffer is filled, or the namespace's own
``empty``/``zeros``/``ones``/``full`` is called.
"""

from __future__ import annotations

import contextlib
import enum
import importlib
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, TypeAlias

import attrs

from ._naming import describe
from .buffers import FieldBufferAllocator, NumPyBufferAllocator, to_numpy_dtype
from .devices import Device, DeviceType
from .errors import DeviceMismatchError, DtypeUnavailableError
from .factories import is_field_allocator, resolve_allocator
from .layouts import c_layout, normalize_shape, validate_aligned_index, validate_layout
from .namespaces import (
    disabled_dtype_reason,
    namespace_attribute,
    namespace_device_type,
    namespace_name,
)

__all__ = ["DEFAULT_ALLOCATOR", "DeviceLike", "empty", "full", "ones", "zeros"]

#: The allocator used when ``allocator=None``: 64-byte aligned NumPy arrays on the CPU.
DEFAULT_ALLOCATOR: Final = NumPyBufferAllocator()

#: A device request: a :class:`Device`, a :class:`DeviceType` (device id 0), or, for an array
#: namespace only, a device object of that namespace (passed through as ``device=``).
DeviceLike: TypeAlias = Device | DeviceType | object

_NAMESPACE_DTYPE_NAMES: Final = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)


class _Fill(enum.Enum):
    EMPTY = "empty"
    ZEROS = "zeros"
    ONES = "ones"
    FULL = "full"


def empty(
    shape: int | Sequence[int],
    dtype: Any,
    *,
    allocator: object = None,
    device: DeviceLike | None = None,
    aligned_index: Sequence[int] | None = None,
    layout: Sequence[int] | None = None,
) -> Any:
    """Allocate an uninitialized field.

    Args:
        shape: Extent of each dimension (an int for one dimension).
        dtype: Element type: a NumPy dtype, scalar type or string (``"float32"``), or a dtype
            of the allocator's namespace (e.g. ``array_api_strict.float64``).
        allocator: A field buffer allocator, an array namespace (``numpy``, ``cupy``,
            ``jax.numpy``, ``array_api_strict``, ...) or an allocator factory (a backend, a
            program, any object with ``__field_allocator__``). ``None`` means
            :data:`DEFAULT_ALLOCATOR`.
        device: Where to allocate: a :class:`Device`, a :class:`DeviceType` (id 0), or a device
            object of the namespace (namespace path only). ``None``: the allocator's default.
        aligned_index: Index whose element address is a multiple of the buffer allocator's byte
            alignment; ``None`` for element 0. On a namespace path only ``None`` or the origin.
        layout: Stride order, outermost to innermost dimension; ``None`` for C order. On a
            namespace path only ``None`` or C order.

    Returns:
        An array of the allocator's library (NumPy for the default allocator).

    Raises:
        NotAnAllocatorError: (a ``TypeError``) If ``allocator`` is not an allocator.
        DeviceMismatchError: (a ``ValueError``) If ``device``'s type differs from the
            allocator's device type.
        ValueError: If ``shape``, ``layout`` or ``aligned_index`` is invalid, or if ``layout`` /
            ``aligned_index`` is non-trivial for an array namespace, which cannot honour them.
        TypeError: If ``dtype`` is not a dtype (of NumPy or of the namespace).
        DtypeUnavailableError: (a ``TypeError``) If the namespace would silently allocate a
            narrower dtype: ``jax.numpy`` with 64-bit types disabled (JAX's default) and a
            64-bit dtype; the message says how to enable them.
    """
    return _construct(
        _FieldRequest(_Fill.EMPTY, None, shape, dtype, device, aligned_index, layout), allocator
    )


def zeros(
    shape: int | Sequence[int],
    dtype: Any,
    *,
    allocator: object = None,
    device: DeviceLike | None = None,
    aligned_index: Sequence[int] | None = None,
    layout: Sequence[int] | None = None,
) -> Any:
    """Allocate a field filled with zeros; arguments, result and errors as for :func:`empty`."""
    return _construct(
        _FieldRequest(_Fill.ZEROS, 0, shape, dtype, device, aligned_index, layout), allocator
    )


def ones(
    shape: int | Sequence[int],
    dtype: Any,
    *,
    allocator: object = None,
    device: DeviceLike | None = None,
    aligned_index: Sequence[int] | None = None,
    layout: Sequence[int] | None = None,
) -> Any:
    """Allocate a field filled with ones; arguments, result and errors as for :func:`empty`."""
    return _construct(
        _FieldRequest(_Fill.ONES, 1, shape, dtype, device, aligned_index, layout), allocator
    )


def full(
    shape: int | Sequence[int],
    dtype: Any,
    *,
    fill_value: Any,
    allocator: object = None,
    device: DeviceLike | None = None,
    aligned_index: Sequence[int] | None = None,
    layout: Sequence[int] | None = None,
) -> Any:
    """Allocate a field filled with ``fill_value`` (cast to ``dtype`` as the array library
    casts on assignment); other arguments, result and errors as for :func:`empty`."""
    return _construct(
        _FieldRequest(_Fill.FULL, fill_value, shape, dtype, device, aligned_index, layout),
        allocator,
    )


@attrs.frozen
class _FieldRequest:
    """What the caller asked for, before the allocator is known to be a buffer or a namespace."""

    fill: _Fill
    fill_value: Any
    shape: int | Sequence[int]
    dtype: Any
    device: DeviceLike | None
    aligned_index: Sequence[int] | None
    layout: Sequence[int] | None


def _construct(request: _FieldRequest, allocator: object) -> Any:
    resolved = DEFAULT_ALLOCATOR if allocator is None else resolve_allocator(allocator)
    if is_field_allocator(resolved):
        return _construct_buffer(request, resolved)
    return _construct_namespace(request, resolved)


def _construct_buffer(request: _FieldRequest, allocator: FieldBufferAllocator) -> Any:
    device_id = 0
    if request.device is not None:
        device = request.device
        if not isinstance(device, Device | DeviceType):
            raise TypeError(
                f"device {device!r} is not an allocators.Device or DeviceType; a buffer allocator "
                f"({describe(allocator)}) needs e.g. Device(DeviceType.CUDA, 0)."
            )
        requested = Device(device) if isinstance(device, DeviceType) else device
        if requested.type != allocator.device_type:
            raise DeviceMismatchError(
                f"device {requested!r} does not match {describe(allocator)}, which allocates on "
                f"{allocator.device_type.name}; pass a {allocator.device_type.name} device or an "
                f"allocator for {requested.type.name}."
            )
        device_id = requested.id
    array = allocator.allocate(
        request.shape,
        request.dtype,
        device_id=device_id,
        layout=request.layout,
        aligned_index=request.aligned_index,
    )
    if request.fill is not _Fill.EMPTY:
        array[...] = request.fill_value
    return array


def _construct_namespace(request: _FieldRequest, namespace: Any) -> Any:
    name = namespace_name(namespace)
    extents = normalize_shape(request.shape)
    if validate_layout(request.layout, len(extents)) != c_layout(len(extents)):
        raise ValueError(
            f"layout {tuple(request.layout or ())!r} cannot be honoured by the array namespace "
            f"{name}, which allocates in C order only; drop layout= or pass a field buffer "
            "allocator."
        )
    if any(validate_aligned_index(request.aligned_index, extents)):
        raise ValueError(
            f"aligned_index {tuple(request.aligned_index or ())!r} cannot be honoured by the "
            f"array namespace {name}, which does not align buffers; drop aligned_index= or pass "
            "a field buffer allocator."
        )
    function = namespace_attribute(namespace, request.fill.value)
    fill_args = (request.fill_value,) if request.fill is _Fill.FULL else ()
    dtype, dtype_name = _namespace_dtype(namespace, request.dtype)
    reason = disabled_dtype_reason(namespace, dtype_name)
    if reason is not None:
        raise DtypeUnavailableError(
            f"allocators.{request.fill.value}({tuple(extents)}, {dtype_name}) with {name}: "
            f"{reason}; or ask for a 32-bit dtype"
        )
    kwargs: dict[str, Any] = {"dtype": dtype}
    with _namespace_device(namespace, function, request.device, kwargs):
        return function(extents, *fill_args, **kwargs)


def _namespace_dtype(namespace: Any, dtype: Any) -> tuple[Any, str]:
    """The namespace's dtype for ``dtype`` (its own or a NumPy one), and its name."""
    for dtype_name in _NAMESPACE_DTYPE_NAMES:
        if getattr(namespace, dtype_name, None) is dtype:
            return dtype, dtype_name
    dtype_name = to_numpy_dtype(dtype).name
    try:
        return namespace_attribute(namespace, dtype_name), dtype_name
    except AttributeError as error:
        raise TypeError(
            f"dtype {dtype!r} ({dtype_name}) is not available in the array namespace "
            f"{namespace_name(namespace)}; use one of its dtypes."
        ) from error


def _accepts_device(function: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # no introspectable signature: let the namespace decide
        return True
    return any(p.name == "device" or p.kind is p.VAR_KEYWORD for p in parameters)


@contextlib.contextmanager
def _namespace_device(
    namespace: Any,
    function: Callable[..., Any],
    device: DeviceLike | None,
    kwargs: dict[str, Any],
) -> Iterator[None]:
    """Select ``device`` for a namespace call: add ``device=`` to ``kwargs`` or enter the
    library's device context, or raise if the request cannot be honoured."""
    if device is None:
        yield
        return
    name = namespace_name(namespace)
    if not isinstance(device, Device | DeviceType):
        if not _accepts_device(function):
            raise ValueError(
                f"device {device!r} cannot be passed to the array namespace {name}: its "
                "allocation functions take no device= argument."
            )
        kwargs["device"] = device
        yield
        return
    requested = Device(device) if isinstance(device, DeviceType) else device
    allocates_on = namespace_device_type(namespace)
    if requested.type != allocates_on:
        raise DeviceMismatchError(
            f"device {requested!r} does not match the array namespace {name}, which allocates "
            f"on {allocates_on.name}; pass a {allocates_on.name} device or a namespace for "
            f"{requested.type.name}."
        )
    library = name.removeprefix("array_api_compat.")
    if library == "cupy":
        cupy = importlib.import_module("cupy")  # already imported: its namespace was passed
        with cupy.cuda.Device(requested.id):
            yield
        return
    if library == "jax.numpy" and _accepts_device(function):
        jax = importlib.import_module("jax")  # already imported: jax.numpy was passed
        devices = jax.devices()
        if requested.id >= len(devices):
            raise ValueError(
                f"device {requested!r} does not exist: jax has {len(devices)} device(s) on its "
                "default backend."
            )
        kwargs["device"] = devices[requested.id]
        yield
        return
    if requested.id != 0:
        raise ValueError(
            f"device {requested!r} cannot be selected in the array namespace {name}, which is "
            "used on its default device only; pass the namespace's own device object as device=."
        )
    yield
