"""What a c_cpu unit includes and defines: only what its code names (ADR 0018)."""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path

import attrs
import numpy as np
import pytest

import backends
from backends import CompiledBackend
from backends.c.bindings import resolved_slice
from backends.clike.expressions import _FLOAT_FUNCTIONS
from backends.clike.runtime import MATH_NAMES, RUNTIME_C, runtime_for
from benchmarks.workloads import WORKLOADS


def test_a_unit_without_math_or_helpers_includes_neither():
    prelude = runtime_for("double f(double x) { return 2.0 * x; }")
    assert "#include <math.h>" not in prelude
    assert "sf_floordiv" not in prelude
    assert "#include <stdint.h>" in prelude
    assert "typedef unsigned char sf_bool;" in prelude


def test_a_called_helper_comes_with_the_helpers_and_headers_it_needs():
    prelude = runtime_for("double f(double x, double y) { return sf_floordiv_f64(x, y); }")
    # sf_floordiv_f64 calls sf_divmod_f64, which calls fmod, floor and copysign.
    assert prelude.index("sf_divmod_f64(") < prelude.index("sf_floordiv_f64(")
    assert "#include <math.h>" in prelude
    assert "sf_mod_f64" not in prelude
    assert "sf_floordiv_i64" not in prelude


def test_a_math_function_alone_includes_math_h():
    assert "#include <math.h>" in runtime_for("float f(float x) { return sqrtf(x); }")
    assert "#include <math.h>" in runtime_for("double f(void) { return NAN; }")


def test_every_function_the_expressions_call_is_known_to_need_math_h():
    for function in _FLOAT_FUNCTIONS.values():
        assert function in MATH_NAMES and f"{function}f" in MATH_NAMES
    for name in ("pow", "powf", "fmod", "fmodf", "isnan", "isinf", "isfinite", "INFINITY"):
        assert name in MATH_NAMES


def test_the_full_runtime_still_defines_every_helper_for_other_translations():
    every = runtime_for(RUNTIME_C)
    for name in ("sf_floordiv_i32", "sf_pow_i64", "sf_mod_f32", "sf_max_f64"):
        assert f"{name}(" in every


def test_hdiff_parses_no_libc_header_it_does_not_use():
    """Recomputed, with ordinary stores: no math, no scratch, no streaming helpers."""
    c_cpu = backends.c_cpu
    assert isinstance(c_cpu, CompiledBackend)
    backend = attrs.evolve(
        c_cpu,
        pipeline=c_cpu.pipeline.evolve_step(
            "translation",
            temporaries=False,
            tile_sizes=(16, 64),
            prefetch_distance=4,
            streaming_stores=False,
        ),
    )
    inp = np.zeros((16, 16, 8))
    program = WORKLOADS["hdiff"].program.with_backend(backend)
    text = program.lower(inp, 0.025, np.zeros_like(inp)).as_text()
    for header in ("math.h", "stdlib.h", "string.h", "pthread.h"):
        assert f"#include <{header}>" not in text
    assert "sf_floordiv" not in text and "sf_resolve" not in text


_BOUNDS = [None, *range(-6, 7)]


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_resolved_slices_agree_with_python_slices(tmp_path: Path):
    """Every start/stop in -6..6 (or absent) on every extent 0..8, compiled and run."""
    cases = list(itertools.product(_BOUNDS, _BOUNDS))
    lines = ["#include <stdint.h>", "#include <stdio.h>", "int main(void) {",
             "    for (int64_t n = 0; n <= 8; ++n) {", "        int64_t l, h;"]
    for start, stop in cases:
        low, high = resolved_slice("n", start, stop)
        lines.append(f"        l = {low}; h = {high};")
        lines.append('        printf("%lld %lld\\n", (long long)l, (long long)h);')
    lines += ["    }", "    return 0;", "}"]
    source = tmp_path / "slices.c"
    source.write_text("\n".join(lines))
    executable = tmp_path / "slices"
    subprocess.run(["cc", "-O1", str(source), "-o", str(executable)], check=True)
    output = subprocess.run([str(executable)], check=True, capture_output=True, text=True).stdout
    got = [tuple(map(int, line.split())) for line in output.splitlines()]
    expected = []
    for n in range(9):
        for start, stop in cases:
            lo, hi, _ = slice(start, stop).indices(n)
            expected.append((lo, max(lo, hi)))
    assert got == expected
