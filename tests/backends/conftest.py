"""Fixtures the backends' process tests share: a cache directory and a counting compiler."""

from __future__ import annotations

from pathlib import Path

import pytest
from c_programs.support import CompilerWrapper


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A cache directory of the test's own (not yet created)."""
    return tmp_path / "cache"


@pytest.fixture
def compiler(tmp_path: Path) -> CompilerWrapper:
    """The system compiler behind a wrapper that logs each invocation (see ``CompilerWrapper``)."""
    return CompilerWrapper(tmp_path / "cc")
