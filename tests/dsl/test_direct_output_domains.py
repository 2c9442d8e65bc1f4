"""A field operator called directly takes ``domain=`` as a program's call does (issue 41):
``op(a, out=(x, y), domain=({I: (0, 9)}, {J: (0, 5)}))``, one dict of absolute bounds for all
outputs, or slices. Before, a direct call took slices only and refused the rest.
"""

import numpy as np
import pytest

import backends
from pipeline.dsl import Dimension, DomainError, DSLTypeError, Field, field_operator, float64

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
IJK = Field[[I, J, K], float64]
IJ = Field[[I, J], float64]
SHAPE = (10, 6, 4)


@field_operator
def gradients(f: IJK) -> tuple[IJK, IJK]:
    return f(I + 1) - f, f(J + 1) - f


@field_operator
def mean_and_column(f: IJK, g: IJ) -> tuple[IJK, IJ]:
    return f * 0.5, g(I + 1) - g


def _field():
    return np.random.default_rng(2).uniform(-1.0, 1.0, SHAPE)


def test_a_direct_call_takes_one_domain_per_output(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    f = _field()
    out = tuple(to_backend_array(np.full(SHAPE, 7.0), dsl_backend) for _ in range(2))
    after = run_program(gradients, dsl_backend, to_backend_array(f, dsl_backend), out=out,
                        domain=({I: (0, 9)}, {J: (1, 5)}), written=("out",))
    di, dj = (to_numpy(x) for x in after["out"])
    np.testing.assert_allclose(di[:9], f[1:] - f[:-1], rtol=1e-12)
    assert (di[9] == 7.0).all()
    np.testing.assert_allclose(dj[:, 1:5], f[:, 2:] - f[:, 1:-1], rtol=1e-12)
    assert (dj[:, 0] == 7.0).all() and (dj[:, 5] == 7.0).all()


def test_one_domain_bounds_every_output_of_a_direct_call(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    f, g = _field(), _field()[..., 0]
    out = (to_backend_array(np.full(SHAPE, 7.0), dsl_backend),
           to_backend_array(np.full(SHAPE[:2], 7.0), dsl_backend))
    after = run_program(mean_and_column, dsl_backend, to_backend_array(f, dsl_backend),
                        to_backend_array(g, dsl_backend), out=out, domain={I: (2, 8)},
                        written=("out",))
    half, column = (to_numpy(x) for x in after["out"])
    np.testing.assert_array_equal(half[2:8], f[2:8] * 0.5)
    assert (half[:2] == 7.0).all() and (half[8:] == 7.0).all()
    np.testing.assert_allclose(column[2:8], g[3:9] - g[2:8], rtol=1e-12)
    assert (column[:2] == 7.0).all() and (column[8:] == 7.0).all()


def test_a_direct_domain_outside_an_output_is_refused_naming_it():
    f, x, y = _field(), np.zeros(SHAPE), np.zeros(SHAPE)
    with pytest.raises(DomainError, match=r"the domain along J is 0:12, but the output has 6"):
        gradients(f, out=(x, y), domain=({I: (0, 9)}, {J: (0, 12)}))
    with pytest.raises(DomainError, match=r"'f' is too small along I"):
        gradients.with_backend(backends.c_cpu)(f, out=(x, y), domain={I: (0, 10), J: (0, 5)})


def test_direct_domains_of_another_count_or_form_are_refused():
    f, x, y = _field(), np.zeros(SHAPE), np.zeros(SHAPE)
    with pytest.raises(TypeError, match=r"gives 3 domain\(s\) for 2 output\(s\)"):
        gradients(f, out=(x, y), domain=({I: (0, 9)}, ({J: (0, 5)}, {J: (0, 5)})))
    with pytest.raises(TypeError, match=r"gives I as \(0, 9, 1\)"):
        gradients(f, out=(x, y), domain={I: (0, 9, 1)})
    with pytest.raises(TypeError, match=r"keys of domain= of the call of 'gradients' are "
                       r"dimensions"):
        gradients(f, out=(x, y), domain={"I": (0, 9)})


def test_a_direct_domain_of_a_dimension_the_output_lacks_is_a_dsl_error():
    f, x, y = _field(), np.zeros(SHAPE), np.zeros(SHAPE[:2])
    with pytest.raises(DSLTypeError, match=r"bounds K, but its output Field\[\[I, J\], "
                       r"float64\] has dimensions \(I, J\)") as caught:
        mean_and_column(f, y, out=(x, y.copy()), domain=({K: (1, 3)}, {K: (1, 3)}))
    assert __file__ in str(caught.value)
