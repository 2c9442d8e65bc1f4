"""A program's parameters and outputs may be tuples, nested as in Python (issue 41).

The program is compiled with one parameter per leaf; a call flattens the user's tuples after
checking their nesting, and every check of a leaf names it as the user writes it (``t[1]``).
No ``from __future__ import annotations``: the DSL reads the annotations.
"""

import re

import numpy as np
import pytest

import backends
from pipeline import StageEvent, subscribe
from pipeline.dsl import (
    Dimension,
    DomainError,
    DSLTypeError,
    Field,
    field_operator,
    float64,
    int32,
    program,
    scan_operator,
)
from pipeline.errors import ArgumentError

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
F = Field[[I, J, K], float64]
SHAPE = (6, 5, 4)


@field_operator
def swap(t: tuple[F, F]) -> tuple[F, F]:
    return t[1], t[0]


@program
def swap_program(t: tuple[F, F], out: tuple[F, F]):
    swap(t, out=out)


@field_operator
def shifted_sum(t: tuple[F, tuple[F, float64]]) -> F:
    return t[0](I + 1) + t[1][0] * t[1][1]


@program
def nested_program(t: tuple[F, tuple[F, float64]], out: F):
    shifted_sum(t, out=out[:-1, :, :])


@field_operator
def copy(a: F) -> F:
    return a


@program
def copy_items(t: tuple[F, F], out: tuple[F, F]):
    copy(t[0], out=out[1])
    copy(t[1], out=out[0])


def _arrays(count, to_backend_array, backend):
    rng = np.random.default_rng(41)
    hosts = [rng.uniform(-1, 1, SHAPE) for _ in range(count)]
    return hosts, [to_backend_array(h, backend) for h in hosts]


def _outputs(result, given):
    """The outputs after a call: written in place, or returned by a functional backend."""
    return given if result is None else result


# --------------------------------------------------------------------------- running


def test_tuple_parameters_run_positionally_and_by_keyword(
    dsl_backend, to_backend_array, to_numpy, bind_program
):
    (a, b), (a_b, b_b) = _arrays(2, to_backend_array, dsl_backend)
    swapping = bind_program(swap_program, dsl_backend)
    for call in (
        lambda out: swapping((a_b, b_b), out),
        lambda out: swapping(t=(a_b, b_b), out=out),
        lambda out: swapping((a_b, b_b), out=out),
    ):
        given = tuple(to_backend_array(np.zeros(SHAPE), dsl_backend) for _ in range(2))
        x, y = _outputs(call(given), given)
        np.testing.assert_array_equal(to_numpy(x), b)
        np.testing.assert_array_equal(to_numpy(y), a)


def test_the_leaves_passed_flat_are_refused_also_after_a_call_that_ran(
    dsl_backend, to_backend_array, bind_program
):
    """The executable takes the leaves, but the program takes tuples: after a nested call
    ran (and its fast entry remembers those arrays), the same arrays passed flat, or by
    their leaves' names, are refused as Python would refuse them."""
    _, (a_b, b_b) = _arrays(2, to_backend_array, dsl_backend)
    x, y = (to_backend_array(np.zeros(SHAPE), dsl_backend) for _ in range(2))
    swapping = bind_program(swap_program, dsl_backend)
    for _ in range(2):
        swapping((a_b, b_b), (x, y))
    with pytest.raises(ArgumentError, match=r"takes 2 argument\(s\) \(t, out\), got 4"):
        swapping(a_b, b_b, x, y)
    with pytest.raises(ArgumentError, match="no parameter 't__0'"):
        swapping(t__0=a_b, t__1=b_b, out__0=x, out__1=y)


def test_a_nested_tuple_with_a_scalar_is_passed_as_the_operator_nests_it(
    dsl_backend, to_backend_array, to_numpy, bind_program
):
    (a, b), (a_b, b_b) = _arrays(2, to_backend_array, dsl_backend)
    out = to_backend_array(np.zeros(SHAPE), dsl_backend)
    result = bind_program(nested_program, dsl_backend)((a_b, (b_b, 3.0)), out)
    (written,) = _outputs(result, (out,))
    np.testing.assert_allclose(to_numpy(written)[:-1], a[1:] + b[:-1] * 3.0, rtol=1e-12)


def test_items_of_tuple_parameters_are_arguments_and_outputs(
    dsl_backend, to_backend_array, to_numpy, bind_program
):
    (a, b), (a_b, b_b) = _arrays(2, to_backend_array, dsl_backend)
    given = tuple(to_backend_array(np.zeros(SHAPE), dsl_backend) for _ in range(2))
    x, y = _outputs(bind_program(copy_items, dsl_backend)((a_b, b_b), given), given)
    np.testing.assert_array_equal(to_numpy(x), b)
    np.testing.assert_array_equal(to_numpy(y), a)


