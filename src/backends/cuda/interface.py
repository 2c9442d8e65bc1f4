"""What the CUDA translation tells the loader: the argument struct and each kernel's launch.

Every kernel of a program takes one argument, the struct ``sf_args``, by value: the data
pointer and strides (in elements) of every field, every scalar, each stencil's domain and the
scratch buffers of scans. ``ArgumentStruct`` describes it once and yields both its C
declaration and the NumPy dtype (``align=True``: C's natural layout) that the launcher fills,
so the two cannot disagree.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from backends.clike.expressions import C_TYPES
from pipeline.dsl.ir.nodes import ProgramIR

__all__ = ["ArgumentStruct", "CudaInterface", "KernelPlan", "StructMember"]


@attrs.frozen
class StructMember:
    """One member of the argument struct.

    Attributes:
        name: its C name.
        dtype: the NumPy dtype name of its elements (``"uint64"`` for a pointer).
        count: 0 for a single value, else the length of an array member.
        pointer: a device pointer (declared ``char*``, filled with the address).
    """

    name: str
    dtype: str
    count: int = 0
    pointer: bool = False

    def declaration(self) -> str:
        """The member's C declaration."""
        if self.pointer:
            return f"    char* {self.name};"
        ctype = C_TYPES[np.dtype(self.dtype)]
        return f"    {ctype} {self.name}{f'[{self.count}]' if self.count else ''};"


@attrs.frozen
class ArgumentStruct:
    """The kernels' argument struct: its members in declaration order."""

    members: tuple[StructMember, ...]

    def c_declaration(self) -> str:
        """``typedef struct { ... } sf_args;``"""
        lines = ["typedef struct {", *(m.declaration() for m in self.members), "} sf_args;"]
        return "\n".join(lines)

    def numpy_dtype(self) -> np.dtype[Any]:
        """A structured dtype with the C struct's layout (members, offsets and size)."""
        formats: list[Any] = []
        for member in self.members:
            base = np.dtype(np.uint64 if member.pointer else member.dtype)
            formats.append((base, (member.count,)) if member.count else base)
        return np.dtype(
            {"names": [m.name for m in self.members], "formats": formats}, align=True
        )

    @property
    def size(self) -> int:
        """The struct's size in bytes (what a launch passes as its parameter)."""
        return int(self.numpy_dtype().itemsize)


@attrs.frozen
class KernelPlan:
    """How one stencil's kernel is launched.

    Attributes:
        name: the kernel's symbol (``extern "C"``).
        stencil: the stencil's index in the program.
        dims: the iteration dimensions, outermost first.
        threads: the dimensions spread over the grid's x, y and z axes (x: at most one, the
            innermost; y: at most one; z: the others, flattened).
        block: threads per block along x, y and z.
        sequential: the dimension each thread walks in order (a scan's axis, or the innermost
            dimension in the ``columns`` parallelization); None: a thread per point.
        kept: the scratch buffers of a scan's earlier passes, as (struct member, dtype name):
            one element per level of ``sequential`` and thread.
        grid_covers: the kernel computes one point per thread along y and z (no grid-stride
            loops), so it must be launched only with a grid that covers the domain.
    """

    name: str
    stencil: int
    dims: tuple[str, ...]
    threads: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
    block: tuple[int, int, int]
    sequential: str | None
    kept: tuple[tuple[str, str], ...] = ()
    grid_covers: bool = attrs.field(default=False, kw_only=True)


@attrs.frozen
class CudaInterface:
    """What the loader needs to launch a program's kernels (``ProgramSource.metadata``).

    Attributes:
        ir: the program.
        unit_stride: (field, whether the code assumes its last dimension contiguous) pairs.
        struct: the kernels' argument struct.
        kernels: one per stencil, in the program's order.
    """

    ir: ProgramIR
    unit_stride: tuple[tuple[str, bool], ...]
    struct: ArgumentStruct
    kernels: tuple[KernelPlan, ...]
