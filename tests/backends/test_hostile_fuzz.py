"""A fixed-size sample of the hostile-argument fuzz (``python -m benchmarks.hostile``).

Hypothesis draws the cases (through ``st.randoms``, so a failure shrinks and replays); each
backend runs them in a subprocess of its own, so a crash is a failure of this test, not the
end of the run. No backend may crash or compute a wrong result, and every backend must refuse
exactly what embedded_numpy refuses. The check is the shipped conformance suite's
(``backends.conformance.hostile``), which runs it on fixed seeds.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.conformance.hostile import check_hostile_arguments

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BACKENDS = ["c_cpu", pytest.param("dace_cpu", marks=pytest.mark.requires_dace),
            "numpy_source_backend:numpy_source", "cuda_emulated"]


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", f"{EXAMPLES}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rng=st.randoms(use_true_random=False))
def test_hostile_arguments_are_refused_or_computed_right_like_embedded_numpy(backend, rng):
    check_hostile_arguments(backend, rng, cases=60)
