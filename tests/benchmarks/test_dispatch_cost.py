"""``python -m benchmarks.dispatch_cost``: the dispatcher's own cost of a repeat call."""

from __future__ import annotations

import os

import pytest

from benchmarks import dispatch_cost

EXAMPLE = "examples.numpy_source_backend:numpy_source"


@pytest.fixture
def from_the_repository(monkeypatch):
    """The example backend is found as ``module:attribute`` from the repository's root."""
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def test_each_backend_gets_positional_keyword_and_direct_figures(from_the_repository):
    found = dispatch_cost.measure(["c_cpu", EXAMPLE], repeat=1)

    assert list(found) == ["c_cpu", EXAMPLE]
    for figures in found.values():
        assert all(figures[kind] > 0 for kind in ("positional", "keyword", "direct"))
        assert figures["keyword_dispatch"] == figures["keyword"] - figures["direct"]


def test_the_report_names_each_backend(from_the_repository, capsys):
    dispatch_cost.main(["--backends", EXAMPLE, "--repeat", "1"])

    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{EXAMPLE}: dispatcher ") and "keyword" in line
