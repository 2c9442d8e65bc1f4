"""The plain-C interface between a c_cpu program and the launcher that calls it.

A program's shared object holds no Python: it exports one constant, ``sf_program_descriptor``
(an ``sf_program``), that says how to lay its arguments out and how to check and run them.
The launcher (``backends.c.launcher``), a CPython extension built once per machine and
interpreter, reads that table: it checks each argument with the NumPy C API as the table
describes it, writes it into the program's argument struct at the recorded offsets, calls the
program's ``check`` (domains, extents, overlaps: integer arithmetic on what it was given) and,
without the GIL, its ``run``.

Both sides are generated from ``DESCRIPTOR_C``; the launcher refuses a descriptor whose
``abi`` or struct sizes differ from its own, so a program built for another version of this
interface is never called. Change ``LAUNCH_ABI`` with any change of the text.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipeline.dsl.types import bool_, float32, float64, int32, int64

__all__ = ["DESCRIPTOR_C", "DESCRIPTOR_SYMBOL", "DTYPE_CODES", "LAUNCH_ABI", "MAX_RANK"]

#: The version of ``DESCRIPTOR_C``; a launcher calls only programs of its own version.
LAUNCH_ABI = 1

#: The symbol a program exports (the only one it exports).
DESCRIPTOR_SYMBOL = "sf_program_descriptor"

#: The largest field rank a descriptor may declare (NumPy's own limit in NumPy 2).
MAX_RANK = 64

#: ``sf_parameter.dtype`` of each DSL dtype (the launcher maps them to NumPy's type numbers).
DTYPE_CODES: dict[np.dtype[Any], int] = {bool_: 0, int32: 1, int64: 2, float32: 3, float64: 4}

DESCRIPTOR_C = f"""
#include <stddef.h>
#include <stdint.h>
#define SF_LAUNCH_ABI {LAUNCH_ABI}
#define SF_MAX_RANK {MAX_RANK}
enum {{ SF_FIELD = 0, SF_SCALAR = 1 }};
enum {{ SF_BOOL = 0, SF_INT32 = 1, SF_INT64 = 2, SF_FLOAT32 = 3, SF_FLOAT64 = 4 }};
/* One parameter: a field's element type, rank, whether the program writes it and whether the
   code assumes its last dimension contiguous; where its data pointer, shape and strides (in
   elements) go in the argument struct. A scalar's value goes at `pointer`. */
typedef struct {{
    int32_t kind, dtype, rank, writable, unit_stride, reserved;
    int64_t itemsize;
    int64_t pointer, shape, strides;
}} sf_parameter;
/* What a program exports. `check` reads the filled argument struct and each field's byte
   range (bounds[2i], bounds[2i+1]), writes each stencil's domain into `domains` and returns
   0 when every stencil may run, else nonzero (refused, nothing touched). `run` runs the
   stencils on checked arguments (no Python, called without the GIL): 0, or -1 when out of
   memory. */
typedef struct {{
    uint32_t abi, size, parameter_size;
    int32_t nparams;
    const char* name;
    int64_t args_size, domains_size;
    const sf_parameter* parameters;
    int (*check)(const void* args, const char* const* bounds, int check_overlaps, void* domains);
    int (*run)(const void* args, const void* domains);
}} sf_program;
"""
