"""The backend under test refuses what it must, before anything runs, as the reference does.

Shipped with stencilforge: ``stencilforge conformance BACKEND`` runs this module and its
siblings (see ``backends.conformance.plugin``).
"""

from __future__ import annotations

import pytest

from backends.base import Backend
from backends.conformance import checks, refusals
from backends.conformance.corpus import MISSING_HALOS, MissingHalo
from backends.conformance.refusals import WRONG_ARGUMENTS, WrongArgument

_DOMAINS = pytest.mark.stencilforge_feature("domain errors")
_ARGUMENTS = pytest.mark.stencilforge_feature("argument checks")


@_DOMAINS
def test_a_program_whose_reach_fits_runs(conformance_backend: Backend) -> None:
    checks.check_reach_that_fits(conformance_backend)


@_DOMAINS
@pytest.mark.parametrize("missing", MISSING_HALOS, ids=lambda missing: missing.name)
def test_missing_halo_raises_domain_error_naming_field_dimension_and_amount(
    missing: MissingHalo, conformance_backend: Backend, reference_backend: Backend
) -> None:
    refusals.check_missing_halo(missing, conformance_backend, reference_backend)


@_DOMAINS
def test_an_input_smaller_than_the_output_raises_domain_error(
    conformance_backend: Backend, reference_backend: Backend
) -> None:
    refusals.check_input_smaller_than_output(conformance_backend, reference_backend)


@_ARGUMENTS
@pytest.mark.parametrize("wrong", WRONG_ARGUMENTS, ids=lambda wrong: wrong.name)
def test_wrong_dtype_or_rank_is_refused_naming_the_argument(
    wrong: WrongArgument, conformance_backend: Backend
) -> None:
    refusals.check_wrong_argument(wrong, conformance_backend)


@_ARGUMENTS
def test_a_wrong_argument_of_a_later_call_is_refused_before_the_first_call_runs(
    conformance_backend: Backend,
) -> None:
    refusals.check_wrong_argument_of_a_later_call(conformance_backend)
