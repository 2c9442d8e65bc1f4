"""The harness's GPU rows (``python -m benchmarks.gpu``) and the prepared device check."""

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks import gpu

ROOT = Path(__file__).resolve().parents[2]


def test_without_a_gpu_the_rows_are_skipped_saying_why(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu, "find_gpu", lambda: (None, "CuPy finds no CUDA device"))
    assert gpu.main(["--output", str(tmp_path), "--quick"]) == 0
    report = json.loads((tmp_path / "gpu-results.json").read_text())
    assert report["rows"] == []
    assert report["skipped"] == "no GPU rows: CuPy finds no CUDA device"


def test_the_rows_are_laplacian_and_hdiff_on_the_grids_of_the_issue():
    assert gpu.GPU_WORKLOADS == ("laplacian", "hdiff")
    assert dict(gpu.GPU_SIZES) == {"large": (512, 512, 80), "small": (16, 16, 8)}


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
