"""Pipeline figures of a compiled backend: cold compile per stage, warm start, call overhead.

Cold and warm starts are measured in fresh subprocesses (``benchmarks.probe``), each with a
new, private ``STENCILFORGE_CACHE_DIR``. The first finds it empty (cold: every stage runs, and
its stage events give the per-stage times). Where the cold run left choice records (c_cpu's
``choices/``, ADR 0009: measured when that process exited, or before its build with
``STENCILFORGE_TUNING=now``), a second process finds a new directory holding those records
alone: its cold compile is the program's with its choice recorded (nothing measured or
predicted; what a later process pays once a first one measured). The last process finds what
the one before stored (warm: the time from after the imports to the first result). Each such
sequence runs ``repeat`` times: one compile is one sample of a noisy machine, so the figures
are medians (the cold stages those of the run with the median cold compile), and every sample
is kept. Call overhead comes from the in-process small grid rows: the program call versus the
loaded executable called directly.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from benchmarks import cache_hits
from benchmarks.results import Row

__all__ = [
    "CHOICES",
    "PipelineFigures",
    "StageTime",
    "cache_hit_seconds",
    "compile_seconds",
    "measure_pipeline",
    "run_probe",
]

#: The folder of a cache directory that holds c_cpu's choice records (ADR 0009).
CHOICES = "choices"


@attrs.frozen
class StageTime:
    """One stage event: the pipeline field, the step's name, and its seconds."""

    stage: str
    step: str
    seconds: float


@attrs.frozen
class PipelineFigures:
    """The pipeline figures of one workload on one compiled backend (``None``: not measured).

    Attributes:
        cold_stages: the stage events of the first compilation with an empty cache.
        cold_first_result_seconds: fresh process, empty cache: after imports to first result.
        warm_start_seconds: fresh process, warm cache: after imports to first result.
        warm_stages: the stage events of the warm run (what still ran with a warm cache).
        call_seconds: median program call on the small grid.
        direct_call_seconds: median call of the loaded executable itself on the small grid.
        cold_compile_samples: every cold run's compile (the sum of its stages), in order.
        cold_first_result_samples: every cold run's first result, in order.
        warm_start_samples: every warm run's first result, in order.
        recorded_stages: the stage events of the cold compile, with the choice records of
            the first cold run, of the run with the median such compile (empty: the backend
            records no choices).
        recorded_first_result_seconds: fresh process, only choice records in the cache:
            after imports to first result (median).
        recorded_compile_samples: every such run's compile (the sum of its stages).
        recorded_first_result_samples: every such run's first result.
        message: why something is missing (a failed or timed-out probe), else empty.
    """

    backend: str
    workload: str
    cold_stages: tuple[StageTime, ...] = ()
    cold_first_result_seconds: float | None = None
    warm_stages: tuple[StageTime, ...] = ()
    warm_start_seconds: float | None = None
    call_seconds: float | None = None
    direct_call_seconds: float | None = None
    cold_compile_samples: tuple[float, ...] = ()
    cold_first_result_samples: tuple[float, ...] = ()
    warm_start_samples: tuple[float, ...] = ()
    recorded_stages: tuple[StageTime, ...] = ()
    recorded_first_result_seconds: float | None = None
    recorded_compile_samples: tuple[float, ...] = ()
    recorded_first_result_samples: tuple[float, ...] = ()
    message: str = ""

    @property
    def cold_compile_seconds(self) -> float | None:
        """Definition -> loaded callable with an empty cache: the cold stages' sum (without
        what the probe process spends creating the backend and its arguments)."""
        if not self.cold_stages:
            return None
        return sum(stage.seconds for stage in self.cold_stages)

    @property
    def recorded_compile_seconds(self) -> float | None:
        """Definition -> loaded callable with only the choice records in the cache."""
        if not self.recorded_stages:
            return None
        return sum(stage.seconds for stage in self.recorded_stages)

    @property
    def call_overhead_seconds(self) -> float | None:
        """Argument checks and dispatch: program call minus direct executable call."""
        if self.call_seconds is None or self.direct_call_seconds is None:
            return None
        return self.call_seconds - self.direct_call_seconds

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (with the derived cold compile and call overhead)."""
        data = attrs.asdict(self)
        data["call_overhead_seconds"] = self.call_overhead_seconds
        data["cold_compile_seconds"] = self.cold_compile_seconds
        data["recorded_compile_seconds"] = self.recorded_compile_seconds
        return data


def run_probe(
    reference: str,
    workload: str,
    cache_dir: str,
    timeout: float,
    environment: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``benchmarks.probe`` in a fresh process over ``cache_dir``, with this process's
    environment and ``environment``: its JSON result.

    Raises:
        RuntimeError: the probe printed nothing or its result was not verified.
        subprocess.TimeoutExpired: it ran longer than ``timeout`` seconds.
    """
    # A user's installation has its modules' bytecode; without it every lazy import inside
    # the timed region compiles source. So the probes may write and read .pyc files even
    # where this process was told not to.
    environment = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        **(environment or {}),
        "STENCILFORGE_CACHE_DIR": cache_dir,
    }
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.probe", reference, workload],
        cwd=os.getcwd(), env=environment, capture_output=True, text=True,
        timeout=timeout, check=False,
    )
    lines = done.stdout.strip().splitlines()
    if not lines:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        raise RuntimeError(f"probe of {workload}@{reference} failed: {tail[0]}")
    result: dict[str, Any] = json.loads(lines[-1])
    if not result["verified"]:
        raise RuntimeError(f"probe of {workload}@{reference}: {result['message']}")
    return result


