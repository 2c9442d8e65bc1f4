"""A backend in its own package, outside this repository, proves conformance from an installed
stencilforge: ``stencilforge conformance numpy_source_backend:numpy_source``.

The guide's example backend (examples/pyproject.toml) is copied to a temporary directory,
installed there with pip (offline, no dependencies, nothing added to the environment), and
the shipped suite runs on it in a subprocess whose working directory is that temporary one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import backends
import benchmarks

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: A third party's mistake: the example backend with every ``+`` translated as ``-``.
FLIPPED = """
import attrs
from numpy_source_backend import NumPyTranslation, numpy_source


@attrs.frozen
class FlippedTranslation(NumPyTranslation):
    def __call__(self, program, /):
        source = super().__call__(program)
        return attrs.evolve(source, text=source.text.replace(" + ", " - "))


flipped = attrs.evolve(
    numpy_source, name="numpy_source_flipped",
    pipeline=numpy_source.pipeline.replace_step("translation", FlippedTranslation()),
)
"""


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """A directory outside the repository with the example backend installed in ``site``."""
    root = tmp_path_factory.mktemp("third_party")
    project = root / "numpy_source_backend"
    project.mkdir()
    for name in ("pyproject.toml", "numpy_source_backend.py"):
        shutil.copy(EXAMPLES / name, project / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(root / "site"), str(project)],
        check=True, capture_output=True, text=True,
    )
    (root / "flipped_backend.py").write_text(textwrap.dedent(FLIPPED))
    return root


def _conformance(outside: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    # stencilforge as this interpreter finds it installed; the example only from ``site``.
    installed = {str(Path(package.__file__).resolve().parents[1])
                 for package in (backends, benchmarks)}
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(outside / "site"),
                                                                *sorted(installed)])}
    return subprocess.run(
        [sys.executable, "-m", "backends.command_line", "conformance", *arguments],
        cwd=outside, env=environment, capture_output=True, text=True, check=False, timeout=900,
    )


def _summary_row(output: str, feature: str) -> tuple[int, int, str]:
    found = re.search(rf"^{re.escape(feature)} +(\d+) +(\d+) +\d+ +(ok|FAILED)$", output, re.M)
    assert found, f"no summary row for {feature!r} in:\n{output}"
    return int(found.group(1)), int(found.group(2)), found.group(3)


def test_the_installed_example_backend_passes_the_shipped_suite_from_outside(outside):
    run = _conformance(outside, "numpy_source_backend:numpy_source")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "stencilforge conformance by feature" in run.stdout
    for feature in ("reference workloads", "scans", "hostile arguments", "argument checks"):
        passed, failed, verdict = _summary_row(run.stdout, feature)
        assert passed > 0 and failed == 0 and verdict == "ok", feature


def test_a_backend_found_by_its_entry_point_name_runs_the_suite(outside):
    run = _conformance(outside, "numpy_source", "-k", "laplacian or compare_less")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert _summary_row(run.stdout, "reference workloads") == (1, 0, "ok")


def test_a_wrong_backend_fails_and_the_summary_names_its_feature(outside):
    run = _conformance(outside, "flipped_backend:flipped", "-k",
                       "full_domain_add_sub_mul or compare_less")
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    assert _summary_row(run.stdout, "float arithmetic") == (0, 1, "FAILED")
    assert _summary_row(run.stdout, "comparisons") == (2, 0, "ok")


def test_a_reference_that_finds_no_backend_is_a_usage_error_naming_it(outside):
    run = _conformance(outside, "no_such_module:backend")
    assert run.returncode == 4
    assert "no_such_module:backend" in run.stderr
    assert "No module named 'no_such_module'" in run.stderr
