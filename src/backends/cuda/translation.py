"""The CUDA translation step: ``CompilableProgram -> ProgramSource`` (CUDA C, one kernel per
stencil, and the argument struct they share)."""

from __future__ import annotations

from typing import Any

import attrs

from allocators import DeviceType
from backends import loops
from backends.clike.generator import StencilSite
from backends.clike.runtime import BOOL_TYPEDEF, runtime_functions
from backends.clike.source import unit_stride_flags
from backends.cuda.errors import UnsupportedConstructError
from backends.cuda.interface import ArgumentStruct, CudaInterface, StructMember
from backends.cuda.kernels import PARALLELIZATIONS, KernelCode, KernelShape, generate_kernel
from backends.cuda.specialization import fits_narrow_indices, grid_covers
from pipeline.dsl.ir.nodes import ProgramIR, Stencil
from pipeline.dsl.stages import CompilableProgram
from pipeline.dsl.types import FieldType
from pipeline.fingerprint import fingerprint, source_digest
from pipeline.stages import CompileTimeArgs, ProgramSource, SourceFormat

__all__ = [
    "CUDA_SOURCE",
    "MAX_PARAMETER_BYTES",
    "CudaTranslation",
    "argument_struct",
]

CUDA_SOURCE = SourceFormat("cuda", DeviceType.CUDA)

#: The most bytes of kernel parameters every CUDA device and driver accepts (newer ones take
#: 32 KiB); the argument struct of a program must fit.
MAX_PARAMETER_BYTES = 4096

#: What the generated text depends on, digested into every translation's key: backends.loops
#: and every module of these packages, the DSL's included (its IR helpers, types and regions,
#: and pipeline.dsl.arguments, whose overlap rules the bindings emit).
_GENERATOR_PACKAGES = ("backends.cuda", "backends.clike", "pipeline.dsl")
_GENERATOR_VERSION = source_digest(loops, packages=_GENERATOR_PACKAGES)

# The generated source includes no header under NVRTC (which has none) and only C's
# fixed-width integers and math under nvcc; NAN and INFINITY are defined where math.h is not.
# Warning 550 (a pointer set but not used) is a field whose reads folded away.
_PRELUDE = r"""
#ifdef __CUDACC_RTC__
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#else
#include <stdint.h>
#include <math.h>
#endif
#ifndef NAN
#define NAN __longlong_as_double(0x7ff8000000000000LL)
#endif
#ifndef INFINITY
#define INFINITY __longlong_as_double(0x7ff0000000000000LL)
#endif
#pragma nv_diag_suppress 550
"""


