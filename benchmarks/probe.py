"""Subprocess entry of the pipeline figures: ``python -m benchmarks.probe BACKEND WORKLOAD``.

Runs the workload once on the small grid in this fresh process and prints one JSON object on
stdout: the stage events of the pipeline run (``stage``, ``step``, ``seconds``), the seconds from
after the imports to the first (synchronized) result, and whether that result matched NumPy.
The parent chooses the cache directory through ``STENCILFORGE_CACHE_DIR``, so the same probe
measures a cold start (empty directory) and a warm one (the directory of the cold run).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import pipeline
from benchmarks.arrays import output_of, synchronize
from benchmarks.jax_setup import enable_jax_64_bit
from benchmarks.measure import backend_arguments, expected_output, verify
from benchmarks.selection import resolve_backend
from benchmarks.workloads import SIZES, WORKLOADS

SIZE = "small"


def main(argv: list[str]) -> int:
    """Probe ``argv == [backend reference, workload name]``; the exit status is 0 when
    verified. The reference is a name or ``module:attribute`` (``selection.resolve_backend``)."""
    start = time.perf_counter()
    reference, workload_name = argv
    # Only the backend under test: creating the others would import their packages (DaCe
    # takes over a second) inside the measured time.
    backend: Any = resolve_backend(reference)
    enable_jax_64_bit()  # a JAX backend needs it for the float64 workloads, as in the harness
    workload = WORKLOADS[workload_name]
    stages: list[dict[str, object]] = []

    def record(event: pipeline.StageEvent) -> None:
        stages.append({"stage": event.stage, "step": event.step, "seconds": event.seconds})

    arguments = backend_arguments(workload, workload.host_arguments(SIZES[SIZE]), backend)
    program = workload.program.with_backend(backend)
    with pipeline.subscribe(record):
        result = program(*arguments)
        output = output_of(result, arguments[-1])
        synchronize(output)
    first_result = time.perf_counter() - start
    mismatch = verify(output, expected_output(workload, SIZES[SIZE]))
    print(json.dumps({
        "stages": stages,
        "first_result_seconds": first_result,
        "verified": mismatch is None,
        "message": mismatch or "",
    }))
    return 0 if mismatch is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
