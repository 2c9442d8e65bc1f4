"""No view makes native code touch memory it was not given (issue 16), on every backend.

Each backend runs the hostile calls in a subprocess of its own, so a crash fails the test
instead of ending the run. Before the memory checks, the views claiming memory crashed c_cpu
and dace_cpu with SIGSEGV, and the self-overlapping output was accepted everywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent

_SCRIPT = r'''
import json, mmap, sys
import numpy as np
from numpy.lib.stride_tricks import as_strided
sys.path[:0] = [sys.argv[2], sys.argv[3]]
import backends
from c_programs import stencils
try:
    backend = getattr(backends, sys.argv[1])
except AttributeError:
    import numpy_source_backend
    backend = numpy_source_backend.numpy_source
lap = stencils.lap.with_backend(backend)

def fresh():
    return np.random.default_rng(0).uniform(-1, 1, (11, 9, 7)), np.zeros((11, 9, 7))

def overlapping_output():
    inp, _ = fresh()
    return inp, as_strided(np.zeros(40), (11, 9, 7), (8, 8, 8), writeable=True)

def output_claiming_too_much():
    inp, out = fresh()
    return inp, as_strided(out, (2**20, 2**20, 7), out.strides, writeable=True)

def input_claiming_too_much():
    inp, out = fresh()
    return as_strided(inp, (2**31, 9, 7), (2**40, 56, 8)), out

def input_reaching_past_its_buffer():
    inp, out = fresh()
    return as_strided(inp, (11, 9, 7), (64 * 8, 56, 8)), out

cases = {
    "overlapping output": overlapping_output,
    "output claiming too much": output_claiming_too_much,
    "input claiming too much": input_claiming_too_much,
    "input reaching past its buffer": input_reaching_past_its_buffer,
}
results = {}
for name, make in cases.items():
    inp, out = make()
    try:
        lap(inp, out)
        results[name] = ["ran", ""]
    except Exception as error:
        results[name] = [type(error).__name__, str(error)]

# Legal views of real buffers run and give the reference.
def legal():
    inp, out = fresh()
    expected = np.zeros_like(out); stencils.lap_reference(inp, expected)
    buffer = bytearray(inp.tobytes())
    from_bytes = np.frombuffer(buffer, np.float64).reshape(inp.shape)
    wide = np.zeros((13, 11, 9)); wide[1:-1, 1:-1, 1:-1] = inp
    views = {"sliced view": wide[1:-1, 1:-1, 1:-1], "frombuffer": from_bytes}
    anonymous = mmap.mmap(-1, inp.nbytes)
    mapped = np.frombuffer(anonymous, np.float64).reshape(inp.shape); mapped[...] = inp
    views["mmap"] = mapped
    ok = {}
    for name, view in views.items():
        target = np.zeros_like(out)
        lap(view, target)
        ok[name] = bool(np.allclose(target, expected, rtol=1e-12, atol=0))
    return ok

results["legal"] = legal()
print(json.dumps(results))
'''


@pytest.mark.parametrize(
    "backend",
    ["c_cpu", "embedded_numpy", pytest.param("dace_cpu", marks=pytest.mark.requires_dace),
     "numpy_source"],
)
def test_views_that_claim_memory_they_do_not_have_are_refused(backend, tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, backend, str(_HERE), str(_HERE.parents[1] / "examples")],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "STENCILFORGE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, f"exit {done.returncode} (a crash?)\n{done.stderr[-2000:]}"
    results = json.loads(done.stdout.strip().splitlines()[-1])
    legal = results.pop("legal")
    assert legal == {"sliced view": True, "frombuffer": True, "mmap": True}
    for case, (kind, message) in results.items():
        assert kind == "ArgumentError", f"{case}: {kind} {message}"
    assert "overlap" in results["overlapping output"][1]
    assert "argument 'out' of lap() claims memory it does not have" in (
        results["output claiming too much"][1])
    assert "argument 'inp' of lap() claims memory it does not have" in (
        results["input claiming too much"][1])
    assert "claims memory" in results["input reaching past its buffer"][1]


@pytest.mark.parametrize(
    "backend",
    ["c_cpu", "embedded_numpy", pytest.param("dace_cpu", marks=pytest.mark.requires_dace),
     "numpy_source"],
)
def test_interleaved_arrays_that_share_no_element_run_and_sharing_ones_are_refused(backend):
    import numpy as np  # noqa: PLC0415
    from c_programs import stencils  # noqa: PLC0415
    from numpy_source_backend import numpy_source  # noqa: PLC0415

    import backends  # noqa: PLC0415
    from pipeline import ArgumentError  # noqa: PLC0415

    chosen = numpy_source if backend == "numpy_source" else getattr(backends, backend)
    program = stencils.lap.with_backend(chosen)
    buffer = np.random.default_rng(8).uniform(-1, 1, (11, 9, 14))
    inp, out = buffer[:, :, ::2], buffer[:, :, 1::2]  # one byte range, no common element
    expected = out.copy()
    stencils.lap_reference(inp.copy(), expected)
    program(inp, out)
    np.testing.assert_allclose(out, expected, rtol=1e-13)
    with pytest.raises(ArgumentError, match="output 'out' of 'laplacian' shares memory"):
        program(buffer[:, :, 1:8], buffer[:, :, 0:7])
