"""What the dispatcher itself costs on a repeat call, per backend, positional and keyword.

Run: ``python -m benchmarks.dispatch_cost [--backends c_cpu,jax_jit,...] [--compare SRC]``.

For each backend, laplacian on the small grid (16x16x8) is called through the program,
positionally and by keyword, and directly: the dispatcher's cost is the difference. The
executable does nothing (the backend's loading step is replaced by one that returns a
function doing nothing), so only the dispatcher and its argument checks are timed; c_cpu
keeps its own executable, and its direct call is its native self-checking entry
(``fast_entry``), so the difference is the dispatcher's share of a c_cpu call.

``--compare SRC`` measures this tree against another source tree (``SRC`` is put first on
``PYTHONPATH`` of every other subprocess): the two alternate, ``--rounds`` times each, in one
run, so that a noisy machine weighs on both alike; the table gives each one's median and the
ratio after/before.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from benchmarks.jax_setup import enable_jax_64_bit
from benchmarks.measure import backend_arguments
from benchmarks.selection import resolve_backend
from benchmarks.workloads import SIZES, WORKLOADS

__all__ = ["DEFAULT_BACKENDS", "main", "measure"]

#: The backends measured by default: c_cpu, jax_jit and the backend guide's example.
DEFAULT_BACKENDS = ("c_cpu", "jax_jit", "examples.numpy_source_backend:numpy_source")


def _nothing(*args: Any) -> None:
    """The executable that does nothing."""


def _load_nothing(artifact: object) -> Callable[..., None]:
    return _nothing


def _per_call(call: Callable[[], object], repeat: int = 15, number: int = 2000) -> float:
    """The median over ``repeat`` loops of ``number`` calls, in seconds per call."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            call()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def _calls(reference: str) -> dict[str, Callable[[], object]]:
    """The program called positionally and by keyword, and the direct call."""
    workload = WORKLOADS["laplacian"]
    backend: Any = resolve_backend(reference)
    enable_jax_64_bit()  # once JAX is imported: the workloads are float64
    host = workload.host_arguments(SIZES["small"])
    args = backend_arguments(workload, host, backend)
    if backend.name != "c_cpu":
        nothing = attrs.evolve(backend.pipeline, loading=_load_nothing)
        backend = attrs.evolve(backend, pipeline=nothing)
    program = workload.program.with_backend(backend)
    program(*args)
    direct: Callable[..., object] = _nothing
    if backend.name == "c_cpu":
        direct = program.compile(*args).executable.fast_entry
    keywords = dict(zip(workload.parameters, args, strict=True))
    program(**keywords)
    return {
        "positional": lambda: program(*args),
        "keyword": lambda: program(**keywords),
        "direct": lambda: direct(*args),
    }


def measure(references: Sequence[str], repeat: int = 15) -> dict[str, dict[str, float]]:
    """Per backend: seconds per call of ``positional`` and ``keyword`` program calls and of
    the ``direct`` call, and the dispatcher's cost of each kind (``*_dispatch``)."""
    results: dict[str, dict[str, float]] = {}
    for reference in references:
        calls = _calls(reference)
        figures = {name: _per_call(call, repeat) for name, call in calls.items()}
        figures["positional_dispatch"] = figures["positional"] - figures["direct"]
        figures["keyword_dispatch"] = figures["keyword"] - figures["direct"]
        results[reference] = figures
    return results


def _subprocess(source: str | None, references: Sequence[str], repeat: int) -> Any:
    environment = dict(os.environ)
    if source is not None:
        environment["PYTHONPATH"] = os.pathsep.join(
            [source, *filter(None, [environment.get("PYTHONPATH", "")])]
        )
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.dispatch_cost", "--json", "--repeat", str(repeat),
         "--backends", ",".join(references)],
        env=environment, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def _compare(source: str, references: Sequence[str], rounds: int, repeat: int) -> str:
    runs: dict[str, list[Any]] = {"before": [], "after": []}
    for _ in range(rounds):
        runs["before"].append(_subprocess(source, references, repeat))
        runs["after"].append(_subprocess(None, references, repeat))
    header = f"{'backend':<48} {'call':<10} {'before us':>10} {'after us':>10}"
    lines = [f"{header} {'after/before':>13}"]
    for reference in references:
        for kind in ("positional_dispatch", "keyword_dispatch"):
            before = statistics.median(run[reference][kind] for run in runs["before"]) * 1e6
            after = statistics.median(run[reference][kind] for run in runs["after"]) * 1e6
            ratio = after / before if before > 0 else float("nan")
            lines.append(
                f"{reference:<48} {kind.split('_')[0]:<10} {before:>10.2f} {after:>10.2f} "
                f"{ratio:>13.2f}"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dispatch_cost")
    parser.add_argument("--backends", default=",".join(DEFAULT_BACKENDS))
    parser.add_argument("--compare", metavar="SRC", help="another source tree to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    options = parser.parse_args(argv)
    references = [name for name in options.backends.split(",") if name]
    if options.compare:
        print(_compare(options.compare, references, options.rounds, options.repeat))
        return
    results = measure(references, options.repeat)
    if options.json:
        print(json.dumps(results))
        return
    for reference, figures in results.items():
        print(
            f"{reference}: dispatcher {figures['positional_dispatch'] * 1e6:.2f} us positional, "
            f"{figures['keyword_dispatch'] * 1e6:.2f} us keyword "
            f"(direct call {figures['direct'] * 1e6:.2f} us)"
        )


if __name__ == "__main__":
    main()
