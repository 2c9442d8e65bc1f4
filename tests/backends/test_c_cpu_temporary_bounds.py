"""A temporary is computed only where it is read, so it never reads past its fields' arrays.

Before, a local's box always held the output point: a local read only at ``I - 1`` that
reads ``a(I + 1)`` was also computed at ``I``, reading ``a`` one row beyond the extent the
argument checks accept. With the array at the end of mapped memory, c_cpu crashed (SIGSEGV).
The call runs in a subprocess, so a crash fails the test instead of ending the run.
"""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
from c_programs import stencils
from c_programs.support import CompilerWrapper, run_script

from backends.loops import StencilLayout

_ONE_SIDED = textwrap.dedent(
    '''
    from pipeline.dsl import Dimension, Field, field_operator, float64, program
    I, J, K = Dimension("I"), Dimension("J"), Dimension("K")
    F = Field[[I, J, K], float64]

    @field_operator
    def one_sided(a: F) -> F:
        t = a(I + 1) * 2.0
        return t(I - 1) + t(I - 1, J - 1)

    @program
    def one_sided_program(a: F, out: F):
        one_sided(a, out=out[:, 1:, :])
    '''
)

_AT_THE_END_OF_MEMORY = textwrap.dedent(
    """
    import ctypes, mmap, sys
    import numpy as np
    import backends
    from backends.c import CTranslation
    sys.path.insert(0, sys.argv[1])
    from one_sided import one_sided_program
    shape = (16, 9, 4)
    nbytes = 8 * int(np.prod(shape))
    page = mmap.PAGESIZE
    size = -(-nbytes // page) * page
    memory = mmap.mmap(-1, size + page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    libc = ctypes.CDLL(None, use_errno=True)
    # The page after the array can be neither read nor written: a read past it crashes.
    assert libc.mprotect(ctypes.c_void_p(base + size), ctypes.c_size_t(page), 0) == 0
    a = np.frombuffer(memory, np.float64, count=nbytes // 8, offset=size - nbytes).reshape(shape)
    a[...] = np.arange(a.size, dtype=np.float64).reshape(shape)
    out = np.zeros(shape)
    pipeline = backends.c_cpu.pipeline.evolve_step(
        "translation", temporaries=True, tile_sizes=(4, 4), parallel_min_points=0
    )
    backend = backends.CompiledBackend("c_cpu_t", backends.c_cpu.allocator, pipeline)
    one_sided_program.with_backend(backend)(a, out)
    # out = t(I - 1) + t(I - 1, J - 1) with t = 2 a(I + 1): 2 a + 2 a(J - 1).
    expected = 2.0 * a[:, 1:] + 2.0 * a[:, :-1]
    print(float(np.abs(out[:, 1:] - expected).max()))
    """
)


def test_a_temporary_is_computed_only_where_it_is_read_not_past_the_arrays_end(tmp_path):
    (tmp_path / "one_sided.py").write_text(_ONE_SIDED)
    compiler = CompilerWrapper(tmp_path / "cc")

    printed = run_script(_AT_THE_END_OF_MEMORY, tmp_path / "cache", compiler, str(tmp_path))

    assert float(printed.split()[-1]) == 0.0


def test_a_local_extent_is_the_box_of_its_reads_without_the_output_point():
    inp = np.zeros((14, 13, 5))
    ir: Any = stencils.hdiff_program.lower(inp, 0.025, inp.copy()).ir
    program_ir = getattr(ir, "ir", ir)
    layout = StencilLayout.of(program_ir, program_ir.stencils[0], temporaries=True)

    # flx is read at I-1 and I, fly at J-1 and J; lap where the fluxes read it.
    assert layout.temporaries["flx"]["I"] == (-1, 0)
    assert layout.temporaries["fly"]["J"] == (-1, 0)
    assert layout.temporaries["lap_field"]["I"] == (-1, 1)
