"""Measure one workload at one size: on the NumPy reference, or on one stencilforge backend.

Contract for a backend: allocate every field with ``allocator=backend``, fill it with the
workload's deterministic data, compile (compiled backends, timed on its own), run once and check
the result against NumPy (``assert_allclose``, rtol 1e-12, atol 1e-12 for the values near zero);
only a verified backend is timed. Any exception becomes a ``FAILED`` row with the message: one
broken backend never stops the run. Given a ``CopyKernel``, every sample is timed right after
one copy, and the row's copy fractions are against the copy timed in the same moments.

The harness first *prepares* every row of a workload and size (``prepare_reference``,
``prepare_backend``, ``benchmarks.peers.prepare_peer``: arguments, compile, first call,
verification), then times the verified ones together (``time_together``, in alternating
rounds), so that the ratios between them are measured in the same moments.
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
from benchmarks.roofline import domain_points
from benchmarks.timing import TimedCall, Timing, time_in_rounds
from benchmarks.workloads import SIZES, HostArguments, Workload

__all__ = [
    "Contender",
    "backend_arguments",
    "expected_output",
    "is_compiled",
    "measure_backend",
    "measure_reference",
    "placed_host_arguments",
    "prepare_backend",
    "prepare_reference",
    "time_together",
    "verify",
    "with_probe",
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


Shape = tuple[int, int, int]


def _blank_row(
    workload: Workload, size: str, backend: str, kind: str, shape: Shape | None = None
) -> Row:
    shape = shape or SIZES[size]
    return Row(workload.name, size, shape, backend, kind, OK, workload.bytes_per_call(shape))


@attrs.frozen
class Contender:
    """A verified row, ready to be timed: the row so far, the call that times it, for a
    compiled backend on the small grid its loaded executable called directly (``direct``,
    timed in the same rounds: ``direct_call_seconds``), and for a bandwidth row the same call
    on an in-cache grid as ``timed.probe`` (timed right after each sample, its time per call
    times ``compute_scale``: the compute bound; see ``with_probe``)."""

    row: Row
    timed: TimedCall
    direct: TimedCall | None = None
    compute_scale: float = 1.0


def with_probe(
    prepared: Contender | Row, probe: Contender | Row, workload: Workload
) -> Contender | Row:
    """``prepared`` with its compute probe: ``probe`` is the same call, prepared the same
    way on ``row.compute_shape``'s in-cache grid, and is timed right after each sample of
    the row, in the cache (``TimedCall.probe``). A final row stays as it is; a probe that
    failed leaves the row without a compute bound, and says why in its ``message``."""
    if not isinstance(prepared, Contender):
        return prepared
    if not isinstance(probe, Contender):
        reason = (probe.message or probe.status).splitlines()[0]
        return attrs.evolve(
            prepared,
            row=attrs.evolve(prepared.row, message=f"no compute bound: {reason}"),
        )
    scale = domain_points(workload, prepared.row.shape) / domain_points(workload, probe.row.shape)
    return attrs.evolve(
        prepared,
        row=attrs.evolve(prepared.row, compute_shape=probe.row.shape),
        timed=attrs.evolve(prepared.timed, probe=probe.timed),
        compute_scale=scale,
    )


def time_together(
    prepared: list[Contender | Row], repeat: int, copy: CopyKernel | None = None
) -> list[Row]:
    """The rows of ``prepared``, in order: each ``Contender`` timed (``repeat`` samples, all
    of them and their direct executable calls in alternating rounds, next to ``copy`` when
    given, each followed by its probe when it has one; a call that raises becomes a
    ``FAILED`` row); rows that are already final (failed, skipped) as they are."""
    contenders = [item for item in prepared if isinstance(item, Contender)]
    directs = [contender for contender in contenders if contender.direct is not None]
    timings = time_in_rounds(
        [contender.timed for contender in contenders]
        + [contender.direct for contender in directs if contender.direct is not None],
        repeat,
        copy.run if copy is not None else None,
    )
    direct_of = {
        id(contender): timing
        for contender, timing in zip(directs, timings[len(contenders) :], strict=True)
    }
    rows: dict[int, Row] = {}
    for contender, timing in zip(contenders, timings[: len(contenders)], strict=True):
        if not isinstance(timing, Timing):
            rows[id(contender)] = _failed(contender.row, f"{type(timing).__name__}: {timing}")
            continue
        row = contender.row.timed(timing, copy.bytes_moved if copy is not None else None)
        direct = direct_of.get(id(contender))
        if isinstance(direct, Timing):
            row = attrs.evolve(row, direct_call_seconds=direct.median)
        rows[id(contender)] = _with_compute(row, timing, contender.compute_scale, copy)
    return [rows[id(item)] if isinstance(item, Contender) else item for item in prepared]


def _with_compute(row: Row, timing: Timing, scale: float, copy: CopyKernel | None) -> Row:
    """``row`` with its probe's figures when it had one: the median probe call, the compute
    bound (that times ``scale``, the row's points over the probe's) and, timed beside the
    copy, each sample's ``(seconds, copy bound, compute bound)`` (``Row.roofline_samples``)."""
    if timing.probe is None:
        return row
    samples = tuple(
        (m.seconds, row.bytes_per_call * m.reference / copy.bytes_moved, m.probe * scale)
        for m in timing.moments
        if copy is not None and m.reference is not None and m.probe is not None
    )
    return attrs.evolve(
        row,
        compute_median=timing.probe.median,
        compute_bound=timing.probe.median * scale,
        roofline_samples=samples,
    )


