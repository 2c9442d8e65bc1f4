"""c_cpu's build cache across real processes: kills, races, damage, warm starts, stage dumps.

Every test gets a private cache directory and a ``$CC`` wrapper that logs each compiler
invocation (see ``c_programs.support``); the work is done by ``c_programs.worker`` processes,
which compile a program on ``backends.c_cpu`` exactly as a user's process would (cache
directory from ``STENCILFORGE_CACHE_DIR``) and report whether the result matches NumPy.
"""

from __future__ import annotations

import logging
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np
import pytest
from c_programs import stencils
from c_programs.support import (
    CompilerWrapper,
    finish_worker,
    kill_worker,
    run_worker,
    start_worker,
    worker_environment,
)
from c_programs.worker import SHAPE

import allocators
from backends import CompiledBackend
from backends.c import CCompilation, c_cpu_pipeline, compile_time_args
from backends.c.compilation import artifact_is_intact
from pipeline import CachedStep


@pytest.fixture(autouse=True)
def _one_openmp_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # The workers run one OpenMP thread: a backend in this process must be the same machine
    # (choice records and automatic translations are keyed by the cores), or it measures
    # apart and may build another variant.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def built_objects(cache: Path) -> list[Path]:
    return sorted((cache / "c" / "builds").glob("*.so"))


def wait_for(
    condition: Callable[[], bool], process: subprocess.Popen[str], timeout: float = 60.0
) -> None:
    """Poll ``condition`` every millisecond until it holds (or the process ends)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if process.poll() is not None:
            return
        if time.monotonic() > deadline:
            raise AssertionError("the awaited moment of the build never came")
        time.sleep(0.001)


def assert_correct(report: dict, context: str = "") -> None:
    assert report["returncode"] == 0, f"{context}: worker failed\n{report['stderr']}"
    assert report["correct"], f"{context}: wrong result (max error {report['max_abs_error']})"


def in_process_backend(cache: Path, compiler: CompilerWrapper, name: str) -> CompiledBackend:
    """A new backend object over ``cache``, configured like the workers' ``backends.c_cpu``."""
    compilation = CCompilation(str(cache / "c"), compiler=str(compiler.path))
    return CompiledBackend(
        name,
        allocators.NumPyBufferAllocator(),
        c_cpu_pipeline(cache, compilation=compilation),
        compile_time_args=compile_time_args,
    )


def run_lap_in_process(backend: CompiledBackend) -> None:
    """Run ``lap`` on ``backend`` with the workers' input and check it against NumPy."""
    inp = np.random.default_rng(20240611).uniform(-1.0, 1.0, SHAPE)
    out = np.full(SHAPE, -777.25)
    expected = out.copy()
    stencils.lap_reference(inp, expected)
    stencils.lap.with_backend(backend)(inp, out)
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13)


# --------------------------------------------------------------------------- crash consistency


def _kill_when(marker: str) -> Callable[[Path, CompilerWrapper], list[int]]:
    def scenario(cache: Path, compiler: CompilerWrapper) -> list[int]:
        delays = {
            "compile-started": {"SF_TEST_CC_BEFORE": "0.5"},
            "compile-finished": {"SF_TEST_CC_AFTER": "1"},
        }[marker]
        process = start_worker(cache, compiler, **delays)
        wait_for(compiler.marker(marker).exists, process)
        status = kill_worker(process)
        assert status == -9, "the worker was not killed in the middle of its build"
        assert built_objects(cache) == [], "a build killed before its publish left an object"
        return [status]

    return scenario


def _kill_when_published(cache: Path, compiler: CompilerWrapper) -> list[int]:
    # The window between the atomic publish and the cache entry is a few milliseconds:
    # the kill lands in it or just after; both must leave a cache that loads right.
    process = start_worker(cache, compiler)
    wait_for(lambda: bool(built_objects(cache)), process)
    return [kill_worker(process)]


def _kill_after_random_delays(cache: Path, compiler: CompilerWrapper) -> list[int]:
    # Several kills on one cache, each process finding what the previous ones left; the
    # delays, in increasing order, land in the imports, the translation and the build
    # (slowed down to about a second, so most kills come before anything is published).
    rng = random.Random(20240611)
    statuses = []
    for delay in sorted(rng.uniform(0.0, 1.5) for _ in range(4)):
        process = start_worker(cache, compiler, SF_TEST_CC_BEFORE="0.4")
        time.sleep(delay)
        statuses.append(kill_worker(process))
    return statuses


