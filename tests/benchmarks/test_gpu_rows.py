"""The harness's GPU rows (``python -m benchmarks.gpu``) and the prepared device check."""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from benchmarks import gpu

ROOT = Path(__file__).resolve().parents[2]


def test_without_a_gpu_the_rows_are_skipped_saying_why(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu, "find_gpu", lambda: (None, "CuPy finds no CUDA device"))
    assert gpu.main(["--output", str(tmp_path), "--quick"]) == 0
    report = json.loads((tmp_path / "gpu-results.json").read_text())
    assert report["rows"] == []
    assert report["skipped"] == "no GPU rows: CuPy finds no CUDA device"


def test_the_rows_are_the_four_workloads_on_the_grids_of_the_issue():
    assert gpu.GPU_WORKLOADS == ("laplacian", "hdiff", "tridiagonal", "vertical_advection")
    assert dict(gpu.GPU_SIZES) == {"large": (512, 512, 80), "small": (16, 16, 8)}


def test_the_solvers_judged_by_their_best_layout_against_copy_and_cupy_slicing():
    rows = [
        gpu.GpuRow("tridiagonal", "large", "cupy slicing", "ok", 40e-3, 10, 0.01),
        gpu.GpuRow("tridiagonal", "large", "cuda_gpu", "ok", 8e-3, 10, 0.1),
        gpu.GpuRow("tridiagonal", "large", "cuda_gpu [K outer]", "ok", 2e-3, 10, 0.6),
        gpu.GpuRow("tridiagonal", "large", "dace_gpu", "ok", 10e-3, 10, 0.08),
        gpu.GpuRow("tridiagonal", "small", "cuda_gpu", "ok", 9e-6, 10),
    ]
    assert gpu._goals(rows) == [
        "tridiagonal large on cuda_gpu [K outer]: 0.60 of the device copy (goal 0.5), 20.0x "
        "CuPy slicing (goal 10x): met",
        "tridiagonal large on dace_gpu: 0.08 of the device copy (goal 0.5), 4.0x CuPy slicing "
        "(goal 10x): missed",
    ]


@pytest.mark.parametrize("workload", sorted(gpu.VERTICAL_WORKLOADS))
def test_the_k_outer_layout_puts_neighbouring_columns_side_by_side_and_solves_right(workload):
    """What the GPU rows run on that layout, checked here on cuda_gpu's emulated kernels."""
    import backends  # noqa: PLC0415

    chosen = gpu.WORKLOADS[workload]
    host = chosen.host_arguments((6, 5, 7))
    expected = chosen.host_arguments((6, 5, 7))
    chosen.reference(expected)
    args = {k: gpu.k_outer(np, v) if isinstance(v, np.ndarray) else v for k, v in host.items()}
    assert args["out"].strides == (5 * 8, 8, 6 * 5 * 8)
    program = chosen.program.with_backend(backends.cuda_emulated)
    program(*(args[p] for p in chosen.parameters))
    np.testing.assert_allclose(args["out"], expected["out"], rtol=1e-12, atol=1e-12)


def test_the_goals_are_judged_on_cuda_gpu_rows_only():
    rows = [
        gpu.GpuRow("laplacian", "large", "cuda_gpu", "ok", 1e-3, 10, 0.85),
        gpu.GpuRow("hdiff", "large", "cuda_gpu", "ok", 1e-3, 10, 0.5),
        gpu.GpuRow("laplacian", "small", "cuda_gpu", "ok", 12e-6, 10),
        gpu.GpuRow("laplacian", "large", "cupy slicing", "ok", 1e-3, 10, 0.3),
    ]
    assert gpu._goals(rows) == [
        "laplacian large on cuda_gpu: 0.85 of the device copy bandwidth (goal 0.8): met",
        "hdiff large on cuda_gpu: 0.50 of the device copy bandwidth (goal 0.8): missed",
        "laplacian small on cuda_gpu: a repeat call takes 12.0 us (goal 10 us): missed",
    ]


def test_the_device_check_script_is_valid_bash():
    script = ROOT / "benchmarks" / "gpu_check.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)


@pytest.mark.requires_cupy
@pytest.mark.requires_gpu
def test_on_a_gpu_every_runner_is_verified_and_timed():
    report = gpu.run(repeat=1, sizes=("small",))
    runners = {row["runner"]: row for row in report["rows"] if row["workload"] == "laplacian"}
    assert runners["cupy slicing"]["status"] == "ok"
    assert runners["cuda_gpu"]["status"] == "ok", runners["cuda_gpu"]["message"]
    assert runners["cuda_gpu"]["seconds"] > 0
