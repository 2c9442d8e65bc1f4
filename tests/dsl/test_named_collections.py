"""Dataclasses and NamedTuples of fields and scalars are tuples with field names (issue 41).

A field operator reads ``s.u``, builds ``State(u=..., v=...)`` and unpacks a NamedTuple; a
program takes instances, flattened by their fields in declaration order. Misuse is refused as
Python would refuse it, at the user's line. No ``from __future__ import annotations``.
"""

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import backends
from pipeline import StageEvent, subscribe
from pipeline.dsl import (
    Dimension,
    DSLTypeError,
    Field,
    field_operator,
    float64,
    program,
)
from pipeline.errors import ArgumentError

I, J = Dimension("I"), Dimension("J")  # noqa: E741
F = Field[[I, J], float64]
SHAPE = (7, 5)


@dataclasses.dataclass(frozen=True)
class State:
    u: F
    v: F


@dataclasses.dataclass
class Mutable:
    u: F
    v: F


class Pair(NamedTuple):
    first: F
    weight: float64


@field_operator
def swapped(s: State) -> State:
    return State(v=s.u, u=s.v * 2.0)


@program
def swap_program(s: State, out: State):
    swapped(s, out=out)


@field_operator
def weighted(p: Pair) -> F:
    first, weight = p
    return first * weight + p[0] + p.first


@program
def pair_program(p: Pair, out: F):
    weighted(p, out=out)


def _arrays(count, to_backend_array, backend):
    rng = np.random.default_rng(7)
    hosts = [rng.uniform(-1, 1, SHAPE) for _ in range(count)]
    return hosts, [to_backend_array(h, backend) for h in hosts]


def test_a_dataclass_is_passed_and_returned_positionally_and_by_keyword(
    dsl_backend, to_backend_array, to_numpy, bind_program
):
    (a, b), (a_b, b_b) = _arrays(2, to_backend_array, dsl_backend)
    swapping = bind_program(swap_program, dsl_backend)
    for by_keyword in (False, True):
        out = State(*(to_backend_array(np.zeros(SHAPE), dsl_backend) for _ in range(2)))
        state = State(a_b, b_b)
        result = swapping(s=state, out=out) if by_keyword else swapping(state, out)
        u, v = (out.u, out.v) if result is None else result
        np.testing.assert_array_equal(to_numpy(u), b * 2.0)
        np.testing.assert_array_equal(to_numpy(v), a)


def test_a_named_tuple_is_unpacked_indexed_and_read_by_field(
    dsl_backend, to_backend_array, to_numpy, bind_program
):
    (a,), (a_b,) = _arrays(1, to_backend_array, dsl_backend)
    out = to_backend_array(np.zeros(SHAPE), dsl_backend)
    result = bind_program(pair_program, dsl_backend)(Pair(a_b, 3.0), out)
    written = out if result is None else result[0]
    np.testing.assert_allclose(to_numpy(written), a * 5.0, rtol=1e-12)


def test_a_mutable_dataclass_is_accepted_as_it_is_read_at_the_call(
    dsl_backend, to_backend_array, to_numpy, bind_program
):
    @field_operator
    def summed(m: Mutable) -> F:
        return m.u + m.v

    @program
    def mutable_program(m: Mutable, out: F):
        summed(m, out=out)

    (a, b), (a_b, b_b) = _arrays(2, to_backend_array, dsl_backend)
    out = to_backend_array(np.zeros(SHAPE), dsl_backend)
    result = bind_program(mutable_program, dsl_backend)(Mutable(a_b, b_b), out)
    written = out if result is None else result[0]
    np.testing.assert_array_equal(to_numpy(written), a + b)


def test_a_field_operator_called_directly_takes_and_writes_a_dataclass():
    a, b, x, y = (np.full(SHAPE, float(i)) for i in range(4))
    swapped.with_backend(backends.c_cpu)(State(a, b), out=State(x, y))
    np.testing.assert_array_equal(x, b * 2.0)
    np.testing.assert_array_equal(y, a)
    x[...], y[...] = 0.0, 0.0
    swapped.with_backend(backends.embedded_numpy)(s=State(a, b), out=State(x, y))
    np.testing.assert_array_equal(x, b * 2.0)


def test_repeat_keyword_calls_with_a_dataclass_run_no_stage():
    compiled = swap_program.with_backend(backends.c_cpu)
    a, b, x, y = (np.full(SHAPE, float(i)) for i in range(4))
    compiled(s=State(a, b), out=State(x, y))
    events: list[StageEvent] = []
    with subscribe(events.append):
        compiled(s=State(a, b), out=State(x, y))
    assert events == []


