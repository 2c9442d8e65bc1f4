"""domain= on a field-operator call in a program: absolute bounds, literals or scalars."""

import numpy as np
import pytest

from pipeline.dsl import (
    Dimension,
    DomainError,
    DSLSyntaxError,
    DSLTypeError,
    Field,
    field_operator,
    float64,
    int64,
    program,
)

I, J = Dimension("I"), Dimension("J")  # noqa: E741
IJ = Field[[I, J], float64]
SHAPE = (6, 5)


@field_operator
def negated(f: IJ) -> IJ:
    return -f


@program
def up_to(f: IJ, hi: int64, out: IJ):
    negated(f, out=out, domain={I: (1, hi)})  # D:call


def test_a_domain_outside_the_output_is_a_domain_error_naming_the_call(
    dsl_backend, to_backend_array, bind_program
):
    f = to_backend_array(np.ones(SHAPE), dsl_backend)
    out = to_backend_array(np.zeros(SHAPE), dsl_backend)
    bound = bind_program(up_to, dsl_backend)
    with pytest.raises(DomainError, match=r"domain along I is 1:9, but the output has 6") as info:
        bound(f, 9, out)
    assert f"line {_line('D:call')} of {__file__}" in info.value.args[0]


def test_a_domain_ending_before_it_starts_is_refused_at_the_call(
    dsl_backend, to_backend_array, bind_program
):
    f = to_backend_array(np.ones(SHAPE), dsl_backend)
    out = to_backend_array(np.zeros(SHAPE), dsl_backend)
    with pytest.raises(DomainError, match=r"domain along I is 1:0"):
        bind_program(up_to, dsl_backend)(f, 0, out)


def test_the_same_program_follows_its_scalar_bound(dsl_backend, to_backend_array, to_numpy,
                                                   bind_program):
    f = np.arange(30.0).reshape(SHAPE)
    bound = bind_program(up_to, dsl_backend)
    for hi in (3, 6, 1):
        out = to_backend_array(np.zeros(SHAPE), dsl_backend)
        result = bound(to_backend_array(f, dsl_backend), hi, out)
        got = to_numpy(result[0] if isinstance(result, tuple) else out)
        expected = np.zeros(SHAPE)
        expected[1:hi] = -f[1:hi]
        np.testing.assert_array_equal(got, expected)


def _line(marker: str) -> int:
    with open(__file__) as source:
        return next(n for n, text in enumerate(source, 1) if f"# {marker}" in text)


@program
def domain_on_a_missing_dimension(f: IJ, out: Field[[I], float64]):
    negated(f, out=out, domain={J: (0, 2)})


@program
def sliced_and_bounded(f: IJ, out: IJ):
    negated(f, out=out[1:, :], domain={I: (0, 2)})


@program
def negative_start(f: IJ, out: IJ):
    negated(f, out=out, domain={I: (-1, 2)})


@program
def float_bound(f: IJ, stop: float64, out: IJ):
    negated(f, out=out, domain={I: (0, stop)})


@pytest.mark.parametrize(("prog", "error", "message"), [
    (domain_on_a_missing_dimension, DSLTypeError, r"domain= bounds J, but out field 'out' has"),
    (sliced_and_bounded, DSLSyntaxError, r"sliced along I and domain= bounds I too"),
    (negative_start, DSLTypeError, r"domain= takes absolute indices; -1 along I"),
    (float_bound, DSLTypeError, r"an index bound must be an integer; 'stop' is float64"),
])
def test_misused_domains_are_dsl_errors_at_the_call(prog, error, message):
    with pytest.raises(error, match=message) as info:
        prog.frontend()
    assert info.value.filename == __file__
    assert "domain=" in info.value.source_line
