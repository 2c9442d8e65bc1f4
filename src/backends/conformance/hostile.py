"""The hostile-argument check: a sample of ``python -m benchmarks.hostile`` on one backend.

Strided, reversed, transposed, broadcast, self-overlapping, byte-swapped, misaligned,
read-only, too small and aliased arguments of the laplacian: a backend may refuse a case or
compute it right, but it must never crash or compute it wrong, and it must refuse exactly what
``embedded_numpy`` refuses. Each backend runs its cases in a subprocess, so a crash is a
failed check, not the end of the run.
"""

from __future__ import annotations

import random

from benchmarks.hostile import recipe, run_in_subprocess

__all__ = ["check_hostile_arguments"]


def check_hostile_arguments(reference: str, rng: random.Random, cases: int = 60) -> None:
    """Run ``cases`` hostile cases drawn from ``rng`` on the backend ``reference`` names.

    Args:
        reference: the backend as another process finds it: a registered name, the name of an
            installed ``stencilforge.backends`` entry point, or ``module:attribute``.
        rng: draws the cases (seed it for a reproducible sample).
        cases: how many.

    Raises:
        AssertionError: a case crashed or computed a wrong result (the first three are shown),
            the backend's outcomes differ from ``embedded_numpy``'s, or it refused nearly all.
        RuntimeError: the subprocess could not set the backend up.
    """
    drawn = [recipe(rng) for _ in range(cases)]
    expected = run_in_subprocess("embedded_numpy", drawn)
    outcomes = run_in_subprocess(reference, drawn)
    bad = [(case, outcome) for case, outcome in zip(drawn, outcomes, strict=True)
           if outcome[0] in {"crashed", "wrong"}]
    assert not bad, f"{reference}: crashed or wrong on {bad[:3]}"
    differ = [(case, got, want) for case, got, want in zip(drawn, outcomes, expected, strict=True)
              if got[0] != want[0]]
    assert not differ, f"{reference}: outcomes differ from embedded_numpy's on {differ[:3]}"
    computed = sum(outcome[0] == "correct" for outcome in outcomes)
    assert computed > cases // 12, f"{reference}: only {computed} of {cases} cases ran"
