"""A dataclass or NamedTuple of scalars as a scan operator's carry (issue 41, ADR 0023).

``@scan_operator(axis=K, init=State(0.0, 1.0))`` with ``state: State``: the body reads
``state.u`` and returns ``State(u=..., v=...)``; the caller gets a ``State`` of fields. No
``from __future__ import annotations``: the DSL reads the annotations.
"""

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

from pipeline.dsl import Dimension, DSLTypeError, Field, field_operator, float64, program
from pipeline.dsl import scan_operator

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
IJK = Field[[I, J, K], float64]
SHAPE = (3, 2, 5)


@dataclasses.dataclass(frozen=True)
class State:
    total: float64
    growth: float64


@dataclasses.dataclass(frozen=True)
class Fields:
    total: IJK
    growth: IJK


class Bounds(NamedTuple):
    low: float64
    high: float64


@scan_operator(axis=K, forward=True, init=State(0.0, 1.0))
def accumulate(state: State, x: float64) -> State:
    return State(growth=state.growth * 2.0, total=state.total + x)


@scan_operator(axis=K, forward=False, init=Bounds(0.0, 0.0))
def running_bounds(bounds: Bounds, x: float64) -> Bounds:
    low, high = bounds
    return Bounds(low + x * 0.5, bounds.high + x)


@field_operator
def combined(a: IJK) -> IJK:
    s = accumulate(a)
    b = running_bounds(a)
    return s.total * s.growth + b.high - b[0]


@program
def combined_program(a: IJK, out: IJK):
    combined(a, out=out)


@program
def accumulate_program(a: IJK, out: Fields):
    accumulate(a, out=out)


def _expected(a):
    total = np.cumsum(a, axis=-1)
    growth = np.broadcast_to(2.0 ** np.arange(1, SHAPE[-1] + 1), SHAPE)
    from_top = np.cumsum(a[..., ::-1], axis=-1)[..., ::-1]
    return total, growth, from_top


def test_a_field_operator_reads_a_scans_collection_by_field_and_index(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    a = np.random.default_rng(3).uniform(-1, 1, SHAPE)
    after = run_program(combined_program, dsl_backend, to_backend_array(a, dsl_backend),
                        to_backend_array(np.zeros(SHAPE), dsl_backend), written=(1,))
    total, growth, from_top = _expected(a)
    np.testing.assert_allclose(to_numpy(after[1]), total * growth + from_top * 0.5, rtol=1e-12)


def test_a_program_and_a_direct_call_write_a_collection_carry_into_out(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    a = np.random.default_rng(4).uniform(-1, 1, SHAPE)
    total, growth, _ = _expected(a)

    def outputs():
        return Fields(*(to_backend_array(np.zeros(SHAPE), dsl_backend) for _ in range(2)))

    after = run_program(accumulate_program, dsl_backend, to_backend_array(a, dsl_backend),
                        outputs(), written=(1,))
    direct = run_program(accumulate, dsl_backend, to_backend_array(a, dsl_backend),
                         out=outputs(), written=("out",))
    for written in (after[1], direct["out"]):
        assert isinstance(written, Fields)
        np.testing.assert_allclose(to_numpy(written.total), total, rtol=1e-12)
        np.testing.assert_allclose(to_numpy(written.growth), growth, rtol=1e-12)


def _frontend_error(scan, match):
    @field_operator
    def caller(a: IJK) -> IJK:
        return scan(a).total

    @program
    def calling(a: IJK, out: IJK):
        caller(a, out=out)

    with pytest.raises(DSLTypeError, match=match) as caught:
        calling.frontend()
    assert __file__ in str(caught.value)
    return str(caught.value)


def test_returning_a_tuple_for_a_collection_carry_is_a_dsl_error_at_its_line():
    @scan_operator(axis=K, init=State(0.0, 1.0))
    def as_tuple(state: State, x: float64) -> State:
        return state.total + x, state.growth

    message = _frontend_error(as_tuple, r"returns \(value, value\) but its carry is "
                              r"State\(total=value, growth=value\); return State\(\.\.\.\)")
    assert "return state.total + x, state.growth" in message


def test_an_init_of_another_kind_than_the_carry_is_a_dsl_error():
    @scan_operator(axis=K, init=(0.0, 1.0))
    def plain_init(state: State, x: float64) -> State:
        return State(state.total + x, state.growth)

    @scan_operator(axis=K, init=Bounds(0.0, 1.0))
    def other_class(state: State, x: float64) -> State:
        return State(state.total + x, state.growth)

    _frontend_error(plain_init, r"annotated State but init is \(0\.0, 1\.0\); give init an "
                    r"instance of the carry's class")
    _frontend_error(other_class, r"annotated State but init is Bounds\(\.\.\.\)")


def test_a_collection_carry_has_no_field_the_class_lacks():
    @scan_operator(axis=K, init=State(0.0, 1.0))
    def unknown(state: State, x: float64) -> State:
        return State(state.speed + x, state.growth)

    _frontend_error(unknown, r"'State' has no field 'speed'; its fields are total, growth")
