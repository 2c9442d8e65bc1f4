"""What cuda_gpu's kernels are specialized for, read from a call's arrays.

Besides the unit strides every compiled backend keys on (``backends.base.unit_strides``), two
facts of the arrays' sizes let a kernel be cheaper, and each is a key of its own, so that an
array that breaks one compiles another kernel rather than running a wrong one:

- ``index_bits``: 32 when every array's span (the elements between its lowest and highest
  address, plus one) is below 2**31 less a block, so every index and offset a kernel forms
  inside a checked domain fits a 32-bit integer; else 64 (a GPU's integer units are 32-bit:
  64-bit index arithmetic takes register pairs and several instructions per operation);
- ``grid_covers``: whether every array's extents along all but its last dimension are at most
  ``MAX_GRID_YZ``, and the product of all but its last two too: then a grid of one thread per
  point along y (a single dimension among a stencil's all but last) and z (a stencil's
  dimensions before its last two, flattened) stays within the device's limit for any domain
  inside the arrays, and a kernel needs no grid-stride loops.
"""

from __future__ import annotations

import math
from typing import Any

from backends.base import unit_strides
from pipeline.stages import CompileTimeArgs

__all__ = ["MAX_GRID_YZ", "compile_time_args", "fits_narrow_indices", "grid_covers"]

#: The most blocks along a grid's y and z axes; the kernels walk beyond in grid-stride loops.
MAX_GRID_YZ = 65535

# A thread's index along an axis is below the domain's end plus one block (1024 threads at
# most): spans below this keep every index a thread computes a positive 32-bit integer, so a
# thread past the domain still sees that it is and returns.
_NARROW_SPAN = 2**31 - 1024


def compile_time_args(args: tuple[Any, ...]) -> CompileTimeArgs:
    """The unit strides of ``args``, their ``index_bits`` and whether grids cover them."""
    arrays = [a for a in args if getattr(a, "strides", None) is not None and a.ndim > 0]
    narrow = all(_span(a) < _NARROW_SPAN for a in arrays)
    covers = all(
        max(a.shape[:-1], default=0) <= MAX_GRID_YZ and math.prod(a.shape[:-2]) <= MAX_GRID_YZ
        for a in arrays
    )
    return CompileTimeArgs(
        (*unit_strides(args).items, ("index_bits", 32 if narrow else 64), ("grid_covers", covers))
    )


def fits_narrow_indices(compile_time_args: CompileTimeArgs) -> bool:
    """Whether the arrays ``compile_time_args`` was read from allow 32-bit indices (no:
    unknown arrays, as ``lower()`` without arguments has)."""
    return bool(compile_time_args.get("index_bits") == 32)


def grid_covers(compile_time_args: CompileTimeArgs) -> bool:
    """Whether a grid of one thread per point covers any domain inside those arrays (no:
    unknown arrays)."""
    return bool(compile_time_args.get("grid_covers", False))


def _span(array: Any) -> int:
    """Elements from the array's lowest to its highest address, plus one."""
    if 0 in array.shape:
        return 0
    reach = sum((n - 1) * abs(s) for n, s in zip(array.shape, array.strides, strict=True))
    return int(reach // array.itemsize + 1)
