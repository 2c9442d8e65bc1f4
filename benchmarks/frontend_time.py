"""Measure the frontend: definition -> ``CompilableProgram`` for the reference workloads.

Run: ``python -m benchmarks.frontend_time``. Prints the median over fresh parses (the
frontend's own caches of parsed operators are cleared before each run, so every run parses
the source again) and prints ``str(ir)`` of hdiff.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks.workloads import WORKLOADS
from pipeline.dsl.frontend import operators
from pipeline.dsl.frontend.step import default_passes
from pipeline.dsl.passes import typing_
from pipeline.dsl.stages import ProgramDefinition


def _clear_operator_caches() -> None:
    operators.clear_caches()
    typing_._TYPED.clear()


def frontend_seconds(definition: ProgramDefinition, repeat: int) -> list[float]:
    """Seconds of ``repeat`` cold frontend runs on ``definition``."""
    timings = []
    for _ in range(repeat):
        _clear_operator_caches()
        start = time.perf_counter()
        default_passes(definition)
        timings.append(time.perf_counter() - start)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=50)
    options = parser.parse_args()
    for name, workload in WORKLOADS.items():
        timings = frontend_seconds(workload.program.definition, options.repeat)
        print(f"{name:10s} frontend median {statistics.median(timings) * 1e3:6.2f} ms "
              f"(min {min(timings) * 1e3:.2f} ms, {options.repeat} runs)")
    print()
    print(default_passes(WORKLOADS["hdiff"].program.definition))


if __name__ == "__main__":
    main()
