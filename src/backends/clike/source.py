"""What a C-like source is: its format, and the fields it may index without a stride.

``C_SOURCE`` is the format of a plain-C translation unit (what ``backends.c`` emits and a C
compiler accepts); ``unit_stride_flags`` reads, from a program's compile-time arguments, which
of its fields a translation may assume contiguous in their last dimension (``c_cpu``,
``cuda_gpu`` and the DaCe SDFGs are all specialized for them).
"""

from __future__ import annotations

from allocators import DeviceType
from pipeline.dsl.ir.nodes import ProgramIR
from pipeline.dsl.types import FieldType
from pipeline.stages import CompileTimeArgs, SourceFormat

__all__ = ["C_SOURCE", "unit_stride_flags"]

C_SOURCE = SourceFormat("c", DeviceType.CPU)


def unit_stride_flags(program: ProgramIR, compile_time_args: CompileTimeArgs) -> dict[str, bool]:
    """Which field parameters the code may assume contiguous in their last dimension.

    ``compile_time_args.get("unit_stride")`` holds one flag per parameter (``None`` for
    scalars); without it every field is assumed contiguous (the common case, and what
    ``lower()`` without arguments shows).
    """
    flags = compile_time_args.get("unit_stride")
    fields = [p.name for p in program.params if isinstance(p.type, FieldType)]
    if flags is None:
        return dict.fromkeys(fields, True)
    return {
        p.name: bool(flag)
        for p, flag in zip(program.params, flags, strict=True)
        if p.name in fields
    }
