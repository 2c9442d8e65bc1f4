"""Static parameters, precompiled variants and static domains (issue 41, ADR 0025).

``@program(static_params=("lo",))``: each call runs the variant of its static values, the
program bound to them (``with_bound_args``); ``static_domains=True``: the fields' shapes key
the variant too, whose output domains are constants; ``jit=False``: only variants given to
``compile(..., lo=[...])`` run. The corpus runs static programs on every backend
(``corpus/static_arguments.py``); here: variants, their reuse, precompiling and misuse.
No ``from __future__ import annotations``: the DSL reads the annotations.
"""

import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import backends
from pipeline import StageEvent, subscribe
from pipeline.dsl import (
    Dimension,
    DomainError,
    DSLTypeError,
    Field,
    concat_where,
    field_operator,
    float64,
    int32,
    located,
    program,
)
from pipeline.errors import ArgumentError

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
F = Field[[I, J, K], float64]
SHAPE = (8, 5, 6)


@field_operator
def _shifted_scaled(a: F, s: float64, top: int32) -> F:
    return concat_where(K == top, 0.0, a(I + 1) * s)  # noqa: SIM300  (K is the dimension)


def _make(**settings):
    @program(**settings)
    def shifted_from(a: F, s: float64, lo: int32, top: int32, out: F):
        _shifted_scaled(a, s, top, out=out, domain={I: (lo, 7)})

    return shifted_from


STATIC = _make(static_params=("lo", "top"))
NO_JIT = _make(static_params=("lo",), jit=False)


def _expected(a, s, lo, top):
    out = np.zeros(SHAPE)
    out[lo:7] = a[lo + 1 : 8] * s
    out[lo:7, :, top] = 0.0
    return out


def _run(prog, backend, to_backend_array, to_numpy, a, *args, **kwargs):
    out = to_backend_array(np.zeros(SHAPE), backend)
    if "out" in kwargs:
        kwargs["out"] = out
    else:
        args = (*args, out)
    result = prog(to_backend_array(a, backend), *args, **kwargs)
    return to_numpy(out if result is None else result[0])


def test_each_static_value_runs_its_own_variant_by_position_or_keyword(
    dsl_backend, to_backend_array, to_numpy, bind_program
):
    a = np.random.default_rng(5).uniform(-1, 1, SHAPE)
    static = bind_program(STATIC, dsl_backend)
    for lo, top in ((1, 2), (3, 5), (1, 2)):
        got = _run(static, dsl_backend, to_backend_array, to_numpy, a, 2.0, lo, top)
        np.testing.assert_allclose(got, _expected(a, 2.0, lo, top), rtol=1e-15)
        by_keyword = _run(
            static, dsl_backend, to_backend_array, to_numpy, a, top=top, s=0.5, lo=lo, out=None
        )
        np.testing.assert_allclose(by_keyword, _expected(a, 0.5, lo, top), rtol=1e-15)
    assert sorted((v.bound["lo"], v.bound["top"]) for v in static.variants) == [(1, 2), (3, 5)]


def test_a_repeat_call_runs_no_stage_and_a_new_value_makes_a_variant(dsl_backend, to_backend_array):
    static = _make(static_params=("lo",)).with_backend(dsl_backend)
    a, out = (to_backend_array(np.ones(SHAPE), dsl_backend) for _ in range(2))
    static(a, 1.0, 2, 0, out)
    events: list[StageEvent] = []
    with subscribe(events.append):
        static(a, 1.0, 2, 0, out)
        static(a, 1.0, np.int32(2), 3, out)  # the same value as a NumPy scalar
        static(out=out, top=0, lo=2, s=3.0, a=a)
    assert events == []
    with subscribe(events.append):
        static(a, 1.0, 4, 0, out)
    assert "loading" in [event.stage for event in events]  # a new variant went the walk
    assert len(static.variants) == 2
    assert {v.bound["lo"] for v in static.variants} == {2, 4}