KILL_SCENARIOS = {
    "while-compiling": _kill_when("compile-started"),
    "compiled-not-published": _kill_when("compile-finished"),
    "just-published": _kill_when_published,
    "random-delays": _kill_after_random_delays,
}


@pytest.mark.parametrize("scenario", list(KILL_SCENARIOS))
def test_a_build_killed_at_any_moment_leaves_nothing_that_loads_wrong(cache, compiler, scenario):
    statuses = KILL_SCENARIOS[scenario](cache, compiler)

    report = run_worker(cache, compiler)

    assert_correct(report, f"after kills with exit statuses {statuses}")
    assert report["compilation"]["misses"] + report["compilation"]["hits"] == 1
    assert len(built_objects(cache)) == 1
    # Stale build directories in c/tmp may remain; the published object is intact.
    assert report["compilation"]["damaged"] == 0 or "failed validation" in report["stderr"]


# --------------------------------------------------------------------------- races


def _compiling_together(cache, compiler, tmp_path, programs, slow_seconds):
    """One worker per name of ``programs``, all released at once when every one is ready;
    their reports. The slow compiler (``slow_seconds`` before each build) keeps the first
    builds running while the others arrive."""
    start = tmp_path / "start"
    ready = [tmp_path / f"ready-{n}" for n in range(len(programs))]
    processes = [
        start_worker(cache, compiler, "--program", program, "--ready", str(r), "--start",
                     str(start), SF_TEST_CC_BEFORE=str(slow_seconds))
        for program, r in zip(programs, ready, strict=True)
    ]  # fmt: skip
    try:
        deadline = time.monotonic() + 120.0
        while not all(r.exists() for r in ready):
            assert all(p.poll() is None for p in processes), "a worker died before the start"
            assert time.monotonic() < deadline, "the workers never got ready"
            time.sleep(0.01)
        start.touch()
        return [finish_worker(p) for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                kill_worker(p)


def test_eight_processes_compiling_one_new_program_build_it_once(cache, compiler, tmp_path):
    reports = _compiling_together(cache, compiler, tmp_path, ["hdiff"] * 8, 0.3)
    for n, report in enumerate(reports):
        assert_correct(report, f"worker {n}")
    assert compiler.compiles == 1, compiler.lines("compile")
    assert len(built_objects(cache)) == 1
    assert sum(r["compilation"]["misses"] for r in reports) == 1
    assert sum(r["compilation"]["hits"] for r in reports) == 7
    assert sum(r["translation"]["misses"] for r in reports) == 1


def test_processes_compiling_different_programs_on_a_cold_cache_build_the_support_once(
    cache, compiler, tmp_path
):
    # Each program links the support object; the slow compiler keeps its first build running
    # while the other processes ask for it. Before, each built its own (a fleet: 4 for 1).
    reports = _compiling_together(cache, compiler, tmp_path, ["lap", "hdiff"] * 2, 0.5)
    for n, report in enumerate(reports):
        assert_correct(report, f"worker {n}")
    assert len(compiler.lines("support")) == 1, compiler.lines("support")
    assert compiler.compiles == 2, compiler.lines("compile")


# --------------------------------------------------------------------------- damaged artifacts


def _truncate(path: Path) -> None:
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 2)


