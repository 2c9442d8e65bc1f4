"""What native code needs of a NumPy array's memory, and whether two arrays share any.

The dispatcher's checks (``pipeline.dsl.arguments``) call these before native code touches an
array: the layout (native order, alignment, whole-element strides, a view inside the buffer
that owns it, no two elements on one address where it is written), and that no output shares
memory with another field of its stencil. c_cpu's launcher makes the same checks natively.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["layout_problem", "owner_bounds", "shares_element", "strided_self_overlap"]


_MAX_BASE_CHAIN = 64


def owner_bounds(array: np.ndarray[Any, Any]) -> tuple[int, int] | None:
    """The byte range ``[start, stop)`` of the buffer that owns ``array``'s memory.

    Walks the base chain: an ndarray that owns its data, or the first object that exports a
    buffer (``bytes``, ``mmap``, ...); objects with a ``base`` of their own (the helper
    ``as_strided`` puts in between) are followed. ``None``: no owner can be found, so the
    array's bounds cannot be checked. The native checks of c_cpu walk the same chain.
    """
    current: object = array
    for _ in range(_MAX_BASE_CHAIN):
        if isinstance(current, np.ndarray):
            if current.flags.owndata:
                start = current.__array_interface__["data"][0]
                return start, start + current.nbytes
            if current.base is None:
                return None
            current = current.base
            continue
        try:
            view = memoryview(current)  # type: ignore[arg-type]
        except TypeError:  # exports no buffer: follow its base, if it has one
            current = getattr(current, "base", None)
            if current is None:
                return None
            continue
        except (ValueError, BufferError):  # a buffer it cannot export now (a closed mmap)
            return None
        with view:
            if view.nbytes == 0:
                return 0, 0
            start = np.frombuffer(view.cast("B"), np.uint8).__array_interface__["data"][0]
            return start, start + view.nbytes
    return None


def _self_overlaps(array: np.ndarray[Any, Any]) -> bool:
    return strided_self_overlap(array.shape, array.strides, array.itemsize)


def strided_self_overlap(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> bool:
    """Whether two indices of an array of ``shape`` and byte ``strides`` may share an address
    (exact for strided layouts whose strides, sorted, each exceed the span of the smaller
    ones; conservative else). For arrays of any library (device arrays included)."""
    axes = sorted((abs(s), n) for s, n in zip(strides, shape, strict=True) if n > 1)
    span = itemsize
    for stride, size in axes:
        if stride < span:
            return True
        span = stride * (size - 1) + span
    return False


def layout_problem(array: np.ndarray[Any, Any], written: bool) -> str | None:
    """What native code needs of an array's memory, or ``None`` when it has it: native order,
    alignment, whole elements, a view inside the buffer that owns it, and (``written``) no
    element on another's address. The text completes "argument 'x' of program() ..."."""
    if _is_its_own_contiguous_buffer(array, written):
        return None
    return _layout_problem(array, written)


def _is_its_own_contiguous_buffer(array: np.ndarray[Any, Any], written: bool) -> bool:
    """The common case, in which ``_layout_problem`` finds nothing: an aligned, native-order
    array that owns its data, laid out contiguously (whole-element strides, none zero, no two
    elements on one address, all inside), and writeable when ``written``. It costs a fraction
    of a microsecond; finding the buffer's address (``__array_interface__``) costs several."""
    flags = array.flags
    return bool(
        flags.owndata
        and (flags.c_contiguous or flags.f_contiguous)
        and flags.aligned
        and (flags.writeable or not written)
        and array.dtype.isnative
    )


def _layout_problem(array: np.ndarray[Any, Any], written: bool) -> str | None:
    """What is wrong with ``array``'s memory for native code, or ``None``."""
    if not array.dtype.isnative:
        return "is not in native byte order (use .astype(its dtype.newbyteorder('=')))"
    if not array.flags.aligned:
        return "is not aligned in memory (copy it with numpy.ascontiguousarray)"
    if any(s % array.itemsize for s in array.strides):
        return "has strides that are not whole elements (copy it with numpy.ascontiguousarray)"
    if written and not array.flags.writeable:
        return "is written by the program but is read-only"
    if (
        written
        and array.size > 0
        and any(s == 0 and array.shape[axis] > 1 for axis, s in enumerate(array.strides))
    ):
        return "is written by the program but is a broadcast view (stride 0); pass a real array"
    if array.size > 0:
        return _memory_problem(array, written)
    return None


def _memory_problem(array: np.ndarray[Any, Any], written: bool) -> str | None:
    owner = owner_bounds(array)
    if owner is None:
        return (
            "does not say which buffer owns its memory (it owns no data and has no base), "
            "so its bounds cannot be checked; copy it with numpy.array(...)"
        )
    low, high = _byte_bounds(array)
    if low < owner[0] or high > owner[1]:
        return (
            f"claims memory it does not have: its shape {array.shape} and strides "
            f"{array.strides} reach bytes {low - owner[0]} to {high - owner[0]} of a buffer of "
            f"{owner[1] - owner[0]} bytes (a view made with as_strided?); pass an array that "
            "lies inside its buffer"
        )
    if written and _self_overlaps(array):
        return (
            f"is written by the program but its elements overlap (shape {array.shape}, strides "
            f"{array.strides}: two indices share an address), so results would depend on the "
            "order of evaluation; pass a real array (numpy.ascontiguousarray)"
        )
    return None


def _byte_bounds(array: np.ndarray[Any, Any]) -> tuple[int, int]:
    start = array.__array_interface__["data"][0]
    low = high = start
    strides = array.strides
    for axis, size in enumerate(array.shape):
        stride = strides[axis]
        reach = (size - 1) * stride
        if reach < 0:
            low += reach
        else:
            high += reach
    return low, high + array.itemsize


def shares_element(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> bool:
    """Whether two arrays share an element: exact where their byte ranges interleave (a
    problem too hard to settle in bounded work counts as sharing)."""
    if not np.may_share_memory(a, b):
        return False
    try:
        # numpy's stubs know only -1 and 0, but any positive int bounds the work.
        return bool(np.shares_memory(a, b, max_work=100_000))  # type: ignore[arg-type]
    except np.exceptions.TooHardError:
        return True