def test_lower_and_compile_take_tuple_arguments():
    a, b, x, y = (np.ones(SHAPE) * i for i in range(4))
    compiled_program = swap_program.with_backend(backends.c_cpu)
    lowered = compiled_program.lower((a, b), out=(x, y))
    assert re.search(r"\bp_t__0\b", lowered.as_text())  # the C pointer of t[0]
    assert [p.name for p in lowered.program.ir.params] == ["t__0", "t__1", "out__0", "out__1"]
    compiled_program.compile(t=(a, b), out=(x, y))

    events: list[StageEvent] = []
    with subscribe(events.append):
        compiled_program((a, b), (x, y))
        compiled_program(out=(x, y), t=(a, b))
    assert events == []
    np.testing.assert_array_equal(x, b)
    np.testing.assert_array_equal(y, a)


def test_keyword_calls_of_a_tuple_program_run_no_stage_after_the_first():
    compiled_program = swap_program.with_backend(backends.c_cpu)
    a, b, x, y = (np.full(SHAPE, float(i)) for i in range(4))
    compiled_program(t=(a, b), out=(x, y))
    events: list[StageEvent] = []
    with subscribe(events.append):
        for _ in range(3):
            compiled_program(t=(a, b), out=(x, y))
    assert events == []


def test_the_ir_names_each_leaf_by_its_path_and_keeps_the_nesting():
    ir = nested_program.frontend().ir
    assert [p.name for p in ir.params] == ["t__0", "t__1__0", "t__1__1", "out"]
    assert ir.tuples == (("t", ("t__0", ("t__1__0", "t__1__1"))),)
    assert ir.shown("t__1__1") == "t[1][1]"
    assert ir.written == (("t", ("t__0", ("t__1__0", "t__1__1"))), ("out", None))


# --------------------------------------------------------------------------- argument errors


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (lambda a: ((a, a, a), (a, a)), "argument 't' of swap_program() must be a tuple of 2, "
         "got a tuple of 3; pass 't' as a tuple nested as (value, value)"),
        (lambda a: ([a, a], (a, a)), "argument 't' of swap_program() must be a tuple of 2, "
         "got a list of 2 (pass a tuple)"),
        (lambda a: (a, (a, a)), "argument 't' of swap_program() must be a tuple of 2, got a "
         "value of type "),
        (lambda a: (((a, a), a), (a, a)), "argument 't[0]' of swap_program() is one field or "
         "scalar, but got a tuple of 2"),
        (lambda a: ((a, a),), "swap_program() is missing argument(s): out"),
    ],
    ids=["too-long", "list", "array", "too-deep", "missing"],
)
def test_a_tuple_argument_nested_wrongly_is_refused_naming_the_parameter(
    args, message, dsl_backend, to_backend_array, bind_program
):
    a = to_backend_array(np.zeros(SHAPE), dsl_backend)
    with pytest.raises(ArgumentError) as caught:
        bind_program(swap_program, dsl_backend)(*args(a))
    assert message in str(caught.value)


def test_a_nested_argument_missing_its_inner_tuple_names_the_item(
    dsl_backend, to_backend_array, bind_program
):
    a = to_backend_array(np.zeros(SHAPE), dsl_backend)
    with pytest.raises(ArgumentError, match=re.escape(
        "argument 't[1]' of nested_program() must be a tuple of 2, got a tuple of 3; pass 't' "
        "as a tuple nested as (value, (value, value))"
    )):
        bind_program(nested_program, dsl_backend)((a, (a, a, 1.0)), a)


def test_a_leaf_of_the_wrong_dtype_or_rank_is_named_as_the_user_indexes_it(
    dsl_backend, to_backend_array, bind_program
):
    a = to_backend_array(np.zeros(SHAPE), dsl_backend)
    wrong_dtype = to_backend_array(np.zeros(SHAPE, np.int32), dsl_backend)
    wrong_rank = to_backend_array(np.zeros(SHAPE[:2]), dsl_backend)
    nested = bind_program(nested_program, dsl_backend)
    with pytest.raises(ArgumentError, match=r"argument 't\[1\]\[0\]' of nested_program\(\) "
                       r"must have dtype float64; got int32"):
        nested((a, (wrong_dtype, 1.0)), a)
    with pytest.raises(ArgumentError, match=r"argument 't\[0\]' of nested_program\(\) must "
                       r"have 3 dimension"):
        nested((wrong_rank, (a, 1.0)), a)
    with pytest.raises(ArgumentError, match=r"argument 't\[1\]\[1\]' of nested_program\(\) is "
                       r"a float64 scalar and must be a real number"):
        nested((a, (a, "1.0")), a)


def test_a_leaf_without_its_halo_is_named_in_the_domain_error(
    dsl_backend, to_backend_array, bind_program
):
    a = to_backend_array(np.zeros(SHAPE), dsl_backend)
    short = to_backend_array(np.zeros((SHAPE[0] - 1, *SHAPE[1:])), dsl_backend)
    with pytest.raises(DomainError, match=r"field 't\[0\]' is too small along I"):
        bind_program(nested_program, dsl_backend)((short, (a, 1.0)), a)


