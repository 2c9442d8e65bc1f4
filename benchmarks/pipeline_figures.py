"""Pipeline figures of a compiled backend: cold compile per stage, warm start, call overhead.

Cold and warm starts are measured in fresh subprocesses (``benchmarks.probe``) that share one
new, private ``STENCILFORGE_CACHE_DIR``: the first finds it empty (cold: every stage runs, and
its stage events give the per-stage times), the second finds what the first stored (warm: the
time from after the imports to the first result). Each pair runs ``repeat`` times, each in a
cache directory of its own: one compile is one sample of a noisy machine, so the figures are
medians (the cold stages those of the run with the median cold compile), and every sample is
kept. Call overhead comes from the in-process small
grid rows: the program call versus the loaded executable called directly.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any

import attrs

from benchmarks import cache_hits
from benchmarks.results import Row

__all__ = ["PipelineFigures", "StageTime", "cache_hit_seconds", "measure_pipeline"]



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
    message: str = ""

    @property
    def cold_compile_seconds(self) -> float | None:
        """Definition -> loaded callable with an empty cache: the cold stages' sum (without
        what the probe process spends creating the backend and its arguments)."""
        if not self.cold_stages:
            return None
        return sum(stage.seconds for stage in self.cold_stages)

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
        return data


def _probe(reference: str, workload: str, cache_dir: str, timeout: float) -> dict[str, Any]:
    # A user's installation has its modules' bytecode; without it every lazy import inside
    # the timed region compiles source. So the probes may write and read .pyc files even
    # where this process was told not to.
    environment = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
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
        repeat: cold + warm pairs, each with a fresh cache directory.
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
    runs = []
    for _ in range(max(repeat, 1)):
        # mkdtemp makes the directory private (0700), as the build cache requires.
        with tempfile.TemporaryDirectory(prefix="stencilforge-cold-cache-") as cache_dir:
            try:
                cold = _probe(reference or backend, workload, cache_dir, timeout)
                warm = _probe(reference or backend, workload, cache_dir, timeout)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError, KeyError) as error:
                return attrs.evolve(figures, message=str(error))
        runs.append((_stages(cold), cold["first_result_seconds"], warm))
    compiles = [sum(stage.seconds for stage in stages) for stages, _, _ in runs]
    middle = sorted(range(len(runs)), key=compiles.__getitem__)[len(runs) // 2]
    stages, _, warm = runs[middle]
    return attrs.evolve(
        figures,
        cold_stages=stages,
        cold_first_result_seconds=statistics.median(first for _, first, _ in runs),
        warm_stages=_stages(warm),
        warm_start_seconds=statistics.median(w["first_result_seconds"] for _, _, w in runs),
        cold_compile_samples=tuple(compiles),
        cold_first_result_samples=tuple(first for _, first, _ in runs),
        warm_start_samples=tuple(w["first_result_seconds"] for _, _, w in runs),
    )


def cache_hit_seconds(repeat: int) -> dict[str, float]:
    """Median hit times of an in-memory and an on-disk ``CachedStep`` (``cache_hits``)."""
    return cache_hits.measure(repeat)
