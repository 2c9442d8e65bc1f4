"""Field buffer allocators: the protocol and its NumPy (CPU) and CuPy (CUDA/ROCm) implementations.

A field buffer allocator allocates an uninitialized array of a shape and dtype, with a layout
(stride order) and a byte alignment of one chosen element, the *aligned index* (e.g. the first
interior point after a halo, so that vectorized inner loops start on an aligned address).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np
import numpy.typing as npt

from .devices import DeviceType, as_device_type
from .errors import MissingOptionalDependencyError
from .layouts import DEFAULT_BYTE_ALIGNMENT, BufferLayout, plan_buffer, validate_byte_alignment

__all__ = ["CuPyBufferAllocator", "FieldBufferAllocator", "NumPyBufferAllocator", "to_numpy_dtype"]

_GPU_DEVICE_TYPES = frozenset({DeviceType.CUDA, DeviceType.ROCM})


@runtime_checkable
class FieldBufferAllocator(Protocol):
    """Allocates field buffers on devices of one :class:`DeviceType`.

    Attributes:
        device_type: The type of device the buffers live on.
    """

    @property
    def device_type(self) -> DeviceType:
        """The type of device on which :meth:`allocate` places buffers."""
        ...

    def allocate(
        self,
        shape: int | Sequence[int],
        dtype: npt.DTypeLike,
        *,
        device_id: int = 0,
        layout: Sequence[int] | None = None,
        aligned_index: Sequence[int] | None = None,
    ) -> Any:
        """Allocate an uninitialized, writeable array.

        Args:
            shape: Extent of each dimension (an int for one dimension).
            dtype: Element type: a NumPy dtype, a scalar type or a dtype string.
            device_id: Ordinal of the device of :attr:`device_type`.
            layout: Stride order, a permutation of ``range(ndim)`` from the outermost (largest
                stride) to the innermost (contiguous) dimension; ``None`` for C order.
            aligned_index: Index of the element whose address must be a multiple of the
                allocator's byte alignment; ``None`` for element 0.

        Returns:
            The array; it keeps its underlying buffer alive.

        Raises:
            ValueError: If an argument is invalid; the message names it.
            TypeError: If ``dtype`` is not a dtype.
        """
        ...


def to_numpy_dtype(dtype: npt.DTypeLike) -> np.dtype[Any]:
    """Return ``np.dtype(dtype)``.

    Raises:
        TypeError: If ``dtype`` does not describe a NumPy dtype; the message names it.
    """
    try:
        return np.dtype(dtype)
    except TypeError as error:
        raise TypeError(
            f"dtype {dtype!r} is not a NumPy dtype; give e.g. numpy.float64, 'float32' or int."
        ) from error


def _check_byte_alignment(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    validate_byte_alignment(value)


def _plan(
    allocator: NumPyBufferAllocator | CuPyBufferAllocator,
    shape: int | Sequence[int],
    dtype: npt.DTypeLike,
    layout: Sequence[int] | None,
    aligned_index: Sequence[int] | None,
) -> tuple[np.dtype[Any], BufferLayout]:
    numpy_dtype = to_numpy_dtype(dtype)
    plan = plan_buffer(
        shape,
        numpy_dtype.itemsize,
        byte_alignment=allocator.byte_alignment,
        layout=layout,
        aligned_index=aligned_index,
    )
    return numpy_dtype, plan


@attrs.frozen
class NumPyBufferAllocator:
    """Allocates aligned NumPy arrays in host memory.

    Attributes:
        byte_alignment: Alignment in bytes of the aligned index's address; a power of two.
            Each allocation also requires it to be a multiple of the dtype's itemsize.

    Raises:
        ValueError: If ``byte_alignment`` is not a positive power of two.
    """

    byte_alignment: int = attrs.field(
        default=DEFAULT_BYTE_ALIGNMENT, validator=_check_byte_alignment
    )

    @property
    def device_type(self) -> DeviceType:
        """Always :attr:`DeviceType.CPU`."""
        return DeviceType.CPU

    def allocate(
        self,
        shape: int | Sequence[int],
        dtype: npt.DTypeLike,
        *,
        device_id: int = 0,
        layout: Sequence[int] | None = None,
        aligned_index: Sequence[int] | None = None,
    ) -> npt.NDArray[Any]:
        """Allocate an uninitialized, writeable NumPy array; see
        :meth:`FieldBufferAllocator.allocate`.

        Raises:
            ValueError: If ``device_id`` is not 0 (there is one CPU device) or another argument
                is invalid.
        """
        if device_id != 0:
            raise ValueError(
                f"device_id {device_id!r} is invalid for the CPU allocator; the CPU has device "
                "id 0."
            )
        numpy_dtype, plan = _plan(self, shape, dtype, layout, aligned_index)
        raw = np.empty(plan.nbytes + self.byte_alignment, dtype=np.uint8)
        start = plan.start_offset(raw.ctypes.data, self.byte_alignment)
        # ndarray(buffer=raw) stores raw as .base, which keeps the memory alive.
        return np.ndarray(
            plan.shape, dtype=numpy_dtype, buffer=raw, offset=start, strides=plan.strides
        )


def _check_gpu_device_type(
    instance: object, attribute: attrs.Attribute[DeviceType], value: DeviceType
) -> None:
    if value not in _GPU_DEVICE_TYPES:
        raise ValueError(
            f"device_type {value!r} is not supported by CuPyBufferAllocator; use "
            "DeviceType.CUDA or DeviceType.ROCM."
        )


def _import_cupy() -> Any:
    try:
        return importlib.import_module("cupy")
    except ImportError as error:
        raise MissingOptionalDependencyError(
            "CuPyBufferAllocator needs CuPy, which is not installed; install it with "
            "pip install 'stencilforge[cuda]'."
        ) from error


@attrs.frozen
class CuPyBufferAllocator:
    """Allocates aligned CuPy arrays in GPU memory (CUDA, or ROCm with a HIP build of CuPy).

    Creating the allocator does not import CuPy; :meth:`allocate` does.

    Attributes:
        byte_alignment: Alignment in bytes of the aligned index's address; a power of two.
        device_type: :attr:`DeviceType.CUDA` (default) or :attr:`DeviceType.ROCM`.

    Raises:
        ValueError: If ``byte_alignment`` is not a positive power of two or ``device_type`` is
            not a GPU device type.
    """

    byte_alignment: int = attrs.field(
        default=DEFAULT_BYTE_ALIGNMENT, validator=_check_byte_alignment
    )
    device_type: DeviceType = attrs.field(
        default=DeviceType.CUDA, converter=as_device_type, validator=_check_gpu_device_type
    )

    def allocate(
        self,
        shape: int | Sequence[int],
        dtype: npt.DTypeLike,
        *,
        device_id: int = 0,
        layout: Sequence[int] | None = None,
        aligned_index: Sequence[int] | None = None,
    ) -> Any:
        """Allocate an uninitialized CuPy array on GPU ``device_id``; see
        :meth:`FieldBufferAllocator.allocate`.

        Raises:
            MissingOptionalDependencyError: If CuPy is not installed (an ``ImportError``).
            ValueError: If ``device_id`` is negative or another argument is invalid.
        """
        if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0:
            raise ValueError(f"device_id {device_id!r} is invalid; give a GPU ordinal >= 0.")
        numpy_dtype, plan = _plan(self, shape, dtype, layout, aligned_index)
        cupy = _import_cupy()
        with cupy.cuda.Device(device_id):
            raw = cupy.empty(plan.nbytes + self.byte_alignment, dtype=cupy.uint8)
            start = plan.start_offset(int(raw.data.ptr), self.byte_alignment)
            # The MemoryPointer holds a reference to the allocation, keeping it alive.
            return cupy.ndarray(
                plan.shape, dtype=numpy_dtype, memptr=raw.data + start, strides=plan.strides
            )