@pytest.mark.parametrize("where", ["same tuple", "another parameter"])
def test_leaves_that_share_memory_with_an_output_are_refused_by_their_names(where):
    a, b, x = (np.zeros(SHAPE) for _ in range(3))
    swapping = swap_program.with_backend(backends.c_cpu)
    args, pattern = (
        ((a, b), (x, x)), r"output 'out\[0\]' of 'swap' shares memory with 'out\[1\]'"
    ) if where == "same tuple" else (
        ((a, b), (x, a)), r"output 'out\[1\]' of 'swap' shares memory with 't\[0\]'"
    )
    with pytest.raises(ArgumentError, match=pattern):
        swapping(*args)


# --------------------------------------------------------------------------- DSL errors


def test_an_item_out_of_range_is_a_dsl_error_at_its_line():
    @program
    def out_of_range(t: tuple[F, F], out: F):
        copy(t[2], out=out)

    with pytest.raises(DSLTypeError, match=r"'t' is a tuple of 2 item\(s\); index 2 is out "
                       r"of range") as caught:
        out_of_range.frontend()
    assert "copy(t[2], out=out)" in str(caught.value)


def test_a_tuple_sliced_as_a_whole_is_a_dsl_error():
    @program
    def sliced_tuple(t: tuple[F, F], out: tuple[F, F]):
        swap(t, out=out[1:-1, :, :])

    with pytest.raises(DSLTypeError, match=r"'out' is a tuple of 2 item\(s\): index it with "
                       r"an integer constant like out\[0\]"):
        sliced_tuple.frontend()


def test_a_tuple_passed_where_the_operator_takes_one_field_is_a_dsl_error():
    @program
    def whole_tuple(t: tuple[F, F], out: F):
        copy(t, out=out)

    with pytest.raises(DSLTypeError, match=r"argument 'a' of 'copy' is one field or scalar, "
                       r"but 't' is a tuple; pass one of its items"):
        whole_tuple.frontend()


def test_a_tuple_parameter_nested_unlike_the_operator_is_a_dsl_error():
    @program
    def flat_parameter(t: tuple[F, F, float64], out: F):
        shifted_sum(t, out=out)

    with pytest.raises(DSLTypeError, match=r"argument 't' of 'shifted_sum' is nested as "
                       r"\(value, \(value, value\)\), but this tuple is nested as "
                       r"\(value, value, value\)"):
        flat_parameter.frontend()


def test_out_given_a_tuple_parameter_nested_unlike_the_results_is_a_dsl_error():
    @program
    def nested_out(t: tuple[F, F], out: tuple[F, tuple[F]]):
        swap(t, out=out)

    with pytest.raises(DSLTypeError, match=r"'swap' returns \(value, value\) but out= is "
                       r"nested as \(value, \(value\)\)"):
        nested_out.frontend()


def test_a_scalar_item_as_out_is_a_dsl_error_naming_the_item():
    @program
    def scalar_out(t: tuple[F, float64], out: F):
        copy(out, out=t[1])

    with pytest.raises(DSLTypeError, match=r"out= names 't\[1\]', which is a scalar"):
        scalar_out.frontend()


def test_a_parameter_named_like_a_leaf_is_a_dsl_error():
    @program
    def clash(t: tuple[F, F], t__0: F, out: F):
        copy(t__0, out=out)

    with pytest.raises(DSLTypeError, match="the parameter 't__0' has the name of a tuple "
                       "parameter's leaf"):
        clash.frontend()


def test_a_tuple_point_value_of_a_scan_operator_is_a_dsl_error():
    @scan_operator(axis=K, forward=True, init=0.0)
    def tuple_point(total: float64, pair: tuple[float64, float64]) -> float64:
        return total + pair[0]

    @field_operator
    def scanned(a: F) -> F:
        return tuple_point((a, a))

    @program
    def scan_program(a: F, out: F):
        scanned(a, out=out)

    with pytest.raises(DSLTypeError, match="a scan operator's point values are scalars"):
        scan_program.frontend()


def test_int32_leaves_keep_their_dtype_through_the_tuple(
    dsl_backend, to_backend_array, to_numpy, bind_program
):
    G = Field[[I, J, K], int32]

    @field_operator
    def doubled(t: tuple[G, int32]) -> G:
        return t[0] * t[1]

    @program
    def int_program(t: tuple[G, int32], out: G):
        doubled(t, out=out)

    host = np.arange(np.prod(SHAPE), dtype=np.int32).reshape(SHAPE)
    out = to_backend_array(np.zeros(SHAPE, np.int32), dsl_backend)
    result = bind_program(int_program, dsl_backend)((to_backend_array(host, dsl_backend), 2), out)
    (written,) = _outputs(result, (out,))
    np.testing.assert_array_equal(to_numpy(written), host * 2)