def test_the_static_value_is_a_constant_of_the_code_in_domains_and_conditions():
    text = str(STATIC.lower(np.ones(SHAPE), 2.0, 3, 4, np.zeros(SHAPE)).ir)
    assert "lo:" not in text and "top:" not in text and "s: float64" in text
    assert "out[3:7, :, :]" in text and "K >= 4 & K < 5" in text


def test_precompiled_variants_run_and_jit_false_refuses_any_other(
    dsl_backend, to_backend_array, to_numpy
):
    no_jit = NO_JIT.with_backend(dsl_backend)
    a = np.random.default_rng(6).uniform(-1, 1, SHAPE)
    device_a, out = to_backend_array(a, dsl_backend), to_backend_array(np.zeros(SHAPE), dsl_backend)
    if not dsl_backend.pipeline.compiles:
        with pytest.raises(RuntimeError, match="embedded programs are not compiled"):
            no_jit.compile(device_a, 1.0, [1, 2], 0, out)
        with pytest.raises(ArgumentError, match="no precompiled variant for lo=1"):
            no_jit(device_a, 1.0, 1, 0, out)
        return
    compiled = no_jit.compile(device_a, 1.0, [1, 2], 0, out)
    assert sorted(compiled) == [(1,), (2,)]
    events: list[StageEvent] = []
    with subscribe(events.append):
        got = _run(no_jit, dsl_backend, to_backend_array, to_numpy, a, 2.0, 2, 1)
    assert events == []
    np.testing.assert_allclose(got, _expected(a, 2.0, 2, 1), rtol=1e-15)
    message = (
        r"shifted_from\(\) was made with jit=False and has no precompiled variant for lo=3 "
        r"\(precompiled: lo=1; lo=2\)"
    )
    with pytest.raises(ArgumentError, match=message):
        no_jit(device_a, 1.0, 3, 0, out)


def test_precompiling_several_static_parameters_compiles_their_product():
    static = STATIC.with_backend(backends.c_cpu)
    a, out = np.ones(SHAPE), np.zeros(SHAPE)
    compiled = static.compile(a, 1.0, out=out, lo=(1, 2), top=[0, 5])
    assert sorted(compiled) == [(1, 0), (1, 5), (2, 0), (2, 5)]
    assert len(static.variants) == 4


def test_static_params_naming_no_parameter_is_refused_at_decoration():
    with pytest.raises(TypeError, match=r"static_params=\.\.\.\) of 'shifted_from' names 'n'"):
        _make(static_params=("n",))


def test_static_params_as_one_string_is_refused_at_decoration():
    with pytest.raises(TypeError, match=r"static_params takes a tuple of names, like \('lo',\)"):
        _make(static_params="lo")


def test_a_static_field_parameter_is_refused_at_the_first_call():
    static = _make(static_params=("a",))
    with pytest.raises(TypeError, match="of 'shifted_from' names 'a', which is not a scalar"):
        static(np.ones(SHAPE), 1.0, 1, 0, np.zeros(SHAPE))


_DEF_LINE = re.escape(__file__) + r'", line \d+'


@pytest.mark.parametrize("value", [2.5, True, 2**40])
def test_a_static_value_that_does_not_fit_is_the_bound_arguments_dsl_error(value):
    static = _make(static_params=("lo",))
    static(np.ones(SHAPE), 1.0, 1, 0, np.zeros(SHAPE))  # a variant of lo=1 exists
    with pytest.raises(DSLTypeError, match=_DEF_LINE) as as_static:
        static(np.ones(SHAPE), 1.0, value, 0, np.zeros(SHAPE))
    with pytest.raises(DSLTypeError) as as_bound:
        static.with_bound_args(lo=value).lower()
    assert str(as_static.value) == str(as_bound.value)


def test_an_unhashable_static_value_is_an_argument_error():
    with pytest.raises(ArgumentError, match="argument 'lo' of shifted_from\\(\\) is static"):
        STATIC(np.ones(SHAPE), 1.0, [1], 0, np.zeros(SHAPE))


