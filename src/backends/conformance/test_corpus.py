"""Every corpus program on the backend under test agrees with its NumPy reference.

Shipped with stencilforge: ``stencilforge conformance BACKEND`` runs this module and its
siblings (see ``backends.conformance.plugin``).
"""

from __future__ import annotations

import pytest

from backends.base import Backend
from backends.conformance import checks
from backends.conformance.corpus import CASES, Case

_CALLS = pytest.mark.stencilforge_feature("calling conventions")


@pytest.mark.parametrize(
    "case",
    [pytest.param(case, id=case.name, marks=pytest.mark.stencilforge_feature(case.feature))
     for case in CASES],
)
def test_corpus_program_matches_numpy_reference(case: Case, conformance_backend: Backend) -> None:
    checks.check_case(case, conformance_backend)


@_CALLS
def test_program_takes_positional_arguments(conformance_backend: Backend) -> None:
    checks.check_positional_arguments(conformance_backend)


@_CALLS
def test_program_takes_mixed_positional_and_keyword_arguments(
    conformance_backend: Backend,
) -> None:
    checks.check_mixed_positional_and_keyword_arguments(conformance_backend)


@_CALLS
def test_design_example_allocates_with_the_program_and_runs(conformance_backend: Backend) -> None:
    checks.check_design_example(conformance_backend)
