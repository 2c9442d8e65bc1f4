"""Peers: the same workloads written the way a user would in Numba or JAX.

Run by default when their package is installed (``pip install -e '.[peers]'``; ``--no-peers``
leaves them out). A peer whose package is not importable is left out with a note; a peer
without an implementation of a workload gives a ``skipped`` row. Each is verified against
NumPy before it is timed, like the backends.

- ``numba``: explicit loops under ``numba.njit(parallel=True)`` (``prange`` over I), one
  kernel per workload in ``_numba_kernels``.
- ``jax``: ``jax.jit`` of the workload's own slicing kernel on ``jax.numpy`` (float64 enabled),
  writing the domain with ``out.at[...].set(...)``; so every registered workload has a JAX peer.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from benchmarks.arrays import synchronize
from benchmarks.machine import CopyKernel
from benchmarks.measure import (
    Contender,
    expected_output,
    placed_host_arguments,
    time_together,
    verify,
)
from benchmarks.results import FAILED, PEER, SKIPPED, Row
from benchmarks.timing import TimedCall, time_calls
from benchmarks.workloads import SIZES, Workload

__all__ = ["PeerFactory", "available_peers", "measure_peer", "prepare_peer"]

#: Runs the workload once and returns the output array.
PeerRunner = Callable[[], Any]
#: Prepares a runner for a workload on host arguments; ``None``: no implementation of it.
PeerFactory = Callable[[Workload, dict[str, Any]], PeerRunner | None]


def available_peers() -> tuple[dict[str, PeerFactory], list[str]]:
    """The importable peers by name, and a note for each one that is not."""
    found: dict[str, PeerFactory] = {}
    notes: list[str] = []
    for name, factory in (("numba", _numba_factory), ("jax", _jax_factory)):
        try:
            found[name] = factory()
        except ImportError as error:
            notes.append(
                f"peer {name} skipped: {error} (install with `pip install 'stencilforge[peers]'`)"
            )
    return found, notes


def measure_peer(
    workload: Workload,
    size: str,
    name: str,
    factory: PeerFactory,
    repeat: int,
    copy: CopyKernel | None = None,
) -> Row:
    """Verify, then time, one peer on one workload and size (errors become FAILED rows)."""
    return time_together([prepare_peer(workload, size, name, factory)], repeat, copy)[0]


def prepare_peer(
    workload: Workload,
    size: str,
    name: str,
    factory: PeerFactory,
    shape: tuple[int, int, int] | None = None,
    room: tuple[int, int, int] | None = None,
) -> Contender | Row:
    """One peer on one workload and size, compiled, run once and verified: a ``Contender``
    to time, or the final row (``FAILED``, or ``skipped`` without a version of the workload);
    on ``shape`` instead of the size's grid when given, its fields placed in memory as those
    of the grid ``room`` when given (``measure.placed_host_arguments``).
    """
    shape = shape or SIZES[size]
    row = Row(workload.name, size, shape, name, PEER, "ok", workload.bytes_per_call(shape))
    try:
        runner = factory(workload, placed_host_arguments(workload, shape, room))
        if runner is None:
            return attrs.evolve(row, status=SKIPPED, message=f"no {name} version of this workload")
        timing = time_calls(runner, 1, synchronize)  # JIT compilation happens here
        row = attrs.evolve(row, first_call_seconds=timing.median)
        mismatch = verify(runner(), expected_output(workload, shape))
        if mismatch is not None:
            return attrs.evolve(row, status=FAILED, message=mismatch)
        return Contender(row, TimedCall(runner, synchronize))
    except Exception as error:  # a failing peer is a reported row
        return attrs.evolve(row, status=FAILED, message=f"{type(error).__name__}: {error}")


# --------------------------------------------------------------------------- JAX


def _jax_factory() -> PeerFactory:
    jax = importlib.import_module("jax")
    jnp = importlib.import_module("jax.numpy")
    jax.config.update("jax_enable_x64", True)

    def prepare(workload: Workload, host: dict[str, Any]) -> PeerRunner:
        names = (*workload.inputs, *workload.scalars)
        domain = workload.domain

        def step(out: Any, *values: Any) -> Any:
            return out.at[domain].set(workload.kernel(jnp, **dict(zip(names, values, strict=True))))

        jitted = jax.jit(step)
        out = jnp.asarray(host["out"])
        values = [jnp.asarray(host[n]) if isinstance(host[n], np.ndarray) else host[n]
                  for n in names]
        return lambda: jitted(out, *values)

    return prepare


# --------------------------------------------------------------------------- Numba


def _numba_factory() -> PeerFactory:
    numba = importlib.import_module("numba")
    kernels = _numba_kernels(numba)

    def prepare(workload: Workload, host: dict[str, Any]) -> PeerRunner | None:
        kernel = kernels.get(workload.name)
        if kernel is None:
            return None
        arguments = [host[name] for name in workload.parameters]
        out = arguments[-1]

        def run() -> Any:
            kernel(*arguments)
            return out

        return run

    return prepare


def _numba_kernels(numba: Any) -> dict[str, Callable[..., None]]:
    jit = numba.njit(parallel=True, cache=False)
    inline = numba.njit(inline="always")

    @jit
    def laplacian(inp, out):  # type: ignore[no-untyped-def]
        ni, nj, nk = inp.shape
        for i in numba.prange(1, ni - 1):
            for j in range(1, nj - 1):
                for k in range(nk):
                    out[i, j, k] = (
                        -4.0 * inp[i, j, k]
                        + inp[i + 1, j, k] + inp[i - 1, j, k]
                        + inp[i, j + 1, k] + inp[i, j - 1, k]
                    )

    @inline
    def lap(inp, i, j, k):  # type: ignore[no-untyped-def]
        return 4.0 * inp[i, j, k] - (
            inp[i - 1, j, k] + inp[i + 1, j, k] + inp[i, j - 1, k] + inp[i, j + 1, k]
        )

    @inline
    def flx(inp, i, j, k):  # type: ignore[no-untyped-def]
        value = lap(inp, i + 1, j, k) - lap(inp, i, j, k)
        return 0.0 if value * (inp[i + 1, j, k] - inp[i, j, k]) > 0.0 else value

    @inline
    def fly(inp, i, j, k):  # type: ignore[no-untyped-def]
        value = lap(inp, i, j + 1, k) - lap(inp, i, j, k)
        return 0.0 if value * (inp[i, j + 1, k] - inp[i, j, k]) > 0.0 else value

    @jit
    def hdiff(inp, coeff, out):  # type: ignore[no-untyped-def]
        ni, nj, nk = inp.shape
        for i in numba.prange(2, ni - 2):
            for j in range(2, nj - 2):
                for k in range(nk):
                    out[i, j, k] = inp[i, j, k] - coeff * (
                        flx(inp, i, j, k) - flx(inp, i - 1, j, k)
                        + fly(inp, i, j, k) - fly(inp, i, j - 1, k)
                    )

    return {"laplacian": laplacian, "hdiff": hdiff}
