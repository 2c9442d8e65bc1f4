"""The hand-written kernel that ``benchmarks.build_time`` compiles does hdiff's job."""

from __future__ import annotations

import ctypes
import subprocess
from importlib import resources

import numpy as np

from backends.c import CCompilation
from benchmarks.build_time import HAND_WRITTEN
from benchmarks.workloads import hdiff_kernel


def test_the_hand_written_kernel_computes_hdiff_like_the_workload(tmp_path):
    compilation = CCompilation(str(tmp_path / "c"))
    built = tmp_path / "hdiff_kernel.so"
    with resources.as_file(resources.files("benchmarks") / HAND_WRITTEN) as kernel:
        subprocess.run(
            [compilation.compiler, *compilation.command_flags, str(kernel), "-o", str(built)],
            check=True,
        )
    hdiff = ctypes.CDLL(str(built)).hdiff
    hdiff.restype = ctypes.c_int
    rng = np.random.default_rng(7)
    for shape in [(16, 16, 8), (40, 70, 16)]:  # one thread, and OpenMP over tiles
        inp = rng.uniform(-1.0, 1.0, shape)
        out = np.zeros_like(inp)
        sizes = (ctypes.c_int64 * 3)(*shape)
        strides = (ctypes.c_int64 * 3)(*(s // 8 for s in inp.strides))
        status = hdiff(
            inp.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p),
            sizes, strides, sizes, strides, ctypes.c_double(0.025),
        )
        assert status == 0
        np.testing.assert_allclose(out[2:-2, 2:-2], hdiff_kernel(np, inp, 0.025), rtol=1e-12)
        assert not out[:2].any() and not out[-2:].any()
