"""A dtype called on a tuple converts each item, as ``astype`` does (issue 41):
``float32((a, b))`` is ``(float32(a), float32(b))``, nested tuples and collections alike. No
``from __future__ import annotations``: the DSL reads the annotations.
"""

import dataclasses

import numpy as np
import pytest

from pipeline.dsl import (
    Dimension,
    DSLTypeError,
    Field,
    field_operator,
    float32,
    float64,
    int32,
    program,
)

I, J = Dimension("I"), Dimension("J")  # noqa: E741
F64 = Field[[I, J], float64]
F32 = Field[[I, J], float32]
I32 = Field[[I, J], int32]
SHAPE = (6, 5)


@dataclasses.dataclass(frozen=True)
class Wide:
    u: F64
    v: F64


@field_operator
def narrowed(t: tuple[F64, F64], w: Wide, s: float64) -> tuple[F32, tuple[I32, F32], F32]:
    a, b = float32(t)
    counts, scaled = int32((b * 10.0, w.u * s)), float32(w)
    return a, (counts[0], float32((scaled.v, s))[0]), scaled.u


@program
def narrowing(t: tuple[F64, F64], w: Wide, s: float64, out: tuple[F32, tuple[I32, F32], F32]):
    narrowed(t, w, s, out=out)


def test_a_dtype_converts_each_item_of_a_tuple_and_a_collection(
    dsl_backend, to_backend_array, to_numpy, run_program
):
    rng = np.random.default_rng(5)
    a, b, u, v = (rng.uniform(-3.0, 3.0, SHAPE) for _ in range(4))

    def put(array):
        return to_backend_array(array, dsl_backend)

    out = (put(np.zeros(SHAPE, np.float32)),
           (put(np.zeros(SHAPE, np.int32)), put(np.zeros(SHAPE, np.float32))),
           put(np.zeros(SHAPE, np.float32)))
    after = run_program(narrowing, dsl_backend, (put(a), put(b)), Wide(put(u), put(v)), 2.0,
                        out, written=(3,))
    first, (counts, second), third = after[3]
    np.testing.assert_array_equal(to_numpy(first), a.astype(np.float32))
    expected_counts = (b.astype(np.float32) * np.float32(10.0)).astype(np.int32)
    np.testing.assert_array_equal(to_numpy(counts), expected_counts)
    np.testing.assert_array_equal(to_numpy(second), v.astype(np.float32))
    np.testing.assert_array_equal(to_numpy(third), u.astype(np.float32))


def _frontend_error(operator, match):
    @program
    def calling(t: tuple[F64, F64], out: F32):
        operator(t, out=out)

    with pytest.raises(DSLTypeError, match=match) as caught:
        calling.frontend()
    assert __file__ in str(caught.value)
    return str(caught.value)


def test_a_converted_tuple_where_one_value_goes_is_a_dsl_error_at_its_line():
    @field_operator
    def summed(t: tuple[F64, F64]) -> F32:
        return float32(t) + 1.0

    message = _frontend_error(summed, r"'float32\(t\)' is a tuple of 2 value\(s\), not a "
                              r"single value")
    assert "return float32(t) + 1.0" in message


def test_a_conversion_of_two_values_is_a_dsl_error():
    @field_operator
    def two(t: tuple[F64, F64]) -> F32:
        return float32(t[0], t[1])

    _frontend_error(two, r"float32\(\) takes one value")
