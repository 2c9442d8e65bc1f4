"""Vertical scans: forward and backward, tuple carries, the tridiagonal solve and
the vertical advection of the harness's workloads.

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""


import numpy as np

from benchmarks.workloads import WORKLOADS, solve_tridiagonal, thomas_backward, thomas_forward
from pipeline.dsl import (
    Field,
    bool_,
    field_operator,
    float64,
    int64,
    maximum,
    program,
    scan_operator,
    where,
)

from .cases import OUT, SCALAR, F, Feature, arguments, at, bools, dom
from .grid import IJK, KF, SHAPE_2D, I, J, K

SCANS = Feature("scans")

# =========================================================================== scans


Ii64 = Field[[I], int64]
IJf = Field[[I, J], float64]




@program
def tridiagonal_program(a: IJK, b: IJK, c: IJK, d: IJK, cp: IJK, dp: IJK, x: IJK):
    thomas_forward(a, b, c, d, out=(cp[1:, :-1, :], dp[1:, :-1, :]))
    thomas_backward(cp, dp, out=x[1:, :-1, :])


def thomas(a, b, c, d):
    """The Thomas algorithm along the last axis, whole planes at a time."""
    cp, dp, x = (np.zeros_like(a) for _ in range(3))
    previous_c = previous_d = np.zeros(a.shape[:-1])
    for k in range(a.shape[-1]):
        divided = 1.0 / (b[..., k] - a[..., k] * previous_c)
        previous_c, previous_d = (c[..., k] * divided,
                                  (d[..., k] - a[..., k] * previous_d) * divided)
        cp[..., k], dp[..., k] = previous_c, previous_d
    above = np.zeros(a.shape[:-1])
    for k in reversed(range(a.shape[-1])):
        above = dp[..., k] - cp[..., k] * above
        x[..., k] = above
    return cp, dp, x


def tridiagonal_reference(a, b, c, d, cp, dp, x):
    d_ = dom(cp.shape, np.s_[1:, :-1, :])
    rcp, rdp, rx = thomas(a[d_], b[d_], c[d_], d[d_])
    cp[d_], dp[d_], x[d_] = rcp, rdp, rx


SCANS.add("scan_tridiagonal_two_calls", tridiagonal_program,
    arguments(a=F(0, 1), b=F(3, 4), c=F(0, 1), d=F(), cp=OUT(), dp=OUT(), x=OUT()),
    tridiagonal_reference, outputs=("cp", "dp", "x"), rtol=1e-10, atol=1e-12)


@program
def fused_tridiagonal_program(a: IJK, b: IJK, c: IJK, d: IJK, x: IJK):
    solve_tridiagonal(a, b, c, d, out=x[:, 1:, 1:-1])


def fused_tridiagonal_reference(a, b, c, d, x):
    d_ = dom(x.shape, np.s_[:, 1:, 1:-1])
    x[d_] = thomas(a[d_], b[d_], c[d_], d[d_])[2]


SCANS.add("scan_tridiagonal_forward_and_backward_in_one_call", fused_tridiagonal_program,
    arguments(a=F(0, 1), b=F(3, 4), c=F(0, 1), d=F(), x=OUT()),
    fused_tridiagonal_reference, outputs=("x",), rtol=1e-10, atol=1e-12)


def vertical_advection_reference(wcon, u_stage, u_pos, utens, utens_stage, dtr_stage, out):
    workload = WORKLOADS["vertical_advection"]
    out[workload.domain] = workload.kernel(np, wcon, u_stage, u_pos, utens, utens_stage,
                                           dtr_stage)


SCANS.add("workload_vertical_advection", WORKLOADS["vertical_advection"].program,
    arguments(wcon=F(), u_stage=F(), u_pos=F(), utens=F(), utens_stage=F(),
              dtr_stage=SCALAR(3.0), out=OUT()),
    vertical_advection_reference, rtol=1e-10, atol=1e-12)


@scan_operator(axis=K, forward=True, init=0.0)
def damped_sum(total: float64, value: float64, weight: float64) -> float64:
    return total * weight + value


@field_operator
def running_sum(f: IJK, weight: float64) -> IJK:
    return 2.0 * damped_sum(f(K - 1) + f(I + 1), weight) - f


@program
def running_sum_program(f: IJK, weight: float64, out: IJK):
    running_sum(f, weight, out=out[:-1, :, 1:])


def running_sum_reference(f, weight, out):
    d = dom(out.shape, np.s_[:-1, :, 1:])
    values = at(f, d, 0, 0, -1) + at(f, d, 1, 0, 0)
    total = np.zeros(values.shape[:2])
    result = np.empty_like(values)
    for k in range(values.shape[2]):
        total = total * weight + values[..., k]
        result[..., k] = total
    out[d] = 2.0 * result - at(f, d)


SCANS.add("scan_inside_a_field_operator", running_sum_program,
    arguments(f=F(), weight=SCALAR(0.75), out=OUT()), running_sum_reference, rtol=1e-11)


@scan_operator(axis=I, forward=False, init=(0.0, 0))
def count_and_max(state: tuple[float64, int64], value: float64, flag: bool_
                  ) -> tuple[float64, int64]:
    largest, count = state
    return maximum(largest, value), count + where(flag, 1, 0)


@field_operator
def from_the_east(value: IJf, flag: Field[[I, J], bool_]) -> tuple[IJf, Field[[I, J], int64]]:
    largest, count = count_and_max(value, flag)
    return largest, count


@program
def backward_along_i_program(value: IJf, flag: Field[[I, J], bool_], largest: IJf,
                             count: Field[[I, J], int64]):
    from_the_east(value, flag, out=(largest[1:, 1:], count[1:, 1:]))


def backward_along_i_reference(value, flag, largest, count):
    sub, subflag = value[1:, 1:], flag[1:, 1:]
    best = np.zeros(sub.shape[1])
    seen = np.zeros(sub.shape[1], dtype=np.int64)
    for i in reversed(range(sub.shape[0])):
        best = np.maximum(best, sub[i])
        seen = seen + subflag[i]
        largest[1 + i, 1:], count[1 + i, 1:] = best, seen


SCANS.add("scan_backward_along_i_mixed_carry", backward_along_i_program,
    arguments(value=F(-1, 1, shape=SHAPE_2D), flag=lambda rng: bools(rng, SHAPE_2D),
              largest=OUT(shape=SHAPE_2D), count=OUT(np.int64, SHAPE_2D)),
    backward_along_i_reference, outputs=("largest", "count"))


@scan_operator(axis=K, forward=True, init=1.0)
def product_scan(product: float64, value: float64) -> float64:
    return product * value


@program
def column_product_program(f: KF, out: KF):
    product_scan(f, out=out[2:])


def column_product_reference(f, out):
    out[2:] = np.cumprod(f[2:])


SCANS.add("scan_one_column", column_product_program,
    arguments(f=F(0.5, 1.5, shape=(7,)), out=OUT(shape=(7,))), column_product_reference,
    rtol=1e-12)


@scan_operator(axis=K, forward=False, init=0.0)
def damped_sum_down(total: float64, value: float64, weight: float64) -> float64:
    return total * weight + value


@field_operator
def passes(f: IJK) -> tuple[IJK, IJK]:
    up = damped_sum(f, 0.5)
    chained = damped_sum(up * 2.0, 0.25)  # reads a forward sweep: the same pass
    down = damped_sum_down(up, 0.5)  # reads a forward sweep: a second pass
    again = damped_sum(down + f(I - 1), 0.75)  # reads the backward one: a third pass
    return chained, again - up


@program
def passes_program(f: IJK, o1: IJK, o2: IJK):
    passes(f, out=(o1[1:, :, :], o2[1:, :, :]))


def passes_reference(f, o1, o2):
    def sweep(values, weight, forward):
        total, result = np.zeros(values.shape[:2]), np.empty_like(values)
        levels = range(values.shape[2]) if forward else reversed(range(values.shape[2]))
        for k in levels:
            total = total * weight + values[..., k]
            result[..., k] = total
        return result

    inner = f[1:]
    up = sweep(inner, 0.5, True)
    o1[1:] = sweep(up * 2.0, 0.25, True)
    down = sweep(up, 0.5, False)
    o2[1:] = sweep(down + f[:-1], 0.75, True) - up


SCANS.add("scan_three_passes_and_a_chain", passes_program,
    arguments(f=F(), o1=OUT(), o2=OUT()), passes_reference, outputs=("o1", "o2"), rtol=1e-11)


