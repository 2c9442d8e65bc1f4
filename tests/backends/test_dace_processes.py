"""DaCe builds under kills and races, with real processes (the guarantees c_cpu has)."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from c_programs.support import (
    finish_worker,
    kill_worker,
    run_worker,
    start_worker,
)

pytestmark = [pytest.mark.requires_dace, pytest.mark.slow]


def published_builds(cache: Path) -> list[Path]:
    builds = cache / "dace" / "builds"
    return sorted(builds.iterdir()) if builds.exists() else []


def test_a_dace_build_killed_at_random_moments_leaves_nothing_that_loads_wrong(cache, compiler):
    rng = random.Random(7)
    statuses = []
    for delay in sorted(rng.uniform(0.5, 6.0) for _ in range(3)):
        process = start_worker(cache, compiler, "--backend", "dace_cpu")
        time.sleep(delay)
        statuses.append(kill_worker(process))

    report = run_worker(cache, compiler, "--backend", "dace_cpu")

    assert report["returncode"] == 0 and report["correct"], (statuses, report["stderr"][-2000:])
    assert len(published_builds(cache)) == 1


def test_four_processes_building_one_dace_program_build_it_once(cache, compiler, tmp_path):
    start = tmp_path / "start"
    ready = [tmp_path / f"ready-{n}" for n in range(4)]
    processes = [
        start_worker(cache, compiler, "--backend", "dace_cpu", "--ready", str(r), "--start", str(start))
        for r in ready
    ]
    try:
        deadline = time.monotonic() + 180.0
        while not all(r.exists() for r in ready):
            assert all(p.poll() is None for p in processes), "a worker died before the start"
            assert time.monotonic() < deadline, "the workers never got ready"
            time.sleep(0.01)
        start.touch()
        reports = [finish_worker(p, timeout=300.0) for p in processes]
    finally:
        for p in processes:
            if p.poll() is None:
                kill_worker(p)

    for n, report in enumerate(reports):
        assert report["returncode"] == 0 and report["correct"], (n, report["stderr"][-2000:])
    assert len(published_builds(cache)) == 1
    assert sum(r["compilation"]["misses"] for r in reports) == 1
    assert sum(r["compilation"]["hits"] for r in reports) == 3
