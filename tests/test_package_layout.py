"""The backends' packages keep their shape: no backend imports another backend's modules, and
no import circle runs through ``backends`` (``tools/import_graph.py``; ADR 0019).

A backend (``c``, ``cuda``, ``dace``, ``jax``, ``embedded``) is its steps; what several of them
need lives in a shared package (``clike``, ``arrayapi``) or module that any backend may import.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _import_graph(src: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "import_graph.py"), str(src)],
        capture_output=True, text=True, check=False,
    )


def test_no_backend_imports_another_backends_modules_and_no_import_circles() -> None:
    run = _import_graph(ROOT / "src")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "import circles: 0" in run.stdout
    assert "a backend importing another backend's modules: 0" in run.stdout


def test_the_layout_check_catches_a_backend_importing_another(tmp_path: Path) -> None:
    for package in ("backends", "backends/c", "backends/cuda"):
        (tmp_path / package).mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "backends/c/emit.py").write_text("from backends.cuda import kernels\n")
    (tmp_path / "backends/cuda/kernels.py").write_text("from backends.c import emit\n")
    run = _import_graph(tmp_path)
    assert run.returncode == 1
    assert "backends.c.emit -> backends.cuda.kernels" in run.stdout
    assert "import circles: 1" in run.stdout
