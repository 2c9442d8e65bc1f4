"""Regressions found in review: each would have made backends disagree or fail unclearly."""

# No `from __future__ import annotations` here: the factory below annotates with a closure
# variable, which only works with evaluated annotations.

import numpy as np
import pytest

import backends
from backends.c import CTranslation
from pipeline import ArgumentError
from pipeline.dsl import (
    Dimension,
    DSLTypeError,
    Field,
    field_operator,
    float32,
    float64,
    int32,
    maximum,
    program,
)

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")
IJK = Field[[I, J, K], float64]
IJKi = Field[[I, J, K], int32]
Ifield = Field[[I], float64]

BACKENDS = [
    pytest.param("embedded_numpy", id="embedded_numpy"),
    pytest.param("c_cpu", id="c_cpu"),
]


def on(name: str, prog):
    return prog.with_backend(getattr(backends, name))


@field_operator
def smooth(f: IJK) -> IJK:
    return 0.5 * f + 0.25 * (f(I - 1) + f(I + 1))


@program
def smooth_in_place(a: IJK):
    smooth(a, out=a[1:-1, :, :])


@pytest.mark.parametrize("name", BACKENDS)
def test_a_stencil_reading_its_own_output_at_an_offset_is_refused(name):
    a = np.arange(5 * 2 * 2, dtype=np.float64).reshape(5, 2, 2)
    before = a.copy()
    with pytest.raises(DSLTypeError, match=r"writes 'a' and also reads it at shifted positions"):
        on(name, smooth_in_place)(a)
    np.testing.assert_array_equal(a, before)


@field_operator
def double(f: IJK) -> IJK:
    return 2.0 * f


@program
def double_in_place(a: IJK):
    double(a, out=a)


@pytest.mark.parametrize("name", BACKENDS)
def test_a_pointwise_update_in_place_is_allowed(name):
    a = np.ones((3, 3, 3))
    on(name, double_in_place)(a)
    np.testing.assert_array_equal(a, 2.0)


def make_copy_program(dtype):
    F = Field[[I, J, K], dtype]

    @field_operator
    def copy(f: F) -> F:
        return f

    @program
    def copy_program(inp: F, out: F):
        copy(inp, out=out)

    return copy_program


@pytest.mark.parametrize("name", BACKENDS)
def test_programs_made_by_one_factory_with_other_annotations_are_different(name):
    as64, as32 = make_copy_program(float64), make_copy_program(float32)
    out64, out32 = np.zeros((2, 2, 2)), np.zeros((2, 2, 2), np.float32)
    on(name, as64)(np.ones((2, 2, 2)), out64)
    on(name, as32)(np.ones((2, 2, 2), np.float32), out32)
    assert out64.sum() == 8 and out32.sum() == 8


SCALE = 1.0


@field_operator
def scaled(f: IJK) -> IJK:
    return SCALE * f


@program
def scale_program(inp: IJK, out: IJK):
    scaled(inp, out=out)


def test_globals_are_captured_on_first_use_on_every_backend():
    global SCALE  # noqa: PLW0603  (the behaviour under test)
    results = {}
    for name in ("embedded_numpy", "c_cpu"):
        prog = on(name, scale_program)
        out = np.zeros((2, 2, 2))
        prog(np.ones((2, 2, 2)), out)
        SCALE = 3.0
        prog(np.ones((2, 2, 2)), out)
        SCALE = 1.0
        results[name] = out.copy()
    np.testing.assert_array_equal(results["embedded_numpy"], results["c_cpu"])
    assert (results["c_cpu"] == 1.0).all()


@field_operator
def one_dimensional(f: Ifield) -> Ifield:
    return f(I - 1) + f(I + 1)


@program
def one_dimensional_program(inp: Ifield, out: Ifield):
    one_dimensional(inp, out=out[1:-1])


