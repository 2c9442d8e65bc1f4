"""The GPU rows: the GPU backends beside CuPy slicing and the device's copy bandwidth.

``python -m benchmarks.gpu [--output DIR] [--repeat N] [--quick]`` runs laplacian, hdiff and
the vertical solvers (tridiagonal, vertical_advection) on ``large`` (512x512x80, float64:
bandwidth) and ``small`` (16x16x8: the cost of a repeat call) grids, on every GPU backend
available (``cuda_gpu``, its ``columns`` variant and its kernels before 32-bit indices and
covering grids, ``dace_gpu``, ``embedded_cupy``; the solvers also on arrays laid out K
outermost) and on the workload's own slicing kernel in CuPy. Each runner is verified
against NumPy before it is timed. Large rows are timed on the device (CUDA events around a
batch of calls) and given as a fraction of the device copy bandwidth (a CuPy copy of arrays
of the same size, timed the same way); small rows are timed on the host, a batch of calls
with one synchronization at the end, which is what a repeat call costs a caller. Writes
``gpu-results.json`` into ``--output``; on a machine without a GPU it says so, writes a file
saying the rows were skipped, and exits 0.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs
import numpy as np

import backends
from backends import CompiledBackend
from benchmarks.workloads import WORKLOADS, Workload

__all__ = ["GPU_SIZES", "GPU_WORKLOADS", "GpuRow", "find_gpu", "main", "run"]

GPU_SIZES: Mapping[str, tuple[int, int, int]] = MappingProxyType(
    {"large": (512, 512, 80), "small": (16, 16, 8)}
)
GPU_WORKLOADS = ("laplacian", "hdiff", "tridiagonal", "vertical_advection")
#: The vertical solvers: their column kernels also run on arrays laid out K outermost.
VERTICAL_WORKLOADS = frozenset({"tridiagonal", "vertical_advection"})
#: The issues' goals: a fraction of the device copy bandwidth on large grids (horizontal
#: stencils, vertical solvers), the solvers' speed-up over CuPy slicing, and the time of a
#: repeat call on the small one.
BANDWIDTH_GOAL = 0.8
VERTICAL_BANDWIDTH_GOAL = 0.5
VERTICAL_SPEEDUP_GOAL = 10.0
REPEAT_CALL_GOAL_SECONDS = 10e-6
#: The runner of a layout other than the allocator's: `` [K outer]``.
K_OUTER = " [K outer]"

Runner = Callable[[], Any]


@attrs.frozen
class GpuRow:
    """One measurement: ``runner`` on ``workload`` at ``size``.

    Attributes:
        seconds: median seconds per call (device time on large grids, host time on small).
        fraction_of_copy: bytes per call over ``seconds``, as a fraction of the device copy
            bandwidth (large grids only).
        status: ``ok``, ``failed`` (the message says why) or ``skipped``.
    """

    workload: str
    size: str
    runner: str
    status: str
    seconds: float | None = None
    bytes_per_call: int = 0
    fraction_of_copy: float | None = None
    message: str = ""


def find_gpu() -> tuple[Any, str]:
    """CuPy, when it sees a CUDA device, and a line describing it; ``(None, why not)``
    otherwise."""
    try:
        cupy = importlib.import_module("cupy")
    except ImportError as error:
        return None, f"CuPy is not installed ({error})"
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as error:  # CuPy's CUDA errors: no driver, no device
        return None, f"CuPy finds no CUDA device ({type(error).__name__}: {error})"
    if count == 0:
        return None, "CuPy finds no CUDA device"
    properties = cupy.cuda.runtime.getDeviceProperties(0)
    name = properties["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    driver = int(cupy.cuda.runtime.driverGetVersion())
    version = f"{driver // 1000}.{driver % 1000 // 10}"
    return cupy, f"{name}, driver CUDA {version}, CuPy {cupy.__version__}"


def _device_seconds(cupy: Any, call: Runner, repeat: int) -> float:
    """Median device seconds per call over ``repeat`` batches of calls between CUDA events."""
    call()
    cupy.cuda.Device().synchronize()
    batch = 10
    samples = []
    for _ in range(max(repeat, 1)):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(batch):
            call()
        stop.record()
        stop.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3 / batch)
    return float(statistics.median(samples))


def _host_seconds(cupy: Any, call: Runner, repeat: int) -> float:
    """Median host seconds per call over ``repeat`` batches of 100 calls (one
    synchronization after each batch)."""
    call()
    cupy.cuda.Device().synchronize()
    samples = []
    for _ in range(max(repeat, 1)):
        start = time.perf_counter()
        for _ in range(100):
            call()
        cupy.cuda.Device().synchronize()
        samples.append((time.perf_counter() - start) / 100)
    return float(statistics.median(samples))


def copy_bandwidth(cupy: Any, nbytes: int, repeat: int) -> float:
    """The device copy bandwidth (bytes read plus written per second) on arrays of
    ``nbytes`` each."""
    source = cupy.ones(nbytes // 8, dtype=cupy.float64)
    target = cupy.empty_like(source)

    def copy() -> None:
        cupy.copyto(target, source)

    seconds = _device_seconds(cupy, copy, repeat)
    if not bool(cupy.array_equal(source, target)):
        raise RuntimeError("the device copy kernel did not copy")
    return 2 * nbytes / seconds


def _backends() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in ("cuda_gpu", "dace_gpu", "embedded_cupy"):
        try:
            found[name] = getattr(backends, name)
        except AttributeError:
            continue
    cuda = found.get("cuda_gpu")
    if isinstance(cuda, CompiledBackend):
        columns = cuda.pipeline.evolve_step("translation", parallelization="columns")
        found["cuda_gpu[columns]"] = attrs.evolve(
            cuda, name="cuda_gpu_columns", pipeline=columns
        )
        # The kernels as they were before 32-bit indices and covering grids: their A/B.
        wide = cuda.pipeline.evolve_step(
            "translation", narrow_indices=False, covering_grids=False
        )
        found["cuda_gpu[64-bit, strided]"] = attrs.evolve(
            cuda, name="cuda_gpu_wide", pipeline=wide
        )
    return found


def k_outer(cupy: Any, array: Any) -> Any:
    """``array`` (I, J, K) copied into memory laid out K, I, J: a column solver's threads,
    one per (I, J), then read neighbouring addresses at each level."""
    return cupy.ascontiguousarray(array.transpose(2, 0, 1)).transpose(1, 2, 0)


def _runners(
    cupy: Any, workload: Workload, host: dict[str, Any]
) -> dict[str, tuple[Runner, Any] | str]:
    """Per runner name: (the call, its output array), or why it cannot run."""
    runners: dict[str, tuple[Runner, Any] | str] = {}
    arguments = {k: cupy.asarray(v) if isinstance(v, np.ndarray) else v for k, v in host.items()}
    inputs = {name: arguments[name] for name in (*workload.inputs, *workload.scalars)}
    sliced = cupy.asarray(host["out"])

    def slicing() -> None:
        sliced[workload.domain] = workload.kernel(cupy, **inputs)

    runners["cupy slicing"] = (slicing, sliced)
    layouts: dict[str, Callable[[Any], Any]] = {"": cupy.asarray}
    if workload.name in VERTICAL_WORKLOADS:
        layouts[K_OUTER] = lambda array: k_outer(cupy, cupy.asarray(array))
    for name, backend in _backends().items():
        for layout, place in layouts.items():
            runners[name + layout] = _runner(workload, backend, host, place)
    return runners


def _runner(
    workload: Workload, backend: Any, host: dict[str, Any], place: Callable[[Any], Any]
) -> tuple[Runner, Any] | str:
    """The call of ``workload`` on ``backend`` with arrays placed by ``place``, and its
    output; or why it cannot run."""
    try:
        program = workload.program.with_backend(backend)
        args = {k: place(v) if isinstance(v, np.ndarray) else v for k, v in host.items()}
        ordered = tuple(args[p] for p in workload.parameters)
        if isinstance(backend, CompiledBackend):
            program.compile(*ordered)
        return _caller(program, ordered), args["out"]
    except Exception as error:  # a backend that cannot build this workload is a row
        return f"{type(error).__name__}: {error}"


def _caller(program: Any, arguments: tuple[Any, ...]) -> Runner:
    def call() -> Any:
        return program(*arguments)

    return call


def run(repeat: int = 20, sizes: tuple[str, ...] = tuple(GPU_SIZES)) -> dict[str, Any]:
    """Measure the GPU rows; the report (``gpu-results.json``'s content).

    Without a GPU the report says why and holds no rows.
    """
    cupy, device = find_gpu()
    report: dict[str, Any] = {"device": device, "rows": [], "goals": []}
    if cupy is None:
        report["skipped"] = f"no GPU rows: {device}"
        return report
    rows: list[GpuRow] = []
    large = GPU_SIZES["large"]
    copy = copy_bandwidth(cupy, int(np.prod(large)) * 8, repeat)
    report["copy_bandwidth_bytes_per_second"] = copy
    for workload_name in GPU_WORKLOADS:
        workload = WORKLOADS[workload_name]
        for size in sizes:
            shape = GPU_SIZES[size]
            host = workload.host_arguments(shape)
            expected = workload.host_arguments(shape)
            workload.reference(expected)
            nbytes = workload.bytes_per_call(shape)
            for name, runner in _runners(cupy, workload, host).items():
                if isinstance(runner, str):
                    rows.append(GpuRow(workload_name, size, name, "failed", message=runner))
                    continue
                call, out = runner
                rows.append(_measure(cupy, workload_name, size, name, call, out,
                                     expected["out"], nbytes, copy, repeat))
    report["rows"] = [attrs.asdict(row) for row in rows]
    report["goals"] = _goals(rows)
    return report


def _measure(
    cupy: Any, workload: str, size: str, name: str, call: Runner, out: Any,
    expected: Any, nbytes: int, copy: float, repeat: int,
) -> GpuRow:
    row = GpuRow(workload, size, name, "ok", bytes_per_call=nbytes)
    try:
        call()
        np.testing.assert_allclose(out.get(), expected, rtol=1e-12, atol=1e-12)
        if size == "small":
            return attrs.evolve(row, seconds=_host_seconds(cupy, call, repeat))
        seconds = _device_seconds(cupy, call, repeat)
        return attrs.evolve(row, seconds=seconds, fraction_of_copy=nbytes / seconds / copy)
    except Exception as error:  # a failing runner is a reported row
        return attrs.evolve(row, status="failed", message=f"{type(error).__name__}: {error}")


def _goals(rows: list[GpuRow]) -> list[str]:
    lines = _vertical_goals(rows)
    for row in rows:
        if row.workload in VERTICAL_WORKLOADS:
            continue
        if row.runner != "cuda_gpu" or row.status != "ok" or row.seconds is None:
            continue
        if row.size == "large" and row.fraction_of_copy is not None:
            met = row.fraction_of_copy >= BANDWIDTH_GOAL
            lines.append(f"{row.workload} large on cuda_gpu: {row.fraction_of_copy:.2f} of the "
                         f"device copy bandwidth (goal {BANDWIDTH_GOAL}): "
                         f"{'met' if met else 'missed'}")
        if row.size == "small":
            met = row.seconds <= REPEAT_CALL_GOAL_SECONDS
            lines.append(f"{row.workload} small on cuda_gpu: a repeat call takes "
                         f"{row.seconds * 1e6:.1f} us (goal {REPEAT_CALL_GOAL_SECONDS * 1e6:.0f} "
                         f"us): {'met' if met else 'missed'}")
    return lines


def _vertical_goals(rows: list[GpuRow]) -> list[str]:
    """Per vertical solver and backend: its best layout's fraction of the copy and its
    speed-up over CuPy slicing, on the large grid."""
    lines = []
    large = [r for r in rows if r.size == "large" and r.status == "ok" and r.seconds]
    for workload in sorted(VERTICAL_WORKLOADS):
        mine = [r for r in large if r.workload == workload]
        slicing = next((r.seconds for r in mine if r.runner == "cupy slicing"), None)
        for backend in ("cuda_gpu", "dace_gpu"):
            runs = [r for r in mine if r.runner in (backend, backend + K_OUTER)]
            if not runs or slicing is None:
                continue
            best = min(runs, key=lambda r: r.seconds or 0.0)
            fraction = best.fraction_of_copy or 0.0
            speedup = slicing / (best.seconds or 1.0)
            met = fraction >= VERTICAL_BANDWIDTH_GOAL and speedup >= VERTICAL_SPEEDUP_GOAL
            lines.append(
                f"{workload} large on {best.runner}: {fraction:.2f} of the device copy (goal "
                f"{VERTICAL_BANDWIDTH_GOAL}), {speedup:.1f}x CuPy slicing (goal "
                f"{VERTICAL_SPEEDUP_GOAL:.0f}x): {'met' if met else 'missed'}"
            )
    return lines


def _table(report: dict[str, Any]) -> str:
    lines = [f"device: {report['device']}"]
    if "skipped" in report:
        return "\n".join([*lines, report["skipped"]])
    lines.append(f"device copy: {report['copy_bandwidth_bytes_per_second'] / 1e9:.1f} GB/s")
    for row in report["rows"]:
        seconds = row["seconds"]
        timing = f"{seconds * 1e6:10.1f} us" if seconds is not None else " " * 13
        fraction = row["fraction_of_copy"]
        share = f"{fraction:5.2f} of copy" if fraction is not None else ""
        lines.append(f"{row['workload']:18} {row['size']:6} {row['runner']:36} {row['status']:7} "
                     f"{timing} {share} {row['message'][:120]}")
    return "\n".join([*lines, *report["goals"]])


def main(argv: list[str] | None = None) -> int:
    """The command line; exit status 1 when a row failed, else 0 (also without a GPU)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__)
    parser.add_argument("--output", type=Path, default=Path("bench-results"))
    parser.add_argument("--repeat", type=int, default=20, help="timed batches per row")
    parser.add_argument("--quick", action="store_true", help="3 batches per row")
    options = parser.parse_args(argv)
    report = run(repeat=3 if options.quick else options.repeat)
    options.output.mkdir(parents=True, exist_ok=True)
    (options.output / "gpu-results.json").write_text(json.dumps(report, indent=2))
    sys.stdout.write(_table(report) + "\n")
    return 1 if any(row["status"] == "failed" for row in report["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
