"""A tuple assignment evaluates its whole right side before it binds any name (issue 41).

``a, b = b, a`` used to bind ``a`` first and then read the new ``a`` for ``b``, so both
names held the old ``b``. In a scan body, any name bound twice used to give wrong results
(the translations read a scan's locals as assigned once).
No ``from __future__ import annotations``: the DSL reads the annotations.
"""

from pathlib import Path

import numpy as np
import pytest

from pipeline.dsl import (
    Dimension,
    DSLTypeError,
    Field,
    bool_,
    field_operator,
    float64,
    program,
    scan_operator,
)

I, K = Dimension("I"), Dimension("K")  # noqa: E741
F = Field[[I, K], float64]
SHAPE = (3, 5)


@field_operator
def swapped(a: F, b: F) -> F:
    a, b = b, a
    return a + 10.0 * b


@program
def swap_program(a: F, b: F, out: F):
    swapped(a, b, out=out)


@field_operator
def rotated(a: F, b: F, c: F) -> F:
    a, (b, c) = c, (a, b)
    return a + 10.0 * b + 100.0 * c


@program
def rotate_program(a: F, b: F, c: F, out: F):
    rotated(a, b, c, out=out)


@field_operator
def reversed_tuple(a: F, b: F) -> F:
    t = (a, b)
    t = t[1], t[0]
    return t[0] + 10.0 * t[1]


@program
def reversed_tuple_program(a: F, b: F, out: F):
    reversed_tuple(a, b, out=out)


@field_operator
def swapped_in_branches(a: F, b: F, flag: bool_) -> F:
    if flag:
        a, b = b, a
    else:
        x = a
        a = b
        b = x
    return a + 10.0 * b


@program
def branch_swap_program(a: F, b: F, flag: bool_, out: F):
    swapped_in_branches(a, b, flag, out=out)


@scan_operator(axis=K, forward=True, init=(0.0, 1.0))
def fibonacci(carry: tuple[float64, float64], x: float64) -> tuple[float64, float64]:
    a, b = carry
    a, b = b, a + b + x
    return a, b


@scan_operator(axis=K, forward=True, init=(0.0, 1.0))
def fibonacci_by_rebinding(carry: tuple[float64, float64], x: float64
                           ) -> tuple[float64, float64]:
    a, b = carry
    old = a
    a = b
    b = old + b + x
    return a, b


@field_operator
def fibonacci_first(x: F) -> F:
    a, _ = fibonacci(x)
    return a


@program
def fibonacci_program(x: F, out: F):
    fibonacci_first(x, out=out)


@field_operator
def fibonacci_by_rebinding_first(x: F) -> F:
    a, _ = fibonacci_by_rebinding(x)
    return a


@program
def fibonacci_by_rebinding_program(x: F, out: F):
    fibonacci_by_rebinding_first(x, out=out)


@field_operator
def tuple_then_value(a: F, b: F) -> F:
    t = a, b
    t = a + 10.0 * b
    return t


@program
def tuple_then_value_program(a: F, b: F, out: F):
    tuple_then_value(a, b, out=out)


@field_operator
def value_then_tuple(a: F, b: F) -> F:
    t = a
    t = b, t
    return t[0] + 10.0 * t[1]


@program
def value_then_tuple_program(a: F, b: F, out: F):
    value_then_tuple(a, b, out=out)


def _fields(count, to_backend_array, backend):
    rng = np.random.default_rng(41)
    hosts = [rng.integers(-9, 9, SHAPE).astype(np.float64) for _ in range(count)]
    return hosts, [to_backend_array(h, backend) for h in hosts]


def _run(program_, arrays, dsl_backend, to_backend_array, to_numpy, run_program, *scalars):
    out = to_backend_array(np.zeros(SHAPE), dsl_backend)
    args = (*arrays, *scalars, out)
    after = run_program(program_, dsl_backend, *args, written=(len(args) - 1,))
    return to_numpy(after[len(args) - 1])


def test_a_swap_exchanges_the_values(dsl_backend, to_backend_array, to_numpy, run_program):
    (a, b), arrays = _fields(2, to_backend_array, dsl_backend)
    result = _run(swap_program, arrays, dsl_backend, to_backend_array, to_numpy, run_program)
    np.testing.assert_array_equal(result, b + 10.0 * a)


