"""The second toolchain (examples/expressions.py): not a stencil, built from the framework's
public names alone, and served by every framework service."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from expressions import (
    ElementwiseFunction,
    ExpressionBackend,
    ExpressionError,
    expression_pipeline,
)

from pipeline import (
    ArgumentError,
    CompiledArtifact,
    SourceError,
    StageEvent,
    compile_many,
    metrics,
    subscribe,
)

_EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def backend(tmp_path):
    return ExpressionBackend("c_expressions", expression_pipeline(tmp_path / "cache"))


def vectors(n=5, dtype=np.float64):
    rng = np.random.default_rng(1)
    return rng.uniform(-1, 1, n).astype(dtype), rng.uniform(-1, 1, n).astype(dtype)


def test_an_expression_compiles_and_computes_what_numpy_does(backend):
    axpy = ElementwiseFunction("a * 2 + b - -1.5", backend, name="axpy")
    a, b = vectors()
    out = np.zeros_like(a)
    axpy(a, b, out)
    np.testing.assert_allclose(out, a * 2 + b + 1.5)


def test_each_dtype_is_its_own_signature_compiled_once(backend):
    axpy = ElementwiseFunction("a * 2 + b", backend)
    events: list[StageEvent] = []
    with subscribe(events.append):
        for dtype in (np.float64, np.float32, np.float64, np.float32):
            a, b = vectors(dtype=dtype)
            out = np.zeros_like(a)
            axpy(a, b, out)
            np.testing.assert_allclose(out, a * 2 + b, rtol=1e-6)
    assert [e.stage for e in events].count("loading") == 2
    sources = [e.artifact.text for e in events if e.stage == "translation"]
    assert "double" in sources[0] and "float" in sources[1] and "double" not in sources[1]


def test_lower_shows_the_c_and_compile_installs_the_executable(backend):
    axpy = ElementwiseFunction("a * 2 + b", backend)
    a, b = vectors()
    lowered = axpy.lower(a, b, np.zeros_like(a))
    assert "out[i] = ((v_a[i] * 2.0) + v_b[i]);" in lowered.as_text()
    compiled = lowered.compile()
    assert isinstance(compiled.artifact, CompiledArtifact)
    events: list[StageEvent] = []
    out = np.zeros_like(a)
    with subscribe(events.append):
        axpy(a, b, out)
        compiled(a, b, out)
    assert events == []  # installed: nothing compiles on the call
    np.testing.assert_allclose(out, a * 2 + b)


def test_bad_arguments_are_refused_before_any_native_code_runs(backend):
    axpy = ElementwiseFunction("a * 2 + b", backend, name="axpy")
    a, b = vectors()
    out = np.zeros_like(a)
    with pytest.raises(ArgumentError, match=r"axpy\(\): b must be 1-D.*as long as a \(5\)"):
        axpy(a, b[:3], out)
    with pytest.raises(ArgumentError, match=r"axpy\(\): out must be a float64 array"):
        axpy(a, b, out.astype(np.float32))
    with pytest.raises(ArgumentError, match="float64 or float32 arrays, got int64"):
        axpy(a.astype(np.int64), b, out)
    with pytest.raises(ArgumentError, match=r"axpy\(\) takes 3 argument"):
        axpy(a, b, out, out)
    out.flags.writeable = False
    with pytest.raises(ArgumentError, match="out must be writable"):
        axpy(a, b, out)


def test_an_expression_outside_the_language_is_a_source_error_naming_the_column(backend):
    a, b = vectors()
    bad = ElementwiseFunction("a ** 2 + b", backend)
    with pytest.raises(ExpressionError, match=r"column 1: 'a \*\* 2' is not a name") as info:
        bad(a, b, np.zeros_like(a))
    assert isinstance(info.value, SourceError)
    with pytest.raises(ExpressionError, match="column"):
        ElementwiseFunction("a * (b", backend)(a, b, np.zeros_like(a))


def test_metrics_count_the_calls(backend):
    axpy = ElementwiseFunction("a + b", backend, name="metered")
    a, b = vectors()
    metrics.reset()
    with metrics.collect():
        for _ in range(3):
            axpy(a, b, np.zeros_like(a))
    recorded = metrics.get("metered@c_expressions")
    assert recorded.count == 3 and len(recorded.compile_seconds) == 1


SECOND_PROCESS = """
import numpy as np
from expressions import ElementwiseFunction, ExpressionBackend, expression_pipeline
from pathlib import Path
from pipeline import subscribe

backend = ExpressionBackend("c_expressions", expression_pipeline(Path({cache!r})))
events = []
with subscribe(events.append):
    a = np.arange(4.0)
    out = np.zeros(4)
    ElementwiseFunction("a * 3", backend)(a, out)
assert (out == a * 3).all()
print(" ".join(f"{{e.stage}}={{e.cache_hit}}" for e in events))
"""


def test_a_second_process_finds_the_build_in_the_disk_cache(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_EXAMPLES), *sys.path])}
    script = textwrap.dedent(SECOND_PROCESS.format(cache=str(tmp_path / "cache")))
    runs = [
        subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                       text=True, check=True).stdout.split()
        for _ in range(2)
    ]
    assert runs[0] == ["frontend=False", "translation=False", "compilation=False",
                       "loading=False"]
    assert runs[1] == ["frontend=False", "translation=True", "compilation=True",
                       "loading=False"]


def test_compile_many_builds_expressions_in_a_process_pool(backend):
    functions = [ElementwiseFunction(text, backend, name=f"f{i}")
                 for i, text in enumerate(["a + 1", "a * b", "-a / 4"])]
    a, b = vectors()
    out = np.zeros_like(a)
    jobs = [(functions[0], (a, out)), (functions[1], (a, b, out)), (functions[2], (a, out))]
    events: list[StageEvent] = []
    spawn = multiprocessing.get_context("spawn")
    with subscribe(events.append), ProcessPoolExecutor(2, mp_context=spawn) as pool:
        compiled = compile_many(jobs, executor=pool, progress=False)
    assert len(compiled) == 3
    assert sorted(e.stage for e in events).count("compilation") == 3  # the workers' events
    with subscribe(events.clear):  # nothing more is compiled on the first calls
        functions[1](a, b, out)
        np.testing.assert_allclose(out, a * b)
        functions[2](a, out)
        np.testing.assert_allclose(out, -a / 4)
