"""Broadcasting, shifts, out slices and ``domain=``, boundary conditions, and the
programs whose reach misses their input (not cases: they must raise ``DomainError``).

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""


import numpy as np

from pipeline.dsl import concat_where, field_operator, int32, int64, program

from .cases import OUT, SCALAR, F, Feature, MissingHalo, arguments, at, at_ij, dom
from .grid import IJ, IJK, IK, KF, SHAPE, SHAPE_2D, I, IJKb, J, K

BROADCASTING = Feature("broadcasting")
SHIFTS_AND_DOMAINS = Feature("shifts and domains")
BOUNDARY_CONDITIONS = Feature("boundary conditions")

# =========================================================================== broadcasting


@field_operator
def add_ij(f: IJK, g: IJ) -> IJK:
    return f + g


@program
def add_ij_program(f: IJK, g: IJ, out: IJK):
    add_ij(f, g, out=out)


def add_ij_reference(f, g, out):
    out[...] = f + g[:, :, None]


BROADCASTING.add(
    "broadcast_ij_field", add_ij_program, arguments(f=F(), g=F(shape=SHAPE_2D), out=OUT()),
    add_ij_reference)


@field_operator
def scale_by_shifted_ij(f: IJK, g: IJ) -> IJK:
    return f * g(I + 1, J - 1) + g


@program
def scale_by_shifted_ij_program(f: IJK, g: IJ, out: IJK):
    scale_by_shifted_ij(f, g, out=out[:-1, 1:, :])


def scale_by_shifted_ij_reference(f, g, out):
    d = dom(out.shape, np.s_[:-1, 1:, :])
    out[d] = at(f, d) * at_ij(g, d, 1, -1) + at_ij(g, d)


BROADCASTING.add("broadcast_shifted_ij_field", scale_by_shifted_ij_program,
    arguments(f=F(), g=F(shape=SHAPE_2D), out=OUT()), scale_by_shifted_ij_reference)


@field_operator
def laplacian_2d(f: IJ) -> IJ:
    return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)


@program
def laplacian_2d_program(inp: IJ, out: IJ):
    laplacian_2d(inp, out=out[1:-1, 1:-1])


def laplacian_2d_reference(inp, out):
    d = dom(out.shape, np.s_[1:-1, 1:-1])
    out[d] = (-4.0 * at(inp, d) + at(inp, d, 1) + at(inp, d, -1) + at(inp, d, 0, 1)
              + at(inp, d, 0, -1))


BROADCASTING.add("two_dimensional_program", laplacian_2d_program,
    arguments(inp=F(shape=SHAPE_2D), out=OUT(shape=SHAPE_2D)), laplacian_2d_reference)


@field_operator
def scale_by_profile(f: IJK, p: KF) -> IJK:
    return f * p + p(K + 1)


@program
def scale_by_profile_program(f: IJK, p: KF, out: IJK):
    scale_by_profile(f, p, out=out[:, :, :-1])


def scale_by_profile_reference(f, p, out):
    d = dom(out.shape, np.s_[:, :, :-1])
    out[d] = at(f, d) * at(p, d[2:])[None, None, :] + at(p, d[2:], 1)[None, None, :]


BROADCASTING.add("broadcast_shifted_k_profile", scale_by_profile_program,
    arguments(f=F(), p=F(shape=SHAPE[2:]), out=OUT()), scale_by_profile_reference)


@field_operator
def subtract_ik(f: IJK, h: IK) -> IJK:
    return f - h


@program
def subtract_ik_program(f: IJK, h: IK, out: IJK):
    subtract_ik(f, h, out=out)


def subtract_ik_reference(f, h, out):
    out[...] = f - h[:, None, :]


BROADCASTING.add("broadcast_ik_field_by_dimension_name", subtract_ik_program,
    arguments(f=F(), h=F(shape=(SHAPE[0], SHAPE[2])), out=OUT()), subtract_ik_reference)


# =========================================================================== shifts and domains


@field_operator
def asymmetric_shift(f: IJK) -> IJK:
    return f(I - 2, J + 1)


@program
def asymmetric_shift_program(f: IJK, out: IJK):
    asymmetric_shift(f, out=out[2:, :-1, :])


def asymmetric_shift_reference(f, out):
    d = dom(out.shape, np.s_[2:, :-1, :])
    out[d] = at(f, d, -2, 1)


SHIFTS_AND_DOMAINS.add(
    "asymmetric_shift_in_one_call", asymmetric_shift_program, arguments(f=F(), out=OUT()),
    asymmetric_shift_reference)


@field_operator
def k_second_difference(f: IJK) -> IJK:
    return f(K + 1) - 2.0 * f + f(K - 1)


@program
def k_second_difference_program(f: IJK, out: IJK):
    k_second_difference(f, out=out[:, :, 1:-1])


def k_second_difference_reference(f, out):
    d = dom(out.shape, np.s_[:, :, 1:-1])
    out[d] = at(f, d, 0, 0, 1) - 2.0 * at(f, d) + at(f, d, 0, 0, -1)


SHIFTS_AND_DOMAINS.add("shifts_in_k", k_second_difference_program, arguments(f=F(), out=OUT()),
    k_second_difference_reference)


@field_operator
def three_dim_shift(f: IJK) -> IJK:
    return f(I - 1, J - 1, K + 1) + f(I + 2)


@program
def three_dim_shift_program(f: IJK, out: IJK):
    three_dim_shift(f, out=out[1:-2, 1:, :-1])


def three_dim_shift_reference(f, out):
    d = dom(out.shape, np.s_[1:-2, 1:, :-1])
    out[d] = at(f, d, -1, -1, 1) + at(f, d, 2)


SHIFTS_AND_DOMAINS.add(
    "shift_in_three_dimensions_at_once", three_dim_shift_program, arguments(f=F(), out=OUT()),
    three_dim_shift_reference)


@field_operator
def different_halos(f: IJK) -> IJK:
    return f(I + 1, J - 2) + f(I - 3) * f(K + 2)


@program
def different_halos_program(f: IJK, out: IJK):
    different_halos(f, out=out[3:-1, 2:, :-2])


def different_halos_reference(f, out):
    d = dom(out.shape, np.s_[3:-1, 2:, :-2])
    out[d] = at(f, d, 1, -2) + at(f, d, -3) * at(f, d, 0, 0, 2)


SHIFTS_AND_DOMAINS.add("different_halo_per_dimension_and_side", different_halos_program,
    arguments(f=F(), out=OUT()), different_halos_reference)


@field_operator
def cross_difference(f: IJK) -> IJK:
    return f(I + 1) - f(J - 1)


@program
def explicit_bounds_program(f: IJK, out: IJK):
    cross_difference(f, out=out[2:7, 1:5, 1:3])


def explicit_bounds_reference(f, out):
    d = dom(out.shape, np.s_[2:7, 1:5, 1:3])
    out[d] = at(f, d, 1) - at(f, d, 0, -1)


SHIFTS_AND_DOMAINS.add(
    "out_slice_with_explicit_bounds", explicit_bounds_program, arguments(f=F(), out=OUT()),
    explicit_bounds_reference)


@program
def negative_start_program(f: IJK, out: IJK):
    cross_difference(f, out=out[1:9, -8:-1, 0:])


def negative_start_reference(f, out):
    d = dom(out.shape, np.s_[1:9, -8:-1, 0:])
    out[d] = at(f, d, 1) - at(f, d, 0, -1)


SHIFTS_AND_DOMAINS.add(
    "out_slice_with_negative_start", negative_start_program, arguments(f=F(), out=OUT()),
    negative_start_reference)


# =========================================================================== domains


@field_operator
def doubled(f: IJK) -> IJK:
    return 2.0 * f(I - 1)


@program
def domain_program(f: IJK, lo: int64, hi: int32, out: IJK, other: IJK):
    doubled(f, out=out, domain={I: (1, hi), K: (lo, lo + 3)})
    doubled(f, out=other[:, 1:, :], domain={I: (lo, 7)})


def domain_reference(f, lo, hi, out, other):
    out[1:hi, :, lo:lo + 3] = 2.0 * f[0:hi - 1, :, lo:lo + 3]
    other[lo:7, 1:, :] = 2.0 * f[lo - 1:6, 1:, :]


SHIFTS_AND_DOMAINS.add("domain_keyword_with_scalar_bounds", domain_program,
    arguments(f=F(), lo=SCALAR(2), hi=SCALAR(np.int32(8)), out=OUT(), other=OUT()),
    domain_reference, outputs=("out", "other"))


# =========================================================================== boundary conditions



@field_operator
def vertical_boundaries(f: IJK, n: int64) -> tuple[IJK, IJKb]:
    inner = 0.5 * (f(K - 1) + f(K + 1))
    ends = concat_where(K == 0, 0.0, concat_where(K == n - 1, f(K - 1) * 10.0, inner))
    mask = concat_where(~(K > 2) & (K != 1), f > 0.0, f < -0.5)
    return ends, mask


@program
def vertical_boundaries_program(f: IJK, n: int64, ends: IJK, mask: IJKb):
    vertical_boundaries(f, n, out=(ends[1:, :, :], mask[1:, :, :]))


def vertical_boundaries_reference(f, n, ends, mask):
    k = np.arange(f.shape[2])
    inner = np.zeros_like(f)
    inner[:, :, 1:-1] = 0.5 * (f[:, :, :-2] + f[:, :, 2:])
    expected = np.where(k == 0, 0.0, inner)
    expected[:, :, n - 1] = f[:, :, n - 2] * 10.0
    ends[1:] = expected[1:]
    mask[1:] = np.where(~(k > 2) & (k != 1), f > 0.0, f < -0.5)[1:]


BOUNDARY_CONDITIONS.add("concat_where_vertical_boundaries", vertical_boundaries_program,
    arguments(f=F(), n=SCALAR(SHAPE[2]), ends=OUT(), mask=OUT(np.bool_)),
    vertical_boundaries_reference, outputs=("ends", "mask"))


@field_operator
def corner_and_shifted(f: IJK, m: int32) -> IJK:
    below = concat_where(K == 0, f, f(K - 1))  # read shifted below: the condition moves too
    corner = concat_where((I < m) & (J >= 2), -f, f)
    return below(K + 1) - below + corner


@program
def corner_and_shifted_program(f: IJK, m: int32, out: IJK):
    corner_and_shifted(f, m, out=out[:, :, :-1])


def corner_and_shifted_reference(f, m, out):
    i, j = np.arange(f.shape[0])[:, None, None], np.arange(f.shape[1])[None, :, None]
    below = f.copy()
    below[:, :, 1:] = f[:, :, :-1]
    corner = np.where((i < m) & (j >= 2), -f, f)
    out[:, :, :-1] = (below[:, :, 1:] - below[:, :, :-1] + corner[:, :, :-1])


BOUNDARY_CONDITIONS.add("concat_where_corner_and_shifted_local", corner_and_shifted_program,
    arguments(f=F(), m=SCALAR(np.int32(4)), out=OUT()), corner_and_shifted_reference)


# =========================================================================== domain errors
# Not corpus cases: programs whose out slice leaves the stencil's reach outside the input.
# The field operator's parameter has the program argument's name, so "the field" is unambiguous.


@field_operator
def reach(wind_speed: IJK) -> IJK:
    return wind_speed(I + 2) + wind_speed(J - 1) + wind_speed(K + 3)


@program
def reach_fits(wind_speed: IJK, out: IJK):
    reach(wind_speed, out=out[:-2, 1:, :-3])


@program
def reach_misses_i(wind_speed: IJK, out: IJK):
    reach(wind_speed, out=out[:, 1:, :-3])


@program
def reach_misses_j(wind_speed: IJK, out: IJK):
    reach(wind_speed, out=out[:-2, :, :-3])


@program
def reach_misses_k(wind_speed: IJK, out: IJK):
    reach(wind_speed, out=out[:-2, 1:, :])


#: Grid for the reach programs: extents without the digits of the missing amounts.
REACH_SHAPE = (9, 8, 7)

MISSING_HALOS = [
    MissingHalo("i_upper_by_2", reach_misses_i, "wind_speed", "I", 2),
    MissingHalo("j_lower_by_1", reach_misses_j, "wind_speed", "J", 1),
    MissingHalo("k_upper_by_3", reach_misses_k, "wind_speed", "K", 3),
]
