"""Every corpus program on every backend agrees with its hand-written NumPy reference.

Also: a program whose inputs do not cover the output domain plus the stencil's reach raises
``DomainError`` naming the field, dimension and missing halo, with the same message on every
backend; and arguments of the wrong dtype or rank are refused before anything runs.

The checks are the shipped conformance suite's (``backends.conformance``): a third party runs
the same code on its backend with ``stencilforge conformance``; here it runs on every backend
of ``dsl_backend``.
"""

import numpy as np
import pytest

from backends.conformance import checks, refusals
from backends.conformance.corpus import CASES, FEATURES, IJK, IJK32, MISSING_HALOS, check_corpus
from backends.conformance.refusals import WRONG_ARGUMENTS
from pipeline.dsl import DomainError, DSLError, field_operator, program


def test_the_corpus_covers_at_least_45_programs_with_unique_names():
    assert len(CASES) >= 45
    assert len({case.name for case in CASES}) == len(CASES)


def test_each_case_belongs_to_one_listed_feature():
    names = [feature.name for feature in FEATURES]
    assert len(set(names)) == len(names)
    assert [case for feature in FEATURES for case in feature.cases] == list(CASES)
    assert all(case.feature in names for case in CASES)


def test_each_reference_writes_its_outputs():
    check_corpus()


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_corpus_program_matches_numpy_reference(case, dsl_backend):
    checks.check_case(case, dsl_backend)


def test_program_takes_positional_arguments(dsl_backend):
    checks.check_positional_arguments(dsl_backend)


def test_program_takes_mixed_positional_and_keyword_arguments(dsl_backend):
    checks.check_mixed_positional_and_keyword_arguments(dsl_backend)


def test_design_example_allocates_with_the_program_and_runs(dsl_backend):
    checks.check_design_example(dsl_backend)


# --------------------------------------------------------------------------- domain errors


def test_domain_error_is_a_value_error():
    assert issubclass(DomainError, ValueError)


def test_a_program_whose_reach_fits_runs(dsl_backend):
    checks.check_reach_that_fits(dsl_backend)


@pytest.mark.parametrize("missing", MISSING_HALOS, ids=lambda m: m.name)
def test_missing_halo_raises_domain_error_naming_field_dimension_and_amount(
    missing, dsl_backend, reference_backend
):
    refusals.check_missing_halo(missing, dsl_backend, reference_backend)


def test_an_input_smaller_than_the_output_raises_domain_error(dsl_backend, reference_backend):
    refusals.check_input_smaller_than_output(dsl_backend, reference_backend)


# --------------------------------------------------------------------------- argument checks


@pytest.mark.parametrize("wrong", WRONG_ARGUMENTS, ids=lambda wrong: wrong.name)
def test_wrong_dtype_or_rank_is_refused_naming_the_argument(wrong, dsl_backend):
    refusals.check_wrong_argument(wrong, dsl_backend)


def test_a_wrong_argument_of_a_later_call_is_refused_before_the_first_call_runs(dsl_backend):
    refusals.check_wrong_argument_of_a_later_call(dsl_backend)


def test_a_refusal_check_fails_when_nothing_is_refused(reference_backend):
    # The checks must be able to fail: a "wrong" argument that is right passes the call.
    right = refusals.WrongArgument("right", (8, 7, 3), WRONG_ARGUMENTS[0].inp_dtype, (8, 7, 3),
                                   WRONG_ARGUMENTS[0].inp_dtype, "out")
    with pytest.raises(AssertionError, match="expected TypeError or ValueError"):
        refusals.check_wrong_argument(right, reference_backend)


def test_mixed_dtypes_without_astype_are_a_dsl_error_naming_both(
    dsl_backend, to_backend_array, bind_program
):
    shape = (4, 4, 2)
    a = to_backend_array(np.ones(shape), dsl_backend)
    b = to_backend_array(np.ones(shape, np.float32), dsl_backend)
    out = to_backend_array(np.zeros(shape), dsl_backend)
    with pytest.raises(DSLError) as info:  # at definition or at the first call

        @field_operator
        def mixed(a: IJK, b: IJK32) -> IJK:
            return a + b

        @program
        def mixed_program(a: IJK, b: IJK32, out: IJK):
            mixed(a, b, out=out)

        bind_program(mixed_program, dsl_backend)(a, b, out)
    assert "float32" in str(info.value) and "float64" in str(info.value), str(info.value)
