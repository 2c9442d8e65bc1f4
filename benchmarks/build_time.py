"""A cold compile of hdiff by c_cpu's compilation step, against hand-written C.

Run: ``python -m benchmarks.build_time [--rounds 7]``. Each round, in alternating order, times

- c_cpu's compilation step (``CCompilation``, the flags of ``backends.c_cpu``) building the
  hdiff program's source (translated once before the rounds) into a fresh build directory
  that holds only the support object (``backends.c.support``, built once per compiler and
  flags): writing the source, checking and copying the support object, the compiler and
  linker, hashing and publishing the shared object;
- the same compiler, with the same flags (``CCompilation.command_flags``), compiling the
  hand-written kernel ``fixtures/hdiff_kernel.c`` (the same job: strided float64 fields,
  flux limiting, OpenMP over tiles, the domain checked) into a shared object;

and prints the medians and their ratio (issue 17's target: at most 1.2). The launcher is not
part of either: it is built once per machine and interpreter (its build time is printed too),
as the support object is once per compiler and flags.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from importlib import resources
from pathlib import Path

import attrs
import numpy as np

import backends
from backends import CompiledBackend
from backends.c import CCompilation, CLoading
from benchmarks.workloads import WORKLOADS
from pipeline.caching import CachedStep
from pipeline.stages import ProgramSource

__all__ = ["BuildTimes", "main", "measure"]

#: The hand-written kernel, shipped with the harness.
HAND_WRITTEN = "fixtures/hdiff_kernel.c"


@attrs.frozen
class BuildTimes:
    """Seconds per round of the two builds, and the launcher's one-off build."""

    generated: tuple[float, ...]
    hand_written: tuple[float, ...]
    launcher: float

    @property
    def ratio(self) -> float:
        """Median of c_cpu's compilation over the median of the hand-written build."""
        return statistics.median(self.generated) / statistics.median(self.hand_written)


def _c_cpu() -> CompiledBackend:
    backend = backends.c_cpu
    assert isinstance(backend, CompiledBackend)
    return backend


def _hdiff_source() -> ProgramSource:
    program = WORKLOADS["hdiff"].program.with_backend(_c_cpu())
    inp = np.zeros((16, 16, 8))
    source = program.lower(inp, 0.025, np.zeros_like(inp)).source
    assert isinstance(source, ProgramSource)
    return source


def _c_cpu_compilation() -> CCompilation:
    step = _c_cpu().pipeline.compilation
    inner = step.step if isinstance(step, CachedStep) else step
    assert isinstance(inner, CCompilation)
    return inner


def _time_generated(compilation: CCompilation, source: ProgramSource, root: Path) -> float:
    fresh = attrs.evolve(compilation, build_directory=str(root / "c"))
    fresh.__fingerprint__()  # the compiler's identity: asked once per process, not per build
    fresh.support_object(root)  # built once per compiler and flags, as the launcher is
    start = time.perf_counter()
    fresh(source)
    return time.perf_counter() - start


def _time_hand_written(compilation: CCompilation, kernel: Path, root: Path) -> float:
    command = [compilation.compiler, *compilation.command_flags, str(kernel), "-o",
               str(root / "hdiff_kernel.so")]
    start = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - start


def _time_launcher(root: Path) -> float:
    loading = _c_cpu().pipeline.loading
    assert isinstance(loading, CLoading)
    launcher = attrs.evolve(loading.launcher, directory=str(root / "launcher"))
    start = time.perf_counter()
    launcher.published()
    return time.perf_counter() - start


def measure(rounds: int) -> BuildTimes:
    """``rounds`` alternating cold builds of each kind (see the module docstring)."""
    source = _hdiff_source()
    compilation = _c_cpu_compilation()
    generated: list[float] = []
    hand_written: list[float] = []
    with resources.as_file(resources.files("benchmarks") / HAND_WRITTEN) as kernel:
        for index in range(rounds):
            with tempfile.TemporaryDirectory(prefix="sf-build-time-") as directory:
                root = Path(directory)
                if index % 2 == 0:
                    generated.append(_time_generated(compilation, source, root))
                    hand_written.append(_time_hand_written(compilation, kernel, root))
                else:
                    hand_written.append(_time_hand_written(compilation, kernel, root))
                    generated.append(_time_generated(compilation, source, root))
    with tempfile.TemporaryDirectory(prefix="sf-build-time-") as directory:
        launcher = _time_launcher(Path(directory))
    return BuildTimes(tuple(generated), tuple(hand_written), launcher)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()
    times = measure(options.rounds)
    flags = " ".join(_c_cpu_compilation().command_flags)
    print(f"flags: {flags}")
    for label, seconds in (
        ("c_cpu compilation of hdiff", times.generated),
        ("hand-written hdiff kernel", times.hand_written),
    ):
        rounds = ", ".join(f"{t * 1e3:.0f}" for t in seconds)
        print(f"{label:28s} median {statistics.median(seconds) * 1e3:7.1f} ms  ({rounds})")
    print(f"ratio {times.ratio:.2f} (target <= 1.2)")
    print(f"launcher build (once per machine and interpreter): {times.launcher * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
