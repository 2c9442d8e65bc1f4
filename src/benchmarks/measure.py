"""Measure one workload at one size: on the NumPy reference, or on one stencilforge backend.

Contract for a backend: allocate every field with ``allocator=backend``, fill it with the
workload's deterministic data, compile (compiled backends, timed on its own), run once and check
the result against NumPy (``assert_allclose``, rtol 1e-12, atol 1e-12 for the values near zero);
only a verified backend is timed. Any exception becomes a ``FAILED`` row with the message: one
broken backend never stops the run. Given a ``CopyKernel``, every row is timed next to it
(``time_row``), and the row's copy fractions are against the copy timed in the same moments.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from backends import CompiledBackend, EmbeddedBackend
from benchmarks.arrays import output_of, synchronize, to_backend, to_numpy
from benchmarks.machine import CopyKernel
from benchmarks.results import BACKEND, FAILED, OK, REFERENCE, Row
from benchmarks.timing import time_calls
from benchmarks.workloads import SIZES, HostArguments, Workload

__all__ = [
    "backend_arguments",
    "expected_output",
    "is_compiled",
    "measure_backend",
    "measure_reference",
    "time_row",
    "verify",
]

Backend = CompiledBackend | EmbeddedBackend

RTOL = 1e-12
ATOL = 1e-12


def is_compiled(backend: Backend) -> bool:
    """Whether ``backend`` compiles programs (so ``prog.compile`` and stage events apply)."""
    return bool(backend.pipeline.compiles)


def expected_output(workload: Workload, shape: tuple[int, int, int]) -> np.ndarray:
    """The NumPy reference result for the workload's deterministic data."""
    arguments = workload.host_arguments(shape)
    workload.reference(arguments)
    out = arguments["out"]
    assert isinstance(out, np.ndarray)
    return out


def verify(actual: Any, expected: np.ndarray) -> str | None:
    """``None`` when ``actual`` matches ``expected``, else the mismatch report."""
    try:
        np.testing.assert_allclose(to_numpy(actual), expected, rtol=RTOL, atol=ATOL)
    except AssertionError as error:
        return f"result differs from NumPy: {str(error).strip()}"
    return None


def _blank_row(workload: Workload, size: str, backend: str, kind: str) -> Row:
    shape = SIZES[size]
    return Row(workload.name, size, shape, backend, kind, OK, workload.bytes_per_call(shape))


def time_row(
    row: Row,
    call: Callable[[], object],
    repeat: int,
    synchronize: Callable[[object], None] = lambda result: None,
    copy: CopyKernel | None = None,
) -> Row:
    """``row`` with ``call`` timed (``time_calls``), next to ``copy`` when one is given."""
    timing = time_calls(call, repeat, synchronize, copy.run if copy is not None else None)
    return row.timed(timing, copy.bytes_moved if copy is not None else None)


def measure_reference(
    workload: Workload, size: str, repeat: int, copy: CopyKernel | None = None
) -> Row:
    """Time the workload's NumPy-slicing reference on plain NumPy arrays."""
    arguments = workload.host_arguments(SIZES[size])
    row = _blank_row(workload, size, "numpy", REFERENCE)
    return time_row(row, lambda: workload.reference(arguments), repeat, copy=copy)


def backend_arguments(workload: Workload, host: HostArguments, backend: object) -> list[Any]:
    """The program's arguments in call order: fields allocated with ``allocator=backend``."""
    return [
        to_backend(value, backend) if isinstance(value, np.ndarray) else value
        for value in (host[name] for name in workload.parameters)
    ]


def _no_wait(result: object) -> None:
    return None


def _seconds(call: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def measure_backend(
    workload: Workload,
    size: str,
    name: str,
    backend: Any,
    repeat: int,
    copy: CopyKernel | None = None,
) -> Row:
    """Verify, then time, ``workload`` on ``backend`` (see the module docstring)."""
    row = _blank_row(workload, size, name, BACKEND)
    try:
        return _measure_backend(workload, size, backend, repeat, row, copy)
    except Exception as error:  # a failing backend is a reported row
        return _failed(row, f"{type(error).__name__}: {error}")


def _failed(row: Row, message: str) -> Row:
    return attrs.evolve(row, status=FAILED, message=message)


def _measure_backend(
    workload: Workload, size: str, backend: Any, repeat: int, row: Row, copy: CopyKernel | None
) -> Row:
    shape = SIZES[size]
    program = workload.program.with_backend(backend)
    arguments = backend_arguments(workload, workload.host_arguments(shape), backend)
    out = arguments[-1]
    executable: Callable[..., object] | None = None
    if is_compiled(backend):
        start = time.perf_counter()
        compiled = program.compile(*arguments)
        # The executable as the dispatcher enters it: its self-checking native entry, if any.
        executable = compiled.specialization.fast_entry or compiled.executable
        row = attrs.evolve(row, compile_seconds=time.perf_counter() - start)
    first_seconds, result = _seconds(lambda: program(*arguments))
    row = attrs.evolve(row, first_call_seconds=first_seconds)
    mismatch = verify(output_of(result, out), expected_output(workload, shape))
    if mismatch is not None:
        return _failed(row, mismatch)

    def wait(result: object) -> None:
        synchronize(output_of(result, out))

    if isinstance(output_of(result, out), np.ndarray):
        # NumPy arrays are written when the call returns: nothing to wait for, and the check
        # itself would cost a microsecond-scale call a good part of its time.
        wait = _no_wait

    row = time_row(row, lambda: program(*arguments), repeat, wait, copy)
    if executable is not None and size == "small":
        direct = time_calls(lambda: executable(*arguments), repeat, wait)
        row = attrs.evolve(row, direct_call_seconds=direct.median)
    return row
