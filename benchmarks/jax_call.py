"""Where a small repeat call of ``jax_jit`` goes, beside the JAX peer.

Run: ``python -m benchmarks.jax_call [--workloads laplacian,hdiff] [--sync] [--with-numba]``.
For each workload on the small grid, times together in rounds (``time_in_rounds``):

- ``program``: the call a user makes, ``program(*args)``;
- ``fast entry``: the self-checking entry the dispatcher enters (for JAX the remembered
  verdict of the argument checks, ``pipeline.verdicts.RememberedEntry``);
- ``executable``: the loaded ``JaxJitExecutable`` on checked arguments;
- ``jitted``: the ``jax.jit`` function it calls, alone;
- ``peer``: the harness's JAX peer (``jax.jit`` of the NumPy-slicing kernel);
- with ``--with-numba``, the Numba peer too, as in a harness run, whose OpenMP threads share
  the two cores with JAX's.

``--sync`` turns JAX's asynchronous CPU dispatch off (``jax_cpu_enable_async_dispatch``) for
every call alike. The differences between the rows are what each layer costs; ``jitted``
against ``peer`` is the code XLA runs (the same HLO for these workloads).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

from backends import CompiledBackend, jax_jit
from backends.jax.loading import JaxJitExecutable
from benchmarks.arrays import output_of, synchronize
from benchmarks.jax_setup import enable_jax_64_bit
from benchmarks.measure import backend_arguments
from benchmarks.peers import available_peers
from benchmarks.timing import TimedCall, time_in_rounds
from benchmarks.workloads import SIZES, WORKLOADS

__all__ = ["main", "measure"]


def _layers(workload_name: str, with_numba: bool) -> dict[str, TimedCall]:
    workload = WORKLOADS[workload_name]
    host = workload.host_arguments(SIZES["small"])
    args = backend_arguments(workload, host, jax_jit)
    out = args[-1]
    backend = jax_jit
    if not isinstance(backend, CompiledBackend):
        raise TypeError(f"jax_jit is a {type(backend).__name__}, not a CompiledBackend")
    program = workload.program.with_backend(backend)
    compiled = program.compile(*args)
    executable = compiled.executable
    if not isinstance(executable, JaxJitExecutable):
        raise TypeError(f"jax_jit loaded a {type(executable).__name__}, not a JaxJitExecutable")
    specialization = compiled.specialization
    fast = specialization.fast_entry or specialization.remembered_entry
    if fast is None:
        raise TypeError("jax_jit's specialization has neither a fast nor a remembered entry")
    jitted = executable.program.traced

    def wait(result: object) -> None:
        synchronize(output_of(result, out))

    def timed(call: Callable[..., Any]) -> TimedCall:
        return TimedCall(lambda: call(*args), wait)

    layers = {
        "program": timed(program),
        "fast entry": timed(fast),
        "executable": timed(executable),
        "jitted": timed(jitted),
    }
    peers, notes = available_peers()
    names = ("jax", "numba") if with_numba else ("jax",)
    for name in names:
        if name not in peers:
            raise SystemExit(f"the {name} peer is needed here: {'; '.join(notes)}")
        runner = peers[name](workload, workload.host_arguments(SIZES["small"]))
        if runner is not None:  # Numba has no version of the scans
            layers[f"{name} peer"] = TimedCall(runner, synchronize)
    return layers


def measure(
    workloads: list[str], sync: bool = False, with_numba: bool = False, repeat: int = 300
) -> dict[str, dict[str, float]]:
    """Median seconds per call of each layer (see the module docstring), per workload;
    ``sync`` turns JAX's asynchronous CPU dispatch off while it measures."""
    config = importlib.import_module("jax").config
    enable_jax_64_bit()
    asynchronous = bool(config.read("jax_cpu_enable_async_dispatch"))
    config.update("jax_cpu_enable_async_dispatch", asynchronous and not sync)
    try:
        return {name: _medians(name, with_numba, repeat) for name in workloads}
    finally:
        config.update("jax_cpu_enable_async_dispatch", asynchronous)


def _medians(workload_name: str, with_numba: bool, repeat: int) -> dict[str, float]:
    layers = _layers(workload_name, with_numba)
    medians = {}
    for layer, timing in zip(layers, time_in_rounds(list(layers.values()), repeat), strict=True):
        if isinstance(timing, Exception):
            raise timing
        medians[layer] = timing.median
    return medians


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.jax_call", description=__doc__)
    parser.add_argument("--workloads", default="laplacian,hdiff")
    parser.add_argument("--sync", action="store_true", help="JAX's async CPU dispatch off")
    parser.add_argument("--with-numba", action="store_true", help="the Numba peer in the rounds")
    parser.add_argument("--repeat", type=int, default=300)
    options = parser.parse_args(argv)
    names = options.workloads.split(",")
    unknown = [name for name in names if name not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workloads {unknown}; known: {sorted(WORKLOADS)}")
    found = measure(names, options.sync, options.with_numba, options.repeat)
    for name, medians in found.items():
        peer = medians["jax peer"]
        print(f"{name} (small, async dispatch {'off' if options.sync else 'on'}):")
        for layer, seconds in medians.items():
            print(f"  {layer:12s} {seconds * 1e6:8.1f} us  {seconds / peer:5.2f}x the JAX peer")


if __name__ == "__main__":
    main()
