"""A scan operator called directly from Python on arrays, as a field operator is (issue 41).

``my_scan(a, b, out=x)`` (and ``domain=``) compiles a program of that one call on the
operator's backend: the scan's axis is the arrays' last axis, arrays of fewer dimensions
broadcast as NumPy's do, a tuple carry writes ``out=(x, y)``. No ``from __future__ import
annotations``: the DSL reads the annotations.
"""

import numpy as np
import pytest

import backends
from pipeline import StageEvent, metrics, subscribe
from pipeline.dsl import Dimension, float64, int64, scan_operator, where
from pipeline.errors import ArgumentError

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
SHAPE = (3, 2, 5)


@scan_operator(axis=K, forward=True, init=0.0)
def running_sum(carry: float64, x: float64) -> float64:
    return carry + x


@scan_operator(axis=K, forward=False, init=(0.0, 1.0))
def sum_and_product_from_top(
    carry: tuple[float64, float64], x: float64, factor: float64
) -> tuple[float64, float64]:
    total, product = carry
    return (total + x, product * factor)


@scan_operator(axis=K, forward=True, init=0)
def capped_count(carry: int64, flag: bool, cap: int64) -> int64:
    return where(carry >= cap, carry, where(flag, carry + 1, carry))


def _rng_field(shape=SHAPE, seed=0):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape)


def test_a_scan_called_directly_sweeps_3d_and_1d_arrays(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    a = _rng_field()
    after = run_program(running_sum, dsl_backend, to_backend_array(a, dsl_backend),
                        out=to_backend_array(np.zeros(SHAPE), dsl_backend), written=("out",))
    np.testing.assert_allclose(to_numpy(after["out"]), np.cumsum(a, axis=-1), rtol=1e-12)
    column = np.arange(5.0)
    after = run_program(running_sum, dsl_backend, x=to_backend_array(column, dsl_backend),
                        out=to_backend_array(np.zeros(5), dsl_backend), written=("out",))
    np.testing.assert_allclose(to_numpy(after["out"]), np.cumsum(column), rtol=1e-12)


def test_a_tuple_carry_called_directly_writes_out_tuple_backward(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    a = _rng_field()
    column = np.array([1.0, 2.0, 0.5, -1.0, 3.0])  # broadcast over I and J
    out = tuple(to_backend_array(np.zeros(SHAPE), dsl_backend) for _ in range(2))
    after = run_program(sum_and_product_from_top, dsl_backend, to_backend_array(a, dsl_backend),
                        to_backend_array(column, dsl_backend), out=out, written=("out",))
    totals, products = (to_numpy(x) for x in after["out"])
    np.testing.assert_allclose(totals, np.cumsum(a[..., ::-1], axis=-1)[..., ::-1], rtol=1e-12)
    expected = np.cumprod(column[::-1])[::-1]
    np.testing.assert_allclose(products, np.broadcast_to(expected, SHAPE), rtol=1e-12)


def test_a_direct_scan_takes_scalars_choices_and_a_domain(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    flags = np.random.default_rng(1).uniform(size=SHAPE) > 0.3
    out = np.full(SHAPE, -7, dtype=np.int64)
    after = run_program(capped_count, dsl_backend, to_backend_array(flags, dsl_backend), 2,
                        out=to_backend_array(out, dsl_backend), domain={K: (1, 4)},
                        written=("out",))
    expected = out.copy()
    count = np.zeros(SHAPE[:-1], dtype=np.int64)
    for k in range(1, 4):
        count = np.where(count >= 2, count, count + flags[..., k])
        expected[..., k] = count
    np.testing.assert_array_equal(to_numpy(after["out"]), expected)


def test_repeat_direct_calls_compile_once_and_run_no_stage():
    compiled = running_sum.with_backend(backends.c_cpu)
    a, out = _rng_field(), np.zeros(SHAPE)
    with metrics.collect():
        compiled(a, out=out)
        events: list[StageEvent] = []
        with subscribe(events.append):
            compiled(a, out=out)
        compiled(np.arange(5.0), out=np.zeros(5))  # other ranks: another program
    assert events == []
    assert len(metrics.get("running_sum@c_cpu").compile_seconds) == 2
    np.testing.assert_allclose(out, np.cumsum(a, axis=-1), rtol=1e-12)


def test_a_direct_scan_without_out_says_to_pass_one():
    with pytest.raises(TypeError, match=r"running_sum.*directly needs out="):
        running_sum(np.zeros(5))


def test_a_tuple_carry_needs_one_output_per_component():
    with pytest.raises(TypeError, match=r"one array per component of its carry \(2\), got 1"):
        sum_and_product_from_top(np.zeros(5), np.ones(5), out=np.zeros(5))


def test_direct_scan_arguments_are_checked_by_name():
    with pytest.raises(ArgumentError, match="has no parameter 'y'"):
        running_sum(y=np.zeros(5), out=np.zeros(5))
    with pytest.raises(ArgumentError, match="'x'"):
        running_sum(np.zeros(5, dtype=np.int32), out=np.zeros(5))
    with pytest.raises(TypeError, match="has 3 dimension.*out= has 1"):
        running_sum(np.zeros(SHAPE), out=np.zeros(5))


def test_a_direct_scan_refuses_a_domain_of_another_form():
    with pytest.raises(TypeError, match=r"domain= of the call of 'running_sum' is a tuple of"):
        running_sum(np.zeros(5), out=np.zeros(5), domain=[0, 3])
    with pytest.raises(TypeError, match=r"gives K as \(3, 1\)"):
        running_sum(np.zeros(5), out=np.zeros(5), domain={K: (3, 1)})


def test_frontend_of_a_scan_points_to_its_callers():
    with pytest.raises(TypeError, match="no program of its own"):
        running_sum.frontend()


def test_lower_shows_the_program_of_a_direct_call():
    lowered = sum_and_product_from_top.with_backend(backends.c_cpu).lower(
        np.zeros(SHAPE), np.ones(5), out=(np.zeros(SHAPE), np.zeros(SHAPE))
    )
    ir = lowered.ir
    assert [p.name for p in ir.params] == ["x", "factor", "__out0", "__out1"]
    assert [str(p.type) for p in ir.params][1] == "Field[[K], float64]"
    assert "sum_and_product_from_top" in lowered.as_text()
