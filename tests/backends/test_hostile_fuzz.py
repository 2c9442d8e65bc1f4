"""A fixed-size sample of the hostile-argument fuzz (``python -m benchmarks.hostile``).

Hypothesis draws the cases (through ``st.randoms``, so a failure shrinks and replays); each
backend runs them in a subprocess of its own, so a crash is a failure of this test, not the
end of the run. No backend may crash or compute a wrong result, and every backend must refuse
exactly what embedded_numpy refuses.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.hostile import recipe, run_in_subprocess

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BACKENDS = ["c_cpu", pytest.param("dace_cpu", marks=pytest.mark.requires_dace),
            "numpy_source_backend:numpy_source"]


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", f"{EXAMPLES}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rng=st.randoms(use_true_random=False))
def test_hostile_arguments_are_refused_or_computed_right_like_embedded_numpy(backend, rng):
    cases = [recipe(rng) for _ in range(60)]
    reference = run_in_subprocess("embedded_numpy", cases)
    outcomes = run_in_subprocess(backend, cases)
    bad = [(case, outcome) for case, outcome in zip(cases, outcomes, strict=True)
           if outcome[0] in {"crashed", "wrong"}]
    assert not bad, bad[:3]
    differ = [(case, got, want) for case, got, want in zip(cases, outcomes, reference, strict=True)
              if got[0] != want[0]]
    assert not differ, differ[:3]
    assert sum(o[0] == "correct" for o in outcomes) > 5  # the sample is not all refusals