def test_a_nested_unpacking_reads_the_values_before_binding(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    (a, b, c), arrays = _fields(3, to_backend_array, dsl_backend)
    result = _run(rotate_program, arrays, dsl_backend, to_backend_array, to_numpy, run_program)
    np.testing.assert_array_equal(result, c + 10.0 * a + 100.0 * b)


def test_a_tuple_reassigned_from_its_own_items(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    (a, b), arrays = _fields(2, to_backend_array, dsl_backend)
    result = _run(
        reversed_tuple_program, arrays, dsl_backend, to_backend_array, to_numpy, run_program
    )
    np.testing.assert_array_equal(result, b + 10.0 * a)


def test_swaps_inside_if_branches(dsl_backend, to_backend_array, to_numpy, run_program):
    (a, b), arrays = _fields(2, to_backend_array, dsl_backend)
    for flag in (True, False):
        result = _run(
            branch_swap_program, arrays, dsl_backend, to_backend_array, to_numpy, run_program,
            flag,
        )
        np.testing.assert_array_equal(result, b + 10.0 * a)


def _fibonacci_reference(x):
    expected = np.empty(SHAPE)
    a, b = np.zeros(SHAPE[0]), np.ones(SHAPE[0])
    for k in range(SHAPE[1]):
        a, b = b, a + b + x[:, k]
        expected[:, k] = a
    return expected


def test_a_swap_in_a_scan_body(dsl_backend, to_backend_array, to_numpy, run_program):
    (x,), arrays = _fields(1, to_backend_array, dsl_backend)
    result = _run(fibonacci_program, arrays, dsl_backend, to_backend_array, to_numpy, run_program)
    np.testing.assert_array_equal(result, _fibonacci_reference(x))


def test_a_name_bound_again_in_a_scan_body(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    (x,), arrays = _fields(1, to_backend_array, dsl_backend)
    result = _run(
        fibonacci_by_rebinding_program, arrays, dsl_backend, to_backend_array, to_numpy,
        run_program,
    )
    np.testing.assert_array_equal(result, _fibonacci_reference(x))


def test_a_tuple_name_bound_again_to_one_value_holds_that_value(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    (a, b), arrays = _fields(2, to_backend_array, dsl_backend)
    result = _run(
        tuple_then_value_program, arrays, dsl_backend, to_backend_array, to_numpy, run_program
    )
    np.testing.assert_array_equal(result, a + 10.0 * b)


def test_a_value_name_bound_again_to_a_tuple_holds_the_tuple(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    (a, b), arrays = _fields(2, to_backend_array, dsl_backend)
    result = _run(
        value_then_tuple_program, arrays, dsl_backend, to_backend_array, to_numpy, run_program
    )
    np.testing.assert_array_equal(result, b + 10.0 * a)


def test_unpacking_a_name_that_now_holds_one_value_is_refused_at_its_line():
    @field_operator
    def stale(a: F, b: F) -> tuple[F, F]:
        t = a, b
        t = a + b
        u, v = t
        return u, v

    @program
    def stale_program(a: F, b: F, x: F, y: F):
        stale(a, b, out=(x, y))

    with pytest.raises(DSLTypeError, match="one value unpacked into 2 name") as caught:
        stale_program.frontend()
    assert "u, v = t" in str(caught.value)


def test_a_name_of_two_shapes_after_an_if_is_refused_only_where_it_is_read():
    @field_operator
    def unread(a: F, b: F, flag: bool_) -> F:
        t = a, b
        if flag:
            t = a + b
        return a

    @field_operator
    def read(a: F, b: F, flag: bool_) -> F:
        t = a, b
        if flag:  # the if that makes t of two shapes
            t = a + b
        return t

    @program
    def unread_program(a: F, b: F, flag: bool_, out: F):
        unread(a, b, flag, out=out)

    @program
    def read_program(a: F, b: F, flag: bool_, out: F):
        read(a, b, flag, out=out)

    unread_program.frontend()  # as in Python: t is never read after the `if`
    with pytest.raises(DSLTypeError, match="'t' is read here but holds values of different "
                       "shapes on the two paths through the `if` at line") as caught:
        read_program.frontend()
    assert "return t" in str(caught.value)
    lines = Path(__file__).read_text().splitlines()
    if_line = 1 + next(i for i, line in enumerate(lines) if "the if that makes t" in line)
    assert f"at line {if_line} " in str(caught.value)


@field_operator
def nested_pair(t: tuple[F, tuple[F, F]]) -> tuple[F, tuple[F, F]]:
    return t[0], (t[1][0], t[1][1] + t[0])


def test_a_program_passes_a_tuple_argument_nested_as_the_operator_declares_it():
    @program
    def flat_argument(a: F, b: F, c: F, x: F, y: F, z: F):
        nested_pair((a, b, c), out=(x, (y, z)))

    with pytest.raises(DSLTypeError, match=r"argument 't' of 'nested_pair' is nested as "
                       r"\(value, \(value, value\)\), but this tuple is nested as "
                       r"\(value, value, value\)") as caught:
        flat_argument.frontend()
    assert "nested_pair((a, b, c)" in str(caught.value)


def test_a_programs_out_is_nested_as_the_operators_results():
    @program
    def flat_out(a: F, b: F, c: F, x: F, y: F, z: F):
        nested_pair((a, (b, c)), out=(x, y, z))

    with pytest.raises(DSLTypeError, match=r"'nested_pair' returns \(value, \(value, value\)\) "
                       r"but out= is nested as \(value, value, value\)"):
        flat_out.frontend()


def test_nested_tuple_arguments_and_results_nested_alike_run(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    @program
    def nested_alike(a: F, b: F, c: F, x: F, y: F, z: F):
        nested_pair((a, (b, c)), out=(x, (y, z)))

    (a, b, c), arrays = _fields(3, to_backend_array, dsl_backend)
    outs = [to_backend_array(np.zeros(SHAPE), dsl_backend) for _ in range(3)]
    after = run_program(nested_alike, dsl_backend, *arrays, *outs, written=(3, 4, 5))
    np.testing.assert_array_equal(to_numpy(after[3]), a)
    np.testing.assert_array_equal(to_numpy(after[4]), b)
    np.testing.assert_array_equal(to_numpy(after[5]), c + a)