def measure_reference(
    workload: Workload, size: str, repeat: int, copy: CopyKernel | None = None
) -> Row:
    """Time the workload's NumPy-slicing reference on plain NumPy arrays."""
    return time_together([prepare_reference(workload, size)], repeat, copy)[0]


def prepare_reference(
    workload: Workload, size: str, shape: Shape | None = None, room: Shape | None = None
) -> Contender:
    """The workload's NumPy-slicing reference on plain NumPy arrays, ready to be timed (on
    ``shape`` instead of the size's grid when given; its fields the leading rows of arrays of
    the grid ``room`` when given, see ``prepare_backend``)."""
    shape = shape or SIZES[size]
    row = _blank_row(workload, size, "numpy", REFERENCE, shape)
    arguments = placed_host_arguments(workload, shape, room)
    return Contender(row, TimedCall(lambda: workload.reference(arguments)))


def backend_arguments(workload: Workload, host: HostArguments, backend: object) -> list[Any]:
    """The program's arguments in call order: fields allocated with ``allocator=backend``."""
    return [
        to_backend(value, backend) if isinstance(value, np.ndarray) else value
        for value in (host[name] for name in workload.parameters)
    ]


def placed_host_arguments(workload: Workload, shape: Shape, room: Shape | None) -> HostArguments:
    """The workload's host arguments on ``shape``; with ``room`` (the grid of the row an
    in-cache probe belongs to), each field the leading rows of an array of that grid, so that
    the probe's arrays lie in memory as the row's (see ``prepare_backend``)."""
    arguments = workload.host_arguments(shape)
    if room is None or room == shape:
        return arguments
    return {
        name: _leading_rows(value, shape[0], room)
        for name, value in _padded(arguments, room).items()
    }


def _padded(host: HostArguments, room: Shape) -> HostArguments:
    """``host`` with each field copied into the leading rows (along the first axis) of a zero
    array of the grid ``room``."""
    padded = dict(host)
    for name, value in host.items():
        if isinstance(value, np.ndarray) and value.ndim == len(room):
            whole = np.zeros(room, value.dtype)
            whole[: value.shape[0]] = value
            padded[name] = whole
    return padded


def _leading_rows(value: Any, rows: int, room: Shape) -> Any:
    """A field of the grid ``room`` cut to its first ``rows`` rows (a view, so it keeps the
    placement in memory of the array it was allocated as); anything else as it is."""
    return value[:rows] if tuple(getattr(value, "shape", ())) == tuple(room) else value


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
    return time_together([prepare_backend(workload, size, name, backend)], repeat, copy)[0]


def prepare_backend(
    workload: Workload,
    size: str,
    name: str,
    backend: Any,
    shape: Shape | None = None,
    room: Shape | None = None,
) -> Contender | Row:
    """``workload`` on ``backend`` compiled, run once and verified: a ``Contender`` to time
    (with its direct executable call, for a compiled backend on the small grid), or the final
    ``FAILED`` row; on ``shape`` instead of the size's grid when given.

    ``room``: for an in-cache probe (``roofline.compute_shape``), the grid of its row. The
    probe's fields are then the leading rows of arrays allocated at that grid, so that they
    lie in memory as the row's do: a loop's speed in the cache depends on where its input and
    output lie relative to each other (c_cpu's hdiff ran 1.6x slower with the output one
    cache line after the input modulo 4 KiB than at the same offset, as the row's arrays)."""
    shape = shape or SIZES[size]
    row = _blank_row(workload, size, name, BACKEND, shape)
    try:
        return _prepare_backend(workload, size, shape, backend, row, room)
    except Exception as error:  # a failing backend is a reported row
        return _failed(row, f"{type(error).__name__}: {error}")


def _failed(row: Row, message: str) -> Row:
    return attrs.evolve(row, status=FAILED, message=message)


def _prepare_backend(
    workload: Workload, size: str, shape: Shape, backend: Any, row: Row, room: Shape | None
) -> Contender | Row:
    program = workload.program.with_backend(backend)
    if room is None or room == shape:
        arguments = backend_arguments(workload, workload.host_arguments(shape), backend)
    else:
        padded = _padded(workload.host_arguments(shape), room)
        arguments = [
            _leading_rows(value, shape[0], room)
            for value in backend_arguments(workload, padded, backend)
        ]
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

    direct = None
    if executable is not None and size == "small" and shape == SIZES[size]:
        direct = TimedCall(lambda: executable(*arguments), wait)
    return Contender(row, TimedCall(lambda: program(*arguments), wait), direct)
