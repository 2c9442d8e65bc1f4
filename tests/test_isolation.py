"""The test suite never writes to the user's build cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_run_of_the_dsl_tests_leaves_the_users_cache_alone(tmp_path):
    # The DSL's conftest makes backends (c_cpu, the example backend) as it is imported.
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("STENCILFORGE_CACHE_DIR", "STENCILFORGE_KEEP_TEST_CACHE")
    }
    environment["XDG_CACHE_HOME"] = str(tmp_path / "user-cache")
    command = [
        sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
        "tests/dsl/test_literal_promotion.py", "-k", "c_cpu and minimum",
    ]
    run = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True,
                         check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout
    assert not (tmp_path / "user-cache" / "stencilforge").exists()