def _alter(path: Path) -> None:
    # Same size, one byte flipped in the middle (in the code or data of the object).
    with path.open("r+b") as file:
        file.seek(path.stat().st_size // 2)
        byte = file.read(1)
        file.seek(-1, os.SEEK_CUR)
        file.write(bytes([byte[0] ^ 0xFF]))


DAMAGE = {"truncated": _truncate, "altered": _alter, "missing": Path.unlink}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_built_object_is_rebuilt_with_a_warning_by_a_new_backend(
    cache, compiler, caplog, damage
):
    assert_correct(run_worker(cache, compiler))
    (built,) = built_objects(cache)
    DAMAGE[damage](built)

    backend = in_process_backend(cache, compiler, "c_cpu_after_damage")
    with caplog.at_level(logging.WARNING):
        run_lap_in_process(backend)

    warnings = [r.getMessage() for r in caplog.records if r.name == "pipeline.caching"]
    assert any("failed validation" in m and "artifacts" in m for m in warnings), warnings
    assert compiler.compiles == 2
    assert backend.pipeline.compilation.cache.stats.damaged == 1
    # Rebuilt under the same name, with the bytes its new cache entry records.
    assert built_objects(cache) == [built]


def test_a_truncated_built_object_is_detected_and_rebuilt_by_a_new_process(cache, compiler):
    assert_correct(run_worker(cache, compiler))
    (built,) = built_objects(cache)
    _truncate(built)

    report = run_worker(cache, compiler)

    assert_correct(report, "after truncation")
    assert report["compilation"]["damaged"] == 1
    assert "failed validation" in report["stderr"] and "WARNING" in report["stderr"]
    assert compiler.compiles == 2


def test_an_object_damaged_after_validation_is_rebuilt_when_loading_fails(cache, compiler, caplog):
    # The cache's validation and the load are two reads of the file; damage in between is
    # caught by the content hash check of the loader, and the backend rebuilds once.
    assert_correct(run_worker(cache, compiler))
    (built,) = built_objects(cache)
    _alter(built)
    backend = in_process_backend(cache, compiler, "c_cpu_racy")
    calls = []

    def racy_validate(artifact: object) -> bool:
        calls.append(artifact)
        return len(calls) == 1 or artifact_is_intact(artifact)  # the first check "misses" it

    compilation = backend.pipeline.compilation
    assert isinstance(compilation, CachedStep)
    racy = attrs.evolve(
        backend,
        name="c_cpu_racy",
        pipeline=attrs.evolve(
            backend.pipeline, compilation=attrs.evolve(compilation, validate=racy_validate)
        ),
    )
    with caplog.at_level(logging.WARNING):
        run_lap_in_process(racy)

    messages = [r.getMessage() for r in caplog.records if r.name == "pipeline.dispatch"]
    assert any("does not match its recorded hash" in m and "rebuilding" in m for m in messages), (
        messages
    )
    assert compiler.compiles == 2


# --------------------------------------------------------------------------- warm cache


def test_a_new_process_with_a_warm_cache_compiles_nothing(cache, compiler):
    first = run_worker(cache, compiler, "--program", "hdiff")
    assert_correct(first, "cold")
    assert compiler.compiles == 1
    assert first["compilation"] == {"hits": 0, "misses": 1, "damaged": 0}

    second = run_worker(cache, compiler, "--program", "hdiff")

    assert_correct(second, "warm")
    assert compiler.compiles == 1, compiler.lines("compile")
    assert second["translation"] == {"hits": 1, "misses": 0, "damaged": 0}
    assert second["compilation"] == {"hits": 1, "misses": 0, "damaged": 0}


def test_a_new_backend_object_over_a_warm_cache_hits_the_compilation_cache(
    cache, compiler, monkeypatch
):
    # The worker runs one thread; automatic translations are keyed by the machine, the
    # cores the stencils may use included (ADR 0009).
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    report = run_worker(cache, compiler)
    assert_correct(report)
    backend = in_process_backend(cache, compiler, "c_cpu_warm")

    run_lap_in_process(backend)

    assert compiler.compiles == 1
    stats = backend.pipeline.compilation.cache.stats
    assert (stats.hits, stats.misses, stats.damaged) == (1, 0, 0)
    # Once seen with 0 translation hits under a loaded CI (cause not found): the counters
    # and the worker's own report say which way it went when it comes back.
    translations = backend.pipeline.translation.cache.stats
    assert (translations.hits, translations.misses, translations.damaged) == (1, 0, 0), (
        f"in-process translation cache {translations}; the worker's {report['translation']}; "
        f"worker stderr: {report['stderr'][-2000:]}"
    )


# --------------------------------------------------------------------------- environment


def test_stage_dump_writes_one_file_per_stage(cache, compiler, tmp_path):
    dump = tmp_path / "dump"

    report = run_worker(cache, compiler, STENCILFORGE_DUMP_STAGES=str(dump))

    assert_correct(report)
    files = sorted(dump.iterdir())
    stages = [f.name.split("-")[2] for f in files]
    assert stages == ["frontend", "translation", "compilation", "loading"], [f.name for f in files]
    frontend, translation, compilation, loading = (f.read_text() for f in files)
    assert "lap" in frontend and "#include" not in frontend
    assert "sf_program_descriptor" in translation and "Python.h" not in translation
    (built,) = built_objects(cache)
    assert str(built) in compilation
    assert str(built) in loading


def test_c_cpu_refuses_a_cache_directory_others_can_write(tmp_path, compiler):
    unsafe = tmp_path / "shared-cache"
    unsafe.mkdir()
    unsafe.chmod(0o777)
    env = worker_environment(unsafe, compiler)

    result = subprocess.run(
        [sys.executable, "-c", "import backends; backends.c_cpu"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode != 0
    assert "UnsafeCacheDirectoryError" in result.stderr
    assert f"cache directory {unsafe} is writable by group or others" in result.stderr
    assert compiler.compiles == 0