def test_binding_a_static_parameter_makes_it_no_longer_static():
    bound = STATIC.with_bound_args(top=1)
    assert bound.static_params == ("lo",)
    out = np.zeros(SHAPE)
    bound(np.ones(SHAPE), 2.0, 6, out)
    np.testing.assert_array_equal(out, _expected(np.ones(SHAPE), 2.0, 6, 1))


@field_operator
def _difference(a: F) -> F:
    return a(I + 1) - a(I - 1)


@program(static_domains=True)
def interior(a: F, out: F):
    _difference(a, out=out[1:-1, :, 2:])


def test_static_domains_make_one_variant_per_shape(dsl_backend, to_backend_array, to_numpy):
    prog = interior.with_backend(dsl_backend)
    rng = np.random.default_rng(7)
    for shape in ((8, 5, 6), (5, 3, 4), (8, 5, 6)):
        a = rng.uniform(-1, 1, shape)
        out = to_backend_array(np.zeros(shape), dsl_backend)
        result = prog(to_backend_array(a, dsl_backend), out)
        expected = np.zeros(shape)
        expected[1:-1, :, 2:] = a[2:, :, 2:] - a[:-2, :, 2:]
        np.testing.assert_allclose(to_numpy(out if result is None else result[0]), expected)
    assert sorted(v.static_shapes["out"] for v in prog.variants) == [(5, 3, 4), (8, 5, 6)]


@pytest.mark.parametrize("other", [(5, 5, 6), (9, 5, 6)])
def test_a_static_domain_variant_called_directly_refuses_other_shapes(
    dsl_backend, to_backend_array, other
):
    prog = interior.with_backend(dsl_backend)
    shape = (8, 5, 6)
    prog(
        to_backend_array(np.ones(shape), dsl_backend),
        to_backend_array(np.zeros(shape), dsl_backend),
    )
    (variant,) = prog.variants
    a, out = (to_backend_array(np.ones(shape), dsl_backend) for _ in range(2))
    variant(a, out)  # its own shapes: accepted, by position and keyword
    variant(out=out, a=a)
    message = (
        rf"argument 'a' of interior\(\) has shape {re.escape(str(other))}, but this variant "
        r"of a static-domain program is compiled for \(8, 5, 6\)"
    )
    with pytest.raises(DomainError, match=message):
        variant(to_backend_array(np.ones(other), dsl_backend), out)


def test_the_generated_c_of_a_static_domain_has_constant_bounds():
    shape = (8, 5, 6)
    lowered = interior.with_backend(backends.c_cpu).lower(np.ones(shape), np.zeros(shape))
    assert "out[1:7, 0:5, 2:6]" in str(lowered.ir)
    assert "l = 1LL; h = 7LL;" in lowered.as_text()
    assert "l = 2LL; h = 6LL;" in lowered.as_text()
    assert "hi_K = lo_K + 4;" in lowered.as_text()  # the inner loop's extent, a constant
    plain = program(interior.function).with_backend(backends.c_cpu)
    assert "1LL; h = 7LL" not in plain.lower(np.ones(shape), np.zeros(shape)).as_text()


def test_precompiling_with_an_executor_gives_a_future_per_variant():
    static = NO_JIT.with_backend(backends.c_cpu)
    a, out = np.ones(SHAPE), np.zeros(SHAPE)
    with ThreadPoolExecutor(2) as executor:
        futures = static.compile(a, 1.0, [1, 4], 0, out, executor=executor)
        assert sorted(futures) == [(1,), (4,)]
        for future in futures.values():
            future.result()
    static(a, 3.0, 4, 2, out)
    np.testing.assert_array_equal(out, _expected(a, 3.0, 4, 2))


