"""Every corpus program on every backend agrees with its hand-written NumPy reference.

Also: a program whose inputs do not cover the output domain plus the stencil's reach raises
``DomainError`` naming the field, dimension and missing halo, with the same message on every
backend; and arguments of the wrong dtype or rank are refused before anything runs.
"""

import re

import corpus
import numpy as np
import pytest
from corpus import CASES, MISSING_HALOS, REACH_SHAPE, Case

import allocators
from pipeline.dsl import DomainError, DSLError, field_operator, float64, program


def test_the_corpus_covers_at_least_45_programs_with_unique_names():
    assert len(CASES) >= 45
    assert len({case.name for case in CASES}) == len(CASES)


def test_each_reference_writes_its_outputs():
    corpus.check_corpus()


def _assert_matches(case: Case, name: str, got: np.ndarray, expected: np.ndarray,
                    prefilled: np.ndarray) -> None:
    assert got.dtype == expected.dtype, f"{name}: dtype {got.dtype}, expected {expected.dtype}"
    assert got.shape == expected.shape, f"{name}: shape {got.shape}, expected {expected.shape}"
    untouched = expected == prefilled
    if expected.dtype != np.bool_:
        # Cells outside the out slice must keep the sentinel bit for bit.
        np.testing.assert_array_equal(
            got[untouched], prefilled[untouched],
            err_msg=f"{case.name}: {name} changed cells outside the out slice",
        )
    rtol, atol = case.tolerance(expected.dtype)
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(got, expected, err_msg=f"{case.name}: {name}")
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol,
                                   err_msg=f"{case.name}: {name}")


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_corpus_program_matches_numpy_reference(
    case, dsl_backend, to_backend_array, to_numpy, run_program
):
    host = case.build()
    expected = {name: np.copy(value) if isinstance(value, np.ndarray) else value
                for name, value in host.items()}
    case.reference(**expected)
    args = {name: to_backend_array(value, dsl_backend) if isinstance(value, np.ndarray) else value
            for name, value in host.items()}

    after = run_program(case.program, dsl_backend, written=case.outputs, **args)

    for name in case.outputs:
        _assert_matches(case, name, to_numpy(after[name]), expected[name], host[name])
    for name, value in host.items():
        if isinstance(value, np.ndarray) and name not in case.outputs:
            np.testing.assert_array_equal(to_numpy(after[name]), value,
                                          err_msg=f"{case.name}: input {name} was modified")


def _lap_arrays(backend, to_backend_array, inp_shape=(8, 7, 3), out_shape=(8, 7, 3),
                out_dtype=np.float64):
    rng = np.random.default_rng(7)
    inp = rng.uniform(-1, 1, inp_shape)
    out = corpus.sentinel(out_shape, out_dtype)
    return inp, out, to_backend_array(inp, backend), to_backend_array(out, backend)


def test_program_takes_positional_arguments(dsl_backend, to_backend_array, to_numpy,
                                            run_program):
    inp, out, inp_b, out_b = _lap_arrays(dsl_backend, to_backend_array)
    corpus.lap_reference(inp, out)
    after = run_program(corpus.lap, dsl_backend, inp_b, out_b, written=(1,))
    np.testing.assert_allclose(to_numpy(after[1]), out, rtol=1e-12, atol=1e-12)


def test_program_takes_mixed_positional_and_keyword_arguments(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    rng = np.random.default_rng(3)
    inp = rng.uniform(-1, 1, (16, 16, 8))
    out = corpus.sentinel(inp.shape, np.float64)
    expected = out.copy()
    corpus.hdiff_reference(inp, 0.05, expected)
    after = run_program(corpus.hdiff_program, dsl_backend, to_backend_array(inp, dsl_backend),
                        written=("out",), coeff=0.05, out=to_backend_array(out, dsl_backend))
    np.testing.assert_allclose(to_numpy(after["out"]), expected, rtol=1e-12, atol=1e-12)


def test_design_example_allocates_with_the_program_and_runs(
    dsl_backend, bind_program, to_numpy, run_program
):
    lap = bind_program(corpus.lap, dsl_backend)
    inp = allocators.ones((64, 64, 32), float64, allocator=lap)
    out = allocators.zeros((64, 64, 32), float64, allocator=lap)
    after = run_program(corpus.lap, dsl_backend, inp, out, written=(1,))
    np.testing.assert_array_equal(to_numpy(after[1]), np.zeros((64, 64, 32)))
    assert to_numpy(after[1]).dtype == np.float64


# --------------------------------------------------------------------------- domain errors


def _domain_error(program, backend, to_backend_array, bind_program, shape=REACH_SHAPE,
                  inp_shape=None):
    rng = np.random.default_rng(11)
    inp = to_backend_array(rng.uniform(-1, 1, inp_shape or shape), backend)
    out = to_backend_array(corpus.sentinel(shape, np.float64), backend)
    with pytest.raises(DomainError) as info:
        bind_program(program, backend)(inp, out)
    return info.value


def _names(message: str, word: str | int) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(str(word))}(?![\w.])", message) is not None


def test_domain_error_is_a_value_error():
    assert issubclass(DomainError, ValueError)


