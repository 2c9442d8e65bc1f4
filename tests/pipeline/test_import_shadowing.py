"""A file of the user's named like one of our packages gets an error that names it.

Real processes: the file must sit in the working directory of a fresh interpreter, first on
``sys.path``, as it does for a user.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pipeline

_SOURCE_ROOT = str(Path(pipeline.__file__).parents[1])


def _import_in(directory: Path, statement: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", statement],
        cwd=directory,
        env={**os.environ, "PYTHONPATH": _SOURCE_ROOT},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("filename", "statement"),
    [
        ("pipeline.py", "import backends"),
        ("allocators.py", "import backends"),
        ("allocators.py", "import pipeline"),
    ],
)
def test_a_file_that_hides_a_package_is_named_with_the_fix(tmp_path, filename, statement):
    (tmp_path / filename).write_text("steps = ['load', 'clean']\n")
    result = _import_in(tmp_path, statement)
    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    # Before: "No module named 'pipeline.dsl'; 'pipeline' is not a package".
    assert last_line.startswith(f"ImportError: {tmp_path / filename} hides stencilforge's")
    assert "Rename it" in last_line


def test_without_such_a_file_the_packages_import(tmp_path):
    result = _import_in(tmp_path, "import backends, pipeline.dsl")
    assert result.returncode == 0, result.stderr