def test_the_ir_names_a_collections_leaves_by_field():
    ir = swap_program.frontend().ir
    assert [p.name for p in ir.params] == ["s__u", "s__v", "out__u", "out__v"]
    assert ir.shown("out__v") == "out.v"


# --------------------------------------------------------------------------- argument errors


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda a: (a, a), "argument 's' of swap_program() must be a "
         "test_named_collections.State, got a tuple of 2; pass 's' as a State(u=value, "
         "v=value)"),
        (lambda a: Mutable(a, a), "must be a test_named_collections.State, got a value of "
         "type test_named_collections.Mutable"),
    ],
    ids=["tuple", "other-class"],
)
def test_an_instance_of_another_class_is_refused_naming_the_parameter(
    make, message, dsl_backend, to_backend_array, bind_program
):
    a = to_backend_array(np.zeros(SHAPE), dsl_backend)
    with pytest.raises(ArgumentError) as caught:
        bind_program(swap_program, dsl_backend)(make(a), State(a, a))
    assert message in str(caught.value)


def test_a_plain_tuple_for_a_named_tuple_is_refused(dsl_backend, to_backend_array,
                                                    bind_program):
    a = to_backend_array(np.zeros(SHAPE), dsl_backend)
    with pytest.raises(ArgumentError, match=r"argument 'p' of pair_program\(\) must be a "
                       r"test_named_collections.Pair, got a tuple of 2"):
        bind_program(pair_program, dsl_backend)((a, 1.0), a)


def test_a_wrong_leaf_is_named_by_its_field(dsl_backend, to_backend_array, bind_program):
    a = to_backend_array(np.zeros(SHAPE), dsl_backend)
    wrong = to_backend_array(np.zeros(SHAPE, np.float32), dsl_backend)
    with pytest.raises(ArgumentError, match=r"argument 'out\.v' of swap_program\(\) must "
                       r"have dtype float64"):
        bind_program(swap_program, dsl_backend)(State(a, a), State(a, wrong))


# --------------------------------------------------------------------------- DSL errors


def _frontend_error(program_, match):
    with pytest.raises(DSLTypeError, match=match) as caught:
        program_.frontend()
    assert __file__ in str(caught.value)
    return str(caught.value)


def test_an_unknown_field_is_a_dsl_error_at_its_line():
    @field_operator
    def unknown(s: State) -> F:
        return s.w

    @program
    def unknown_program(s: State, out: F):
        unknown(s, out=out)

    message = _frontend_error(unknown_program, r"'State' has no field 'w'; its fields are u, v")
    assert "return s.w" in message


def test_an_unknown_field_of_a_program_parameter_is_a_dsl_error():
    @field_operator
    def copied(a: F) -> F:
        return a

    @program
    def unknown_program(s: State, out: F):
        copied(s.w, out=out)

    _frontend_error(unknown_program, r"'s' is a State, which has no field 'w'")


def test_a_class_with_a_field_that_is_no_field_or_scalar_is_a_dsl_error():
    @dataclasses.dataclass
    class Labelled:
        u: F
        label: str

    @field_operator
    def first(s: Labelled) -> F:
        return s.u

    @program
    def labelled_program(s: Labelled, out: F):
        first(s, out=out)

    _frontend_error(labelled_program, r"field 'label' of 'Labelled' is annotated <class 'str'>")


def test_a_dataclass_is_neither_indexed_nor_unpacked_as_in_python():
    @field_operator
    def indexed(s: State) -> F:
        return s[0]

    @field_operator
    def unpacked(s: State) -> F:
        u, v = s
        return u

    for operator in (indexed, unpacked):
        @program
        def misuse(s: State, out: F):
            operator(s, out=out)

        _frontend_error(misuse, r"is a State, a dataclass: read its fields by name")


def test_a_plain_tuple_where_a_collection_goes_is_a_dsl_error():
    @field_operator
    def from_tuple(a: F, b: F) -> State:
        return swapped((a, b))

    @program
    def tuple_program(a: F, b: F, out: State):
        from_tuple(a, b, out=out)

    _frontend_error(tuple_program, r"argument 's' of 'swapped' is a State\(u=value, "
                    r"v=value\); pass a State")


def test_returning_a_tuple_for_a_collection_is_a_dsl_error():
    @field_operator
    def as_tuple(a: F) -> State:
        return a, a

    @program
    def tuple_result(a: F, out: State):
        as_tuple(a, out=out)

    _frontend_error(tuple_result, r"returns \(value, value\) but its annotation declares "
                    r"State\(u=value, v=value\)")
