"""Locals, inlined calls of field operators, and programs of several calls.

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""


import numpy as np

from pipeline.dsl import field_operator, float64, program

from .arithmetic import arith_fields
from .cases import OUT, SCALAR, F, Feature, arguments, at, dom
from .grid import IJK, I, J, K
from .workloads import lap_at, laplacian

LOCALS = Feature("locals")
INLINED_CALLS = Feature("inlined calls")
MULTI_CALL_PROGRAMS = Feature("multi-call programs")

# =========================================================================== locals


@field_operator
def locals_chain(a: IJK, b: IJK) -> IJK:
    t = a + b
    u = t * t
    return u - a


@program
def locals_chain_program(a: IJK, b: IJK, out: IJK):
    locals_chain(a, b, out=out)


def locals_chain_reference(a, b, out):
    t = a + b
    out[...] = t * t - a


LOCALS.add("local_variables", locals_chain_program, arguments(a=F(), b=F(), out=OUT()),
    locals_chain_reference)


@field_operator
def shifted_local(f: IJK) -> IJK:
    t = f(I + 1) - f
    return t - t(I - 1)


@program
def shifted_local_program(f: IJK, out: IJK):
    shifted_local(f, out=out[1:-1, :, :])


def shifted_local_reference(f, out):
    d = dom(out.shape, np.s_[1:-1, :, :])

    def t(di):
        return at(f, d, di + 1) - at(f, d, di)

    out[d] = t(0) - t(-1)


LOCALS.add("shifted_local", shifted_local_program, arguments(f=F(), out=OUT()),
    shifted_local_reference)


@field_operator
def shifted_locals_jk(f: IJK) -> IJK:
    t = f(J + 1) + f(K - 1)
    u = t(K + 1) - t
    return u(J - 1)


@program
def shifted_locals_jk_program(f: IJK, out: IJK):
    shifted_locals_jk(f, out=out[:, 1:, 1:-1])


def shifted_locals_jk_reference(f, out):
    d = dom(out.shape, np.s_[:, 1:, 1:-1])

    def t(dj, dk):
        return at(f, d, 0, dj + 1, dk) + at(f, d, 0, dj, dk - 1)

    def u(dj, dk):
        return t(dj, dk + 1) - t(dj, dk)

    out[d] = u(-1, 0)


LOCALS.add("shifted_locals_in_j_and_k", shifted_locals_jk_program, arguments(f=F(), out=OUT()),
    shifted_locals_jk_reference)


# =========================================================================== inlined calls


@field_operator
def bilaplacian(f: IJK) -> IJK:
    return laplacian(laplacian(f))


@program
def bilaplacian_program(f: IJK, out: IJK):
    bilaplacian(f, out=out[2:-2, 2:-2, :])


def bilaplacian_reference(f, out):
    d = dom(out.shape, np.s_[2:-2, 2:-2, :])
    out[d] = (-4.0 * lap_at(f, d) + lap_at(f, d, 1, 0) + lap_at(f, d, -1, 0)
              + lap_at(f, d, 0, 1) + lap_at(f, d, 0, -1))


INLINED_CALLS.add("nested_call_bilaplacian", bilaplacian_program, arguments(f=F(), out=OUT()),
    bilaplacian_reference)


@field_operator
def axpy(x: IJK, y: IJK, alpha: float64) -> IJK:
    return alpha * x + y


@field_operator
def smooth_step(f: IJK, g: IJK, alpha: float64) -> IJK:
    return axpy(laplacian(f), g, alpha)


@program
def smooth_step_program(f: IJK, g: IJK, alpha: float64, out: IJK):
    smooth_step(f, g, alpha, out=out[1:-1, 1:-1, :])


def smooth_step_reference(f, g, alpha, out):
    d = dom(out.shape, np.s_[1:-1, 1:-1, :])
    out[d] = alpha * lap_at(f, d) + at(g, d)


INLINED_CALLS.add("nested_call_with_scalar_passed_through", smooth_step_program,
    arguments(f=F(), g=F(), alpha=SCALAR(0.125), out=OUT()), smooth_step_reference)


@field_operator
def lap_gradient(f: IJK) -> IJK:
    lap_field = laplacian(f)
    return lap_field(I + 1) - lap_field


@program
def lap_gradient_program(f: IJK, out: IJK):
    lap_gradient(f, out=out[1:-2, 1:-1, :])


def lap_gradient_reference(f, out):
    d = dom(out.shape, np.s_[1:-2, 1:-1, :])
    out[d] = lap_at(f, d, 1) - lap_at(f, d)


INLINED_CALLS.add("nested_call_result_shifted", lap_gradient_program, arguments(f=F(), out=OUT()),
    lap_gradient_reference)


@field_operator
def diff_i(f: IJK) -> IJK:
    return f(I + 1) - f


@field_operator
def diff_product(a: IJK, b: IJK) -> IJK:
    return diff_i(a) * diff_i(b)


@program
def diff_product_program(a: IJK, b: IJK, out: IJK):
    diff_product(a, b, out=out[:-1, :, :])


def diff_product_reference(a, b, out):
    d = dom(out.shape, np.s_[:-1, :, :])
    out[d] = (at(a, d, 1) - at(a, d)) * (at(b, d, 1) - at(b, d))


INLINED_CALLS.add("nested_calls_of_one_operator_on_two_fields", diff_product_program,
    arguments(a=F(), b=F(), out=OUT()), diff_product_reference)


# =========================================================================== multi-call programs


@program
def two_stage_laplacian(inp: IJK, tmp: IJK, out: IJK):
    laplacian(inp, out=tmp[1:-1, 1:-1, :])
    laplacian(tmp, out=out[2:-2, 2:-2, :])


def two_stage_laplacian_reference(inp, tmp, out):
    d1 = dom(tmp.shape, np.s_[1:-1, 1:-1, :])
    tmp[d1] = lap_at(inp, d1)
    d2 = dom(out.shape, np.s_[2:-2, 2:-2, :])
    out[d2] = lap_at(tmp, d2)


MULTI_CALL_PROGRAMS.add("two_calls_through_a_temporary", two_stage_laplacian,
    arguments(inp=F(), tmp=OUT(), out=OUT()), two_stage_laplacian_reference,
    outputs=("tmp", "out"))


@field_operator
def double(f: IJK) -> IJK:
    return 2.0 * f


@field_operator
def minus(f: IJK) -> IJK:
    return -f


@program
def split_k_program(inp: IJK, out: IJK):
    double(inp, out=out[:, :, :2])
    minus(inp, out=out[:, :, 2:])


def split_k_reference(inp, out):
    out[:, :, :2] = 2.0 * inp[:, :, :2]
    out[:, :, 2:] = -inp[:, :, 2:]


MULTI_CALL_PROGRAMS.add(
    "two_calls_writing_disjoint_k_ranges", split_k_program, arguments(inp=F(), out=OUT()),
    split_k_reference)


@program
def three_stage_program(a: IJK, b: IJK, alpha: float64, tmp: IJK, x: IJK, out: IJK):
    arith_fields(a, b, out=tmp)
    laplacian(tmp, out=x[1:-1, 1:-1, :])
    axpy(x, a, alpha, out=out[1:-1, 2:-2, 1:])


def three_stage_reference(a, b, alpha, tmp, x, out):
    tmp[...] = a + b - a * b
    d = dom(x.shape, np.s_[1:-1, 1:-1, :])
    x[d] = lap_at(tmp, d)
    d = dom(out.shape, np.s_[1:-1, 2:-2, 1:])
    out[d] = alpha * at(x, d) + at(a, d)


MULTI_CALL_PROGRAMS.add("three_calls_with_scalar_and_temporaries", three_stage_program,
    arguments(a=F(), b=F(), alpha=SCALAR(-0.5), tmp=OUT(), x=OUT(), out=OUT()),
    three_stage_reference, outputs=("tmp", "x", "out"))


@program
def same_operator_twice(a: IJK, b: IJK, x: IJK, y: IJK):
    laplacian(a, out=x[1:-1, 1:-1, :])
    laplacian(b, out=y[2:-2, 1:-1, 1:])


def same_operator_twice_reference(a, b, x, y):
    d = dom(x.shape, np.s_[1:-1, 1:-1, :])
    x[d] = lap_at(a, d)
    d = dom(y.shape, np.s_[2:-2, 1:-1, 1:])
    y[d] = lap_at(b, d)


MULTI_CALL_PROGRAMS.add("same_operator_called_twice", same_operator_twice,
    arguments(a=F(), b=F(), x=OUT(), y=OUT()), same_operator_twice_reference,
    outputs=("x", "y"))


