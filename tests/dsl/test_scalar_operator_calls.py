"""A field operator that calls another with scalars only runs on every backend (issue 13).

Embedded, the inner call used to ask for ``out=`` as if the user had called it directly.
No ``from __future__ import annotations``: the DSL reads the annotations.
"""

import numpy as np

from pipeline.dsl import Dimension, Field, field_operator, int32, program

I = Dimension("I")  # noqa: E741
FI = Field[[I], int32]


@field_operator
def plus_one(a: int32) -> FI:
    return a + 1


@field_operator
def calls_plus_one(a: int32) -> FI:
    return plus_one(a)


@program
def scalar_calls(a: int32, out: FI):
    calls_plus_one(a, out=out)


def test_a_field_operator_calling_another_with_scalars_only(dsl_backend, to_backend_array,
                                                             to_numpy, run_program):
    out = to_backend_array(np.zeros(4, np.int32), dsl_backend)
    after = run_program(scalar_calls, dsl_backend, 3, out, written=(1,))
    np.testing.assert_array_equal(to_numpy(after[1]), np.full(4, 4, np.int32))
