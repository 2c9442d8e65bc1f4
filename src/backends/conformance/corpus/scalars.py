"""Scalar parameters and control flow on scalars (``if``, conditional expressions).

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""


import numpy as np

from pipeline.dsl import bool_, field_operator, float32, float64, int32, int64, program

from .cases import OUT, SCALAR, F, Feature, arguments, at, bools, dom, ints
from .grid import IJK, IJK32, IJKb, IJKi32, IJKi64, J

SCALAR_PARAMETERS = Feature("scalar parameters")
SCALAR_CONTROL_FLOW = Feature("scalar control flow")

# =========================================================================== scalar parameters


@field_operator
def axpb(a: IJK, alpha: float64, beta: float64) -> IJK:
    return alpha * a + beta


@program
def axpb_program(a: IJK, alpha: float64, beta: float64, out: IJK):
    axpb(a, alpha, beta, out=out[1:, 1:, 1:])


def axpb_reference(a, alpha, beta, out):
    d = dom(out.shape, np.s_[1:, 1:, 1:])
    out[d] = alpha * at(a, d) + beta


SCALAR_PARAMETERS.add("scalar_float64_parameters", axpb_program,
    arguments(a=F(), alpha=SCALAR(-1.75), beta=SCALAR(0.3), out=OUT()), axpb_reference)


@field_operator
def scale_float32(a: IJK32, alpha: float32) -> IJK32:
    return alpha * a


@program
def scale_float32_program(a: IJK32, alpha: float32, out: IJK32):
    scale_float32(a, alpha, out=out)


def scale_float32_reference(a, alpha, out):
    out[...] = np.float32(alpha) * a


SCALAR_PARAMETERS.add("scalar_float32_parameter", scale_float32_program,
    arguments(a=F(dtype=np.float32), alpha=SCALAR(0.3), out=OUT(np.float32)),
    scale_float32_reference)


@field_operator
def scale_int32(a: IJKi32, n: int32) -> IJKi32:
    return a * n + n


@program
def scale_int32_program(a: IJKi32, n: int32, out: IJKi32):
    scale_int32(a, n, out=out)


def scale_int32_reference(a, n, out):
    out[...] = a * np.int32(n) + np.int32(n)


SCALAR_PARAMETERS.add("scalar_int32_parameter", scale_int32_program,
    arguments(a=ints, n=SCALAR(-3), out=OUT(np.int32)), scale_int32_reference)


@field_operator
def scale_int64(a: IJKi64, n: int64) -> IJKi64:
    return a - n * a(J + 1)


@program
def scale_int64_program(a: IJKi64, n: int64, out: IJKi64):
    scale_int64(a, n, out=out[:, :-1, :])


def scale_int64_reference(a, n, out):
    d = dom(out.shape, np.s_[:, :-1, :])
    out[d] = at(a, d) - np.int64(n) * at(a, d, 0, 1)


SCALAR_PARAMETERS.add("scalar_int64_parameter", scale_int64_program,
    arguments(a=lambda rng: ints(rng, dtype=np.int64), n=SCALAR(3_000_000_000),
              out=OUT(np.int64)),
    scale_int64_reference)


@field_operator
def select_by_flag(a: IJKb, b: IJKb, flag: bool_) -> IJKb:
    return (a & flag) | (b & ~flag)


@program
def select_by_flag_program(a: IJKb, b: IJKb, flag: bool_, out: IJKb):
    select_by_flag(a, b, flag, out=out)


def select_by_flag_reference(a, b, flag, out):
    flag = np.bool_(flag)
    out[...] = (a & flag) | (b & ~flag)


SCALAR_PARAMETERS.add("scalar_bool_parameter_inverted", select_by_flag_program,
    arguments(a=bools, b=bools, flag=SCALAR(False), out=OUT(np.bool_)),
    select_by_flag_reference)


# =========================================================================== scalar control flow


@field_operator
def branchy(a: IJK, s: float64, flag: bool_) -> IJK:
    x = a * 2.0
    if flag:
        y = x + s
        if s > 1.0:
            y = y * 10.0
    elif s < 0.0:
        y = -x
    else:
        y = x
        x = x + 100.0
    if s > 100.0:
        return y
    return y + x if s > 0.5 else y - x


@program
def branchy_program(a: IJK, s1: float64, s2: float64, s3: float64, flag: bool_,
                    noflag: bool_, o1: IJK, o2: IJK, o3: IJK, o4: IJK):
    branchy(a, s1, flag, out=o1[1:, :, :])
    branchy(a, s=s2, flag=flag, out=o2[:, 1:, :])
    branchy(flag=noflag, s=s3, a=a, out=o3[:, :, 1:])
    branchy(a, s1, noflag, out=o4[:-1, :, :])


def branchy_value(a, s, flag):
    """The definition itself, on NumPy arrays and Python scalars: compiled control flow must
    choose as Python does."""
    return branchy.function(a, s, flag)


def branchy_reference(a, s1, s2, s3, flag, noflag, o1, o2, o3, o4):
    o1[1:, :, :] = branchy_value(a, s1, flag)[1:, :, :]
    o2[:, 1:, :] = branchy_value(a, s2, flag)[:, 1:, :]
    o3[:, :, 1:] = branchy_value(a, s3, not flag)[:, :, 1:]
    o4[:-1, :, :] = branchy_value(a, s1, not flag)[:-1, :, :]


SCALAR_CONTROL_FLOW.add("if_statements_and_keywords", branchy_program,
    arguments(a=F(), s1=SCALAR(2.0), s2=SCALAR(-1.0), s3=SCALAR(200.0), flag=SCALAR(True),
              noflag=SCALAR(False), o1=OUT(), o2=OUT(), o3=OUT(), o4=OUT()),
    branchy_reference, outputs=("o1", "o2", "o3", "o4"))


@field_operator
def branch_local(a: IJK, b: IJK, s: float64) -> IJK:
    if s > 0.0:
        tmp = a * 2.0  # assigned in one branch only, and read in that branch only
        result = tmp + b
    else:
        result = b
    return result


@program
def branch_local_program(a: IJK, b: IJK, s1: float64, s2: float64, o1: IJK, o2: IJK):
    branch_local(a, b, s1, out=o1[1:, :, :])
    branch_local(a, b, s2, out=o2[:, :-1, :])


def branch_local_reference(a, b, s1, s2, o1, o2):
    o1[1:, :, :] = branch_local.function(a, b, s1)[1:, :, :]
    o2[:, :-1, :] = branch_local.function(a, b, s2)[:, :-1, :]


SCALAR_CONTROL_FLOW.add("if_local_of_one_branch", branch_local_program,
    arguments(a=F(), b=F(), s1=SCALAR(1.5), s2=SCALAR(-1.5), o1=OUT(), o2=OUT()),
    branch_local_reference, outputs=("o1", "o2"))


@field_operator
def early_returns(a: IJK, b: IJK, s: float64) -> IJK:
    if s > 2.0:
        pass
    else:
        if s < -2.0:
            return b  # a return in the else branch only, nested
        x = a + 1.0
        if s > 0.0:
            if s > 1.0:
                return x  # a return in a nested `if` whose enclosing block continues
            x = x * 2.0
        else:
            return a - x
        return x + b
    if s > 3.0:
        return a * 3.0
    else:
        return a
    return b  # unreachable, as in Python


@program
def early_returns_program(a: IJK, b: IJK, s1: float64, s2: float64, s3: float64,
                          s4: float64, s5: float64, s6: float64, o1: IJK, o2: IJK, o3: IJK,
                          o4: IJK, o5: IJK, o6: IJK):
    early_returns(a, b, s1, out=o1)
    early_returns(a, b, s2, out=o2)
    early_returns(a, b, s3, out=o3)
    early_returns(a, b, s4, out=o4)
    early_returns(a, b, s5, out=o5)
    early_returns(a, b, s6, out=o6)


def early_returns_reference(a, b, s1, s2, s3, s4, s5, s6, o1, o2, o3, o4, o5, o6):
    for s, o in ((s1, o1), (s2, o2), (s3, o3), (s4, o4), (s5, o5), (s6, o6)):
        o[...] = early_returns.function(a, b, s)


SCALAR_CONTROL_FLOW.add("if_returns_on_every_path", early_returns_program,
    arguments(a=F(), b=F(), s1=SCALAR(3.5), s2=SCALAR(2.5), s3=SCALAR(1.5), s4=SCALAR(0.5),
              s5=SCALAR(-1.0), s6=SCALAR(-3.0), o1=OUT(), o2=OUT(), o3=OUT(), o4=OUT(),
              o5=OUT(), o6=OUT()),
    early_returns_reference, outputs=("o1", "o2", "o3", "o4", "o5", "o6"))