def test_a_program_whose_reach_fits_runs(dsl_backend, to_backend_array, to_numpy, run_program):
    rng = np.random.default_rng(5)
    inp = rng.uniform(-1, 1, REACH_SHAPE)
    out = corpus.sentinel(REACH_SHAPE, np.float64)
    expected = out.copy()
    d = corpus.dom(REACH_SHAPE, np.s_[:-2, 1:, :-3])
    expected[d] = corpus.at(inp, d, 2) + corpus.at(inp, d, 0, -1) + corpus.at(inp, d, 0, 0, 3)
    after = run_program(corpus.reach_fits, dsl_backend, to_backend_array(inp, dsl_backend),
                        to_backend_array(out, dsl_backend), written=(1,))
    np.testing.assert_allclose(to_numpy(after[1]), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("missing", MISSING_HALOS, ids=lambda m: m.name)
def test_missing_halo_raises_domain_error_naming_field_dimension_and_amount(
    missing, dsl_backend, reference_backend, to_backend_array, bind_program
):
    error = _domain_error(missing.program, dsl_backend, to_backend_array, bind_program)
    message = str(error)
    assert _names(message, missing.field), message
    assert _names(message, missing.dimension), message
    assert _names(message, missing.missing), message
    # Identical type and message on every backend.
    expected = _domain_error(missing.program, reference_backend, to_backend_array, bind_program)
    assert type(error) is type(expected)
    assert message == str(expected)


def test_an_input_smaller_than_the_output_raises_domain_error(
    dsl_backend, reference_backend, to_backend_array, bind_program
):
    # Output domain I in [1, 8) reads inp up to I = 8, but inp has I extent 7: missing 1.
    error = _domain_error(corpus.lap, dsl_backend, to_backend_array, bind_program, shape=(9, 9, 4),
                          inp_shape=(8, 9, 4))
    message = str(error)
    assert _names(message, "inp") and _names(message, "I") and _names(message, 1), message
    expected = _domain_error(corpus.lap, reference_backend, to_backend_array, bind_program,
                             shape=(9, 9, 4), inp_shape=(8, 9, 4))
    assert message == str(expected)


# --------------------------------------------------------------------------- argument checks


@pytest.mark.parametrize(
    ("inp_shape", "inp_dtype", "out_shape", "out_dtype", "culprit"),
    [
        ((8, 7, 3), np.float64, (8, 7, 3), np.float32, "out"),
        ((8, 7, 3), np.float64, (8, 7, 3), np.int64, "out"),
        ((8, 7, 3), np.float64, (8, 7), np.float64, "out"),
        ((8, 7), np.float64, (8, 7, 3), np.float64, "inp"),
        ((8, 7, 3), np.int32, (8, 7, 3), np.float64, "inp"),
        ((8, 7, 3, 2), np.float64, (8, 7, 3), np.float64, "inp"),
    ],
    ids=["out_float32", "out_int64", "out_rank_2", "inp_rank_2", "inp_int32", "inp_rank_4"],
)
def test_wrong_dtype_or_rank_is_refused_naming_the_argument(
    inp_shape, inp_dtype, out_shape, out_dtype, culprit, dsl_backend, to_backend_array, to_numpy,
    bind_program,
):
    inp = to_backend_array(np.ones(inp_shape, inp_dtype), dsl_backend)
    out_host = corpus.sentinel(out_shape, out_dtype)
    out = to_backend_array(out_host, dsl_backend)
    with pytest.raises((TypeError, ValueError)) as info:
        bind_program(corpus.lap, dsl_backend)(inp, out)
    assert _names(str(info.value), culprit), str(info.value)
    np.testing.assert_array_equal(to_numpy(out), out_host)


def test_a_wrong_argument_of_a_later_call_is_refused_before_the_first_call_runs(
    dsl_backend, to_backend_array, to_numpy, bind_program
):
    shape = (8, 7, 3)
    inp = to_backend_array(np.ones(shape), dsl_backend)
    tmp_host = corpus.sentinel(shape, np.float64)
    tmp = to_backend_array(tmp_host, dsl_backend)
    out = to_backend_array(corpus.sentinel(shape, np.float32), dsl_backend)
    with pytest.raises((TypeError, ValueError)) as info:
        bind_program(corpus.two_stage_laplacian, dsl_backend)(inp, tmp, out)
    assert _names(str(info.value), "out"), str(info.value)
    np.testing.assert_array_equal(to_numpy(tmp), tmp_host)


def test_mixed_dtypes_without_astype_are_a_dsl_error_naming_both(
    dsl_backend, to_backend_array, bind_program
):
    shape = (4, 4, 2)
    a = to_backend_array(np.ones(shape), dsl_backend)
    b = to_backend_array(np.ones(shape, np.float32), dsl_backend)
    out = to_backend_array(np.zeros(shape), dsl_backend)
    with pytest.raises(DSLError) as info:  # at definition or at the first call

        @field_operator
        def mixed(a: corpus.IJK, b: corpus.IJK32) -> corpus.IJK:
            return a + b

        @program
        def mixed_program(a: corpus.IJK, b: corpus.IJK32, out: corpus.IJK):
            mixed(a, b, out=out)

        bind_program(mixed_program, dsl_backend)(a, b, out)
    assert "float32" in str(info.value) and "float64" in str(info.value), str(info.value)