def test_jit_false_with_static_domains_refuses_a_shape_not_precompiled():
    @program(static_domains=True, jit=False, backend=backends.c_cpu)
    def fixed(a: F, out: F):
        _difference(a, out=out[1:-1, :, 2:])

    fixed.compile(np.ones(SHAPE), np.zeros(SHAPE))
    fixed(np.ones(SHAPE), np.zeros(SHAPE))
    message = (
        r"fixed\(\) was made with jit=False and has no precompiled variant for a: shape "
        r"\(9, 5, 6\), out: shape \(9, 5, 6\) \(precompiled: a: shape \(8, 5, 6\), out: "
        r"shape \(8, 5, 6\)\)"
    )
    with pytest.raises(ArgumentError, match=message):
        fixed(np.ones((9, 5, 6)), np.zeros((9, 5, 6)))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 2, 5, np.int32(1), np.int64(5)]), min_size=1, max_size=6))
def test_each_distinct_value_makes_one_variant_that_computes_as_bound(values):
    static = _make(static_params=("lo",))
    a = np.arange(np.prod(SHAPE), dtype=np.float64).reshape(SHAPE)
    for value in values:
        out = np.zeros(SHAPE)
        static(a, 2.0, value, 3, out)
        np.testing.assert_array_equal(out, _expected(a, 2.0, int(value), 3))
    assert sorted(v.bound["lo"] for v in static.variants) == sorted({int(v) for v in values})


def test_a_static_domain_variant_refuses_located_arrays_of_other_shapes_too():
    """A located array's shape is its array's: a variant compiled for (8, 5, 6) computed 8
    rows of a 9-row located output without a word (found in review). A check before any
    backend runs: the default backend shows it for all."""
    shape = (8, 5, 6)
    interior(np.ones(shape), np.zeros(shape))
    variant = next(v for v in interior.variants if v.static_shapes["a"] == shape)
    bigger = np.zeros((9, 5, 6))
    with pytest.raises(DomainError, match=r"argument 'out' of interior\(\) has shape"):
        variant(np.ones(shape), located(bigger, (I, J, K)))
    with pytest.raises(DomainError, match=r"argument 'a' of interior\(\) has shape"):
        variant(located(np.ones((10, 5, 6)), (I, J, K), {I: -1}), bigger)
    assert not bigger.any()


def test_a_static_domain_program_keys_located_arrays_by_their_shape():
    """The program itself runs the variant of each located array's shape, by compile() and
    lower() too (they raised AttributeError: found in review)."""
    a, out = np.arange(9.0 * 5 * 6).reshape(9, 5, 6), np.zeros((9, 5, 6))
    interior(located(a, (I, J, K)), located(out, (I, J, K)))
    expected = np.zeros((9, 5, 6))
    expected[1:-1, :, 2:] = a[2:, :, 2:] - a[:-2, :, 2:]
    np.testing.assert_array_equal(out, expected)
    assert interior.lower(located(a, (I, J, K)), out).ir.name == "interior"


def test_an_unhashable_static_value_is_an_argument_error_in_compile_and_lower():
    for entry in (STATIC.lower, STATIC.compile):
        with pytest.raises(ArgumentError, match="argument 'lo' of shifted_from\\(\\) is static"):
            entry(np.ones(SHAPE), 1.0, np.array([1]), 0, np.zeros(SHAPE))


@field_operator
def _over(a: F, s: float64) -> F:
    return a / s


@pytest.mark.parametrize("pair", [(0.0, -0.0), (-0.0, 0.0)])
def test_minus_zero_and_zero_are_two_variants(pair):
    """``-0.0 == 0.0`` and both hash alike, but ``1 / -0.0`` is ``-inf``: a variant bound to
    one must not serve the other (found in review: the second call ran the first's code)."""

    @program(static_params=("s",))
    def divided(a: F, s: float64, out: F):
        _over(a, s, out=out)

    for s in pair:
        out = np.zeros(SHAPE)
        with np.errstate(divide="ignore"):
            divided(np.ones(SHAPE), s, out)
            assert (out == 1.0 / np.float64(s)).all()
    assert len(divided.variants) == 2


def test_every_nan_finds_the_one_nan_variant():
    static = _make(static_params=("s",))
    for _ in range(3):
        static(np.ones(SHAPE), float("nan"), 0, 3, np.zeros(SHAPE))
    assert len(static.variants) == 1
