"""Buffer layouts: stride order, strides and the byte offset of an aligned index.

A *layout* is a stride order: a permutation of ``range(ndim)`` that lists the dimensions from
the outermost (largest stride) to the innermost (contiguous). ``(0, 1, ..., ndim - 1)`` is C
order, ``(ndim - 1, ..., 0)`` is Fortran order.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence

import attrs

__all__ = [
    "DEFAULT_BYTE_ALIGNMENT",
    "BufferLayout",
    "c_layout",
    "normalize_shape",
    "plan_buffer",
    "validate_aligned_index",
    "validate_byte_alignment",
    "validate_layout",
]

DEFAULT_BYTE_ALIGNMENT = 64


def c_layout(ndim: int) -> tuple[int, ...]:
    """Return the C-order layout ``(0, 1, ..., ndim - 1)``."""
    return tuple(range(ndim))


@attrs.frozen
class BufferLayout:
    """Where each element of a field lies in its buffer, before the buffer's start is aligned.

    Attributes:
        shape: Extent of each dimension.
        strides: Byte stride of each dimension (in dimension order, as NumPy reports them).
        nbytes: Bytes spanned by the elements (0 for an empty field).
        aligned_offset: Byte offset of the aligned index from element 0.
    """

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    nbytes: int
    aligned_offset: int

    def start_offset(self, base_address: int, byte_alignment: int) -> int:
        """Return the offset from ``base_address`` at which element 0 must lie so that the
        aligned index's address is a multiple of ``byte_alignment``. The result is in
        ``range(byte_alignment)``, so a buffer of ``nbytes + byte_alignment`` bytes suffices."""
        return -(base_address + self.aligned_offset) % byte_alignment


def _as_extent(shape: object, extent: object) -> int:
    if isinstance(extent, bool) or not hasattr(extent, "__index__"):
        raise ValueError(f"shape {shape!r} has the non-integer extent {extent!r}; give ints.")
    value = operator.index(extent)
    if value < 0:
        raise ValueError(f"shape {shape!r} has the negative extent {value}; extents must be >= 0.")
    return value


def normalize_shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    """Return ``shape`` as a tuple of non-negative ints (an int means one dimension).

    Raises:
        ValueError: If ``shape`` is not an int or a sequence of ints, or an extent is negative.
    """
    if hasattr(shape, "__index__"):
        return (_as_extent(shape, shape),)
    if not isinstance(shape, Iterable):
        raise ValueError(f"shape {shape!r} is neither an int nor a sequence of ints.")
    return tuple(_as_extent(shape, extent) for extent in shape)


def validate_layout(layout: Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """Return ``layout`` as a tuple, or C order for ``None``.

    Raises:
        ValueError: If ``layout`` is not a permutation of ``range(ndim)``.
    """
    if layout is None:
        return c_layout(ndim)
    order = tuple(layout)
    if sorted(order) != list(range(ndim)) or any(isinstance(dim, bool) for dim in order):
        raise ValueError(
            f"layout {order!r} is not a permutation of range({ndim}); list each of the {ndim} "
            "dimensions once, from outermost (largest stride) to innermost (contiguous)."
        )
    return order


def validate_aligned_index(
    aligned_index: Sequence[int] | None, shape: tuple[int, ...]
) -> tuple[int, ...]:
    """Return ``aligned_index`` as a tuple, or the origin for ``None``.

    Raises:
        ValueError: If its length differs from ``len(shape)`` or an entry is outside
            ``0 <= i < extent``.
    """
    if aligned_index is None:
        return (0,) * len(shape)
    index = tuple(aligned_index)
    if len(index) != len(shape):
        raise ValueError(
            f"aligned_index {index!r} has {len(index)} entries but the shape {shape!r} has "
            f"{len(shape)} dimensions; give one index per dimension."
        )
    for dim, (i, extent) in enumerate(zip(index, shape, strict=True)):
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < extent:
            raise ValueError(
                f"aligned_index {index!r} is out of range in dimension {dim}: {i!r} is not in "
                f"range({extent}) of the shape {shape!r}."
            )
    return index


def validate_byte_alignment(byte_alignment: int) -> int:
    """Return ``byte_alignment`` if it is a positive power of two.

    Raises:
        ValueError: Otherwise.
    """
    if (
        isinstance(byte_alignment, bool)
        or not isinstance(byte_alignment, int)
        or byte_alignment <= 0
        or byte_alignment & (byte_alignment - 1)
    ):
        raise ValueError(
            f"byte_alignment {byte_alignment!r} is not a positive power of two; use e.g. 64 "
            "(a cache line) or 128."
        )
    return byte_alignment


def plan_buffer(
    shape: int | Sequence[int],
    itemsize: int,
    *,
    byte_alignment: int = DEFAULT_BYTE_ALIGNMENT,
    layout: Sequence[int] | None = None,
    aligned_index: Sequence[int] | None = None,
) -> BufferLayout:
    """Compute strides, size and aligned offset of a field buffer.

    Args:
        shape: Extent of each dimension (an int for one dimension).
        itemsize: Bytes per element.
        byte_alignment: Alignment of the aligned index's address, a power of two that is a
            multiple of ``itemsize`` (so every element stays naturally aligned).
        layout: Stride order, outermost to innermost; ``None`` for C order.
        aligned_index: Index whose element must be aligned; ``None`` for element 0.

    Returns:
        The :class:`BufferLayout`. Extents of 0 count as 1 when computing strides, so strides
        never increase along ``layout``.

    Raises:
        ValueError: Naming the argument (``shape``, ``layout``, ``aligned_index``,
            ``byte_alignment``) that is invalid.
    """
    extents = normalize_shape(shape)
    order = validate_layout(layout, len(extents))
    validate_byte_alignment(byte_alignment)
    if itemsize <= 0 or byte_alignment % itemsize:
        raise ValueError(
            f"byte_alignment {byte_alignment} is not a multiple of the itemsize {itemsize}; "
            "choose an alignment that is a multiple of the element size."
        )
    index = validate_aligned_index(aligned_index, extents)
    strides = [0] * len(extents)
    stride = itemsize
    for dim in reversed(order):
        strides[dim] = stride
        stride *= max(extents[dim], 1)
    size = math.prod(extents)
    nbytes = size * itemsize
    aligned_offset = sum(i * s for i, s in zip(index, strides, strict=True))
    return BufferLayout(extents, tuple(strides), nbytes, aligned_offset)
