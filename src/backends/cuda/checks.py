"""What a CUDA kernel needs of its arrays beyond the shared ``ArgumentChecker``'s checks.

The dispatcher's ``ArgumentChecker`` has checked kind, rank, dtype, device type and every
stencil's domain and halo. Before a launch the kernel also needs, of each field: a
``cupy.ndarray`` on the current device, strides in whole elements, an aligned address, a view
inside its allocation, and, written, no broadcast or self-overlapping layout; and no output
may share memory with another field its stencil touches (byte ranges: device arrays cannot
be compared element by element cheaply, so interleaved views are refused too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.dsl.arguments import overlap_pairs
from pipeline.dsl.ir.nodes import ProgramIR
from pipeline.dsl.memory import strided_self_overlap
from pipeline.dsl.types import FieldType
from pipeline.errors import ArgumentError

__all__ = ["check_device_arguments"]


def _byte_range(pointer: int, shape: Sequence[int], strides: Sequence[int], itemsize: int
                ) -> tuple[int, int]:
    low = high = pointer
    for size, stride in zip(shape, strides, strict=True):
        reach = (size - 1) * stride
        if reach < 0:
            low += reach
        else:
            high += reach
    return low, high + itemsize


def _layout_problem(array: Any, written: bool) -> str | None:
    itemsize = int(array.itemsize)
    shape, strides = tuple(array.shape), tuple(array.strides)
    if any(s % itemsize for s in strides):
        return "has strides that are not whole elements (copy it with cupy.ascontiguousarray)"
    if array.size == 0:
        return None
    pointer = int(array.data.ptr)
    if pointer % itemsize:
        return "is not aligned in memory (copy it with cupy.ascontiguousarray)"
    if written and any(s == 0 and n > 1 for s, n in zip(strides, shape, strict=True)):
        return "is written by the program but is a broadcast view (stride 0); pass a real array"
    memory = array.data.mem
    start, size = int(memory.ptr), int(memory.size)
    low, high = _byte_range(pointer, shape, strides, itemsize)
    if size <= 0:
        return (
            "does not say how large its allocation is, so its bounds cannot be checked; copy "
            "it with cupy.array(x)"
        )
    if low < start or high > start + size:
        return (
            f"claims memory it does not have: its shape {shape} and strides {strides} reach "
            f"bytes {low - start} to {high - start} of an allocation of {size} bytes (a view "
            "made with as_strided?); pass an array that lies inside its allocation"
        )
    if written and strided_self_overlap(shape, strides, itemsize):
        return (
            f"is written by the program but its elements overlap (shape {shape}, strides "
            f"{strides}: two indices share an address); pass a real array "
            "(cupy.ascontiguousarray)"
        )
    return None


def check_device_arguments(
    ir: ProgramIR, args: Sequence[Any], device_id: int, cupy: Any
) -> None:
    """Check the fields of ``args`` (already accepted by the ``ArgumentChecker``) for a
    launch on CUDA device ``device_id``.

    Args:
        ir: the program.
        args: one value per parameter, in order.
        device_id: the current CUDA device, where the kernels run.
        cupy: the ``cupy`` module.

    Raises:
        ArgumentError: an argument that is not a CuPy array, lives on another GPU, has a
            layout the kernels cannot use, or an output that shares memory with another
            field of its stencil; the message names the program and argument and what to do.
    """
    program = ir.name
    written = {t.name for s in ir.stencils for t in s.outputs}
    ranges: dict[str, tuple[int, int]] = {}
    for param, value in zip(ir.params, args, strict=True):
        if not isinstance(param.type, FieldType):
            continue
        name = ir.shown(param.name)
        if not isinstance(value, cupy.ndarray):
            raise ArgumentError(
                f"argument {name!r} of {program}() must be a cupy.ndarray for this backend; got "
                f"{type(value).__module__}.{type(value).__qualname__} (convert it with "
                "cupy.asarray(x), which does not copy a CUDA array of another library)"
            )
        if int(value.device.id) != device_id:
            raise ArgumentError(
                f"argument {name!r} of {program}() is on GPU {int(value.device.id)}, but the "
                f"program runs on the current device, GPU {device_id}; call it inside `with "
                f"cupy.cuda.Device({int(value.device.id)}):` or copy the array to GPU "
                f"{device_id} (cupy.asarray(x) under that device)"
            )
        problem = _layout_problem(value, param.name in written)
        if problem is not None:
            raise ArgumentError(f"argument {name!r} of {program}() {problem}")
        if value.size:
            ranges[param.name] = _byte_range(
                int(value.data.ptr), value.shape, value.strides, int(value.itemsize)
            )
    for stencil in ir.stencils:
        for out, other in overlap_pairs(stencil):
            a, b = ranges.get(out), ranges.get(other)
            if a is not None and b is not None and a[0] < b[1] and b[0] < a[1]:
                raise ArgumentError(
                    f"{program}(): output {ir.shown(out)!r} of {stencil.operator_name!r} "
                    f"shares memory with {ir.shown(other)!r} (their byte ranges overlap); a "
                    "stencil cannot update an "
                    "array it reads (results would depend on the order of evaluation), so "
                    "pass a separate output array"
                )