def test_a_large_one_dimensional_stencil_is_computed_once_and_right():
    inp = np.random.default_rng(1).random(200_001)
    out = np.zeros_like(inp)
    on("c_cpu", one_dimensional_program)(inp, out)
    np.testing.assert_allclose(out[1:-1], inp[:-2] + inp[2:], rtol=1e-15)


@field_operator
def maximum_of_mixed_literals(a: IJK) -> IJK:
    return a * maximum(3, 2.5)


@program
def maximum_program(a: IJK, out: IJK):
    maximum_of_mixed_literals(a, out=out)


@pytest.mark.parametrize("name", BACKENDS)
def test_folding_maximum_of_an_int_and_a_float_gives_a_float(name):
    out = np.zeros((2, 2, 2))
    on(name, maximum_program)(np.ones((2, 2, 2)), out)
    np.testing.assert_array_equal(out, 3.0)
    assert "3.0" in str(maximum_program.frontend().ir)


@field_operator
def too_large_literal(a: IJKi) -> IJKi:
    return a + 3000000000


@program
def too_large_literal_program(a: IJKi, out: IJKi):
    too_large_literal(a, out=out)


def test_an_int_literal_that_does_not_fit_the_field_dtype_is_a_dsl_error():
    with pytest.raises(DSLTypeError, match=r"literal 3000000000 does not fit int32"):
        too_large_literal_program.frontend()


@field_operator
def complex_power(a: IJK) -> IJK:
    return a * (-8.0) ** 0.5


@program
def complex_power_program(a: IJK, out: IJK):
    complex_power(a, out=out)


def test_a_constant_with_a_complex_value_is_not_folded():
    # Python (and so the embedded backend) makes (-8.0) ** 0.5 complex; compiled code computes
    # NumPy's float result. Folding must not turn it into a literal C cannot represent.
    out = np.zeros((2, 2, 2))
    on("c_cpu", complex_power_program)(np.ones((2, 2, 2)), out)
    assert np.isnan(out).all()


@program
def lap_like(inp: IJK, out: IJK):
    smooth(inp, out=out[1:-1, :, :])


@pytest.mark.parametrize(
    ("inp_shape", "out_shape"),
    [((4, 6, 0), (6, 6, 0)), ((0, 6, 3), (2, 6, 3))],
    ids=["empty array", "empty slice of a full array"],
)
@pytest.mark.parametrize("name", BACKENDS)
def test_an_empty_output_domain_does_nothing_on_every_backend(name, inp_shape, out_shape):
    # out[1:-1] is empty; the input does not cover the stencil's halo, which an empty domain
    # does not need. Whatever out holds outside the domain stays as it was.
    out = np.full(out_shape, 1.0)
    before = out.copy()
    assert on(name, lap_like)(np.zeros(inp_shape), out) is None
    assert out.shape == before.shape
    np.testing.assert_array_equal(out, before)


def test_c_cpu_names_non_numpy_arrays_instead_of_an_internal_error():
    import array_api_strict as xp

    with pytest.raises(ArgumentError, match=r"must be a numpy\.ndarray for this backend"):
        on("c_cpu", lap_like)(xp.zeros((4, 4, 2), dtype=xp.float64), np.zeros((4, 4, 2)))


@pytest.mark.parametrize("tiles", [(0,), (-1, 4), ()])
def test_c_translation_validates_tile_sizes(tiles):
    with pytest.raises(ValueError, match="tile_sizes"):
        CTranslation(tile_sizes=tiles)


@pytest.mark.parametrize("name", BACKENDS)
def test_a_timedelta_scalar_is_an_argument_error(name):
    @field_operator
    def add_scalar(a: IJK, s: float64) -> IJK:
        return a + s

    @program
    def add_scalar_program(a: IJK, s: float64, out: IJK):
        add_scalar(a, s, out=out)

    with pytest.raises(ArgumentError, match="must be a plain number"):
        on(name, add_scalar_program)(np.ones((2, 2, 2)), np.timedelta64(3), np.zeros((2, 2, 2)))