def _stages(result: dict[str, Any]) -> tuple[StageTime, ...]:
    return tuple(StageTime(s["stage"], s["step"], s["seconds"]) for s in result["stages"])


def measure_pipeline(
    backend: str,
    workload: str,
    small_row: Row | None,
    timeout: float = 300.0,
    repeat: int = 3,
    reference: str | None = None,
) -> PipelineFigures:
    """Measure the pipeline figures of ``workload`` on the compiled ``backend``.

    Args:
        small_row: the in-process small-grid row of this backend and workload (for the call
            overhead), or ``None`` if it was not measured.
        timeout: seconds allowed for each probe subprocess.
        repeat: cold, recorded and warm sequences, each with fresh cache directories.
        reference: how the probe finds the backend (``selection.resolve_backend``); by
            default its name.

    A failing probe does not raise: the figures carry its message instead.
    """
    figures = PipelineFigures(backend, workload)
    if small_row is not None and small_row.median is not None:
        figures = attrs.evolve(
            figures,
            call_seconds=small_row.median,
            direct_call_seconds=small_row.direct_call_seconds,
        )
    runs: list[_Run] = []
    for _ in range(max(repeat, 1)):
        try:
            runs.append(_run(reference or backend, workload, timeout))
        except (RuntimeError, subprocess.TimeoutExpired, ValueError, KeyError) as error:
            return attrs.evolve(figures, message=str(error))
    figures = attrs.evolve(figures, **_medians(runs))
    recorded = [run.recorded for run in runs if run.recorded is not None]
    if not recorded:
        return figures
    compiles = [compile_seconds(result) for result in recorded]
    middle = sorted(range(len(recorded)), key=compiles.__getitem__)[len(recorded) // 2]
    firsts = tuple(result["first_result_seconds"] for result in recorded)
    return attrs.evolve(
        figures,
        recorded_stages=_stages(recorded[middle]),
        recorded_first_result_seconds=statistics.median(firsts),
        recorded_compile_samples=tuple(compiles),
        recorded_first_result_samples=firsts,
    )


@attrs.frozen
class _Run:
    """One sequence's probe results: cold, with the choice records only (None: the cold
    run left none), warm."""

    cold: dict[str, Any]
    recorded: dict[str, Any] | None
    warm: dict[str, Any]


def _run(reference: str, workload: str, timeout: float) -> _Run:
    """Cold, then (where the cold run recorded choices) cold with its choice records alone,
    then warm, each in a fresh process; mkdtemp makes the directories private (0700), as
    the build cache requires."""
    with tempfile.TemporaryDirectory(prefix="stencilforge-cold-cache-") as cache_dir:
        cold = run_probe(reference, workload, cache_dir, timeout)
        choices = Path(cache_dir) / CHOICES
        if not choices.is_dir():
            return _Run(cold, None, run_probe(reference, workload, cache_dir, timeout))
        with tempfile.TemporaryDirectory(prefix="stencilforge-recorded-cache-") as recorded_dir:
            shutil.copytree(choices, Path(recorded_dir) / CHOICES)
            recorded = run_probe(reference, workload, recorded_dir, timeout)
            return _Run(cold, recorded, run_probe(reference, workload, recorded_dir, timeout))


def compile_seconds(result: dict[str, Any]) -> float:
    """A probe result's compile: the sum of its stage events."""
    return sum(stage.seconds for stage in _stages(result))


def _medians(runs: list[_Run]) -> dict[str, Any]:
    """The cold and warm figures of ``runs`` (the cold stages of the median cold compile)."""
    compiles = [compile_seconds(run.cold) for run in runs]
    middle = sorted(range(len(runs)), key=compiles.__getitem__)[len(runs) // 2]
    firsts = tuple(run.cold["first_result_seconds"] for run in runs)
    warms = tuple(run.warm["first_result_seconds"] for run in runs)
    return {
        "cold_stages": _stages(runs[middle].cold),
        "cold_first_result_seconds": statistics.median(firsts),
        "warm_stages": _stages(runs[middle].warm),
        "warm_start_seconds": statistics.median(warms),
        "cold_compile_samples": tuple(compiles),
        "cold_first_result_samples": firsts,
        "warm_start_samples": warms,
    }


def cache_hit_seconds(repeat: int) -> dict[str, float]:
    """Median hit times of an in-memory and an on-disk ``CachedStep`` (``cache_hits``)."""
    return cache_hits.measure(repeat)