def _block(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not (
        isinstance(value, tuple)
        and len(value) == 3
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
        and value[0] * value[1] * value[2] <= 1024
    ):
        raise ValueError(
            f"block must be three positive ints (threads along x, y, z) whose product is at "
            f"most 1024, got {value!r}"
        )


def argument_struct(ir: ProgramIR, codes: list[KernelCode]) -> ArgumentStruct:
    """The members of ``sf_args`` for ``ir`` and its kernels: per field its pointer and
    strides, per scalar its value, per stencil its domain, per scan buffer its pointer."""
    members: list[StructMember] = []
    for param in ir.params:
        if isinstance(param.type, FieldType):
            members.append(StructMember(f"p_{param.name}", "uint64", pointer=True))
            if param.type.dims:
                members.append(StructMember(f"s_{param.name}", "int64", len(param.type.dims)))
        else:
            members.append(StructMember(f"sc_{param.name}", param.type.dtype.name))
    for code in codes:
        plan = code.plan
        if plan.dims:
            members.append(StructMember(f"lo{plan.stencil}", "int64", len(plan.dims)))
            members.append(StructMember(f"hi{plan.stencil}", "int64", len(plan.dims)))
        members += [StructMember(member, dtype, pointer=True) for member, dtype in plan.kept]
    return ArgumentStruct(tuple(members))


@attrs.frozen
class CudaTranslation:
    """IR -> CUDA C, one kernel per stencil (see ``backends.cuda.kernels``).

    Attributes:
        parallelization: how a stencil without scans spreads over threads: ``"points"``, a
            thread per point (a 3-D grid, x along the innermost dimension, so warps read
            contiguous memory), or ``"columns"``, a thread per point of the other dimensions
            looping over the innermost. ``points`` is the default: on an H200 it ran
            laplacian and hdiff (512x512x80) 3.7-4.5x faster than ``columns``, whose loads
            do not coalesce. Stencils with scans always loop along the scan's axis.
        block: threads per block along x, y and z (product at most 1024); a kernel with
            fewer grid axes folds the unused ones into the axis below. The default, 16x8x1,
            was the fastest of 18 shapes for laplacian on an H200 and within 5 % of the
            fastest (16x4x1) for hdiff (ADR 0016).
        narrow_indices: index with 32-bit integers where the compile-time arguments say
            every array's span fits (``backends.cuda.specialization``); else 64-bit.
        covering_grids: one point per thread, without grid-stride loops, where the
            compile-time arguments say every launch's grid covers its domain.
    """

    parallelization: str = attrs.field(
        default="points", validator=attrs.validators.in_(PARALLELIZATIONS)
    )
    block: tuple[int, int, int] = attrs.field(default=(16, 8, 1), validator=_block)
    narrow_indices: bool = True
    covering_grids: bool = True
    emits: SourceFormat = attrs.field(default=CUDA_SOURCE, init=False)

    def __fingerprint__(self) -> object:
        return (
            self.parallelization,
            self.block,
            self.narrow_indices,
            self.covering_grids,
            _GENERATOR_VERSION,
        )

    def __call__(self, program: CompilableProgram, /) -> ProgramSource:
        """The CUDA source of ``program``, its kernels' launch plans in the metadata.

        Raises:
            UnsupportedConstructError: a stencil the kernels cannot express, or arguments
                that do not fit a launch's parameter space; named with the program.
        """
        ir: ProgramIR = program.ir
        unit = unit_stride_flags(ir, program.compile_time_args)
        shape = self._shape(program.compile_time_args)
        codes = [self._kernel(ir, s, index, unit, shape) for index, s in enumerate(ir.stencils)]
        struct = argument_struct(ir, codes)
        if struct.size > MAX_PARAMETER_BYTES:
            raise UnsupportedConstructError(
                f"program {ir.name!r} has {len(ir.params)} parameters and {len(ir.stencils)} "
                f"stencil(s), whose kernel arguments take {struct.size} bytes; cuda_gpu passes "
                f"them by value, at most {MAX_PARAMETER_BYTES}: split the program into smaller "
                "ones"
            )
        name = f"sf_{ir.name}_{fingerprint((ir, sorted(unit.items()), shape, self))[:16]}"
        text = "\n".join(
            [
                f"/* stencilforge program {ir.name}: CUDA kernels ({shape.describe()}) */",
                _PRELUDE,
                BOOL_TYPEDEF,
                runtime_functions("[[maybe_unused]] static __device__ __forceinline__"),
                struct.c_declaration(),
                *(code.text for code in codes),
                "",
            ]
        )
        metadata = CudaInterface(
            ir, tuple(sorted(unit.items())), struct, tuple(code.plan for code in codes)
        )
        return ProgramSource(CUDA_SOURCE, text, name, metadata=metadata)

    def _shape(self, compile_time_args: CompileTimeArgs) -> KernelShape:
        """The kernels' shape for arrays of ``compile_time_args`` (none: 64-bit, strided)."""
        return KernelShape(
            self.parallelization,
            narrow_indices=self.narrow_indices and fits_narrow_indices(compile_time_args),
            grid_covers=self.covering_grids and grid_covers(compile_time_args),
        )

    def _kernel(
        self,
        ir: ProgramIR,
        stencil: Stencil,
        index: int,
        unit: dict[str, bool],
        shape: KernelShape,
    ) -> KernelCode:
        try:
            return generate_kernel(StencilSite(ir, stencil, index, unit), shape, block=self.block)
        except NotImplementedError as error:
            where = f" (line {stencil.loc.line} of {stencil.loc.filename})" if stencil.loc else ""
            raise UnsupportedConstructError(
                f"cuda_gpu cannot translate the call of {stencil.operator_name!r}{where} in "
                f"program {ir.name!r}: {error}; run this program on another backend (c_cpu, "
                "embedded_cupy) or rewrite the call"
            ) from error
