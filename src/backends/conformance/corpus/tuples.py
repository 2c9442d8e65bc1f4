"""Tuple returns, tuple parameters and nested tuple values; programs' tuple parameters.

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""


import numpy as np

from pipeline.dsl import field_operator, float64, program, scan_operator

from .cases import OUT, F, Feature, arguments, at, dom
from .grid import IJ, IJK, SHAPE_2D, I, IJKb, J, K

TUPLES = Feature("tuples")
TUPLE_PROGRAMS = Feature("tuple program parameters")

# =========================================================================== tuple returns


@field_operator
def sum_diff(a: IJK, b: IJK) -> tuple[IJK, IJK]:
    return a + b, a - b


@program
def sum_diff_program(a: IJK, b: IJK, s: IJK, d: IJK):
    sum_diff(a, b, out=(s[1:-1, :, :], d[1:-1, :, :]))


def sum_diff_reference(a, b, s, d):
    dm = dom(s.shape, np.s_[1:-1, :, :])
    s[dm] = at(a, dm) + at(b, dm)
    d[dm] = at(a, dm) - at(b, dm)


TUPLES.add("tuple_return_sliced", sum_diff_program, arguments(a=F(), b=F(), s=OUT(), d=OUT()),
    sum_diff_reference, outputs=("s", "d"))


@field_operator
def gradient_and_sign(f: IJK) -> tuple[IJK, IJKb]:
    return f(I + 1) - f, f > 0.0


@program
def gradient_and_sign_program(f: IJK, grad: IJK, positive: IJKb):
    gradient_and_sign(f, out=(grad[:-1, :, :], positive[:-1, :, :]))


def gradient_and_sign_reference(f, grad, positive):
    d = dom(grad.shape, np.s_[:-1, :, :])
    grad[d] = at(f, d, 1) - at(f, d)
    positive[d] = at(f, d) > 0.0


TUPLES.add("tuple_return_mixed_dtypes_shifted", gradient_and_sign_program,
    arguments(f=F(), grad=OUT(), positive=OUT(np.bool_)), gradient_and_sign_reference,
    outputs=("grad", "positive"))


@field_operator
def product_and_sum(a: IJK, b: IJK) -> tuple[IJK, IJK]:
    return a * b, a + b


@program
def product_and_sum_program(a: IJK, b: IJK, p: IJK, q: IJK):
    product_and_sum(a, b, out=(p, q))


def product_and_sum_reference(a, b, p, q):
    p[...] = a * b
    q[...] = a + b


TUPLES.add("tuple_return_full_domain", product_and_sum_program,
    arguments(a=F(), b=F(), p=OUT(), q=OUT()), product_and_sum_reference, outputs=("p", "q"))


# =========================================================================== tuples


@field_operator
def swap_scale(pair: tuple[IJ, IJ], s: float64) -> tuple[IJ, tuple[IJ, IJ]]:
    a, b = pair
    t = (b * s, a)
    u = t[1] + pair[0]
    return u, (t[0], t[1] - b)


@field_operator
def swap_scale_shifted(x: IJ, y: IJ) -> tuple[IJ, tuple[IJ, IJ]]:
    return swap_scale((x, y(I + 1)), s=2.0)


@program
def tuples_program(x: IJ, y: IJ, o1: IJ, o2: IJ, o3: IJ):
    swap_scale_shifted(x, y, out=(o1[:-1, :], (o2[:-1, :], o3[:-1, :])))
    swap_scale((x, y), 3.0, out=(o1[-1:, :], (o2[-1:, :], o3[-1:, :])))


def tuples_reference(x, y, o1, o2, o3):
    o1[:] = 2.0 * x
    o2[:-1], o2[-1:] = 2.0 * y[1:], 3.0 * y[-1:]
    o3[:-1], o3[-1:] = x[:-1] - y[1:], x[-1:] - y[-1:]


TUPLES.add("tuple_parameters_values_and_nested_results", tuples_program,
    arguments(x=F(shape=SHAPE_2D), y=F(shape=SHAPE_2D), o1=OUT(shape=SHAPE_2D),
              o2=OUT(shape=SHAPE_2D), o3=OUT(shape=SHAPE_2D)),
    tuples_reference, outputs=("o1", "o2", "o3"))


@field_operator
def scaled_pair(pair: tuple[IJ, IJ], s: float64) -> tuple[IJ, IJ]:
    return pair[0] * s, pair[1]


@field_operator
def nested_as_in_python(t: tuple[IJ, tuple[IJ, IJ]]) -> tuple[IJ, IJ, IJ]:
    # Each read means what it means in Python: t[1] is the inner pair, not a leaf.
    x, pair = t
    a, (b, c) = t
    u = t[1][0] - pair[1] + t[-1][-1]
    v, w = scaled_pair(t[1], s=2.0)
    return x + a * t[0], u + b - c, v + w


@field_operator
def nested_from_a_call(x: IJ, y: IJ) -> IJ:
    inner = swap_scale((x, y), s=3.0)[1]
    return inner[0] + swap_scale((x, y), s=1.0)[1][1]


@program
def nested_indexing_program(x: IJ, y: IJ, z: IJ, o1: IJ, o2: IJ, o3: IJ, o4: IJ):
    nested_as_in_python((x, (y, z)), out=(o1, o2, o3))
    nested_from_a_call(x, y, out=o4)


def nested_indexing_reference(x, y, z, o1, o2, o3, o4):
    o1[:] = x + x * x
    o2[:] = 2.0 * y - z
    o3[:] = 2.0 * y + z
    o4[:] = 3.0 * y + (x - y)


TUPLES.add("nested_tuples_indexed_and_unpacked_as_in_python", nested_indexing_program,
    arguments(x=F(shape=SHAPE_2D), y=F(shape=SHAPE_2D), z=F(shape=SHAPE_2D),
              o1=OUT(shape=SHAPE_2D), o2=OUT(shape=SHAPE_2D), o3=OUT(shape=SHAPE_2D),
              o4=OUT(shape=SHAPE_2D)),
    nested_indexing_reference, outputs=("o1", "o2", "o3", "o4"))


@field_operator
def volume_and_surface(a: IJK, b: IJ) -> tuple[IJK, IJ, IJK]:
    s = b * 2.0
    return a + s, s(I + 1), a * s


@program
def mixed_dimensions_program(a: IJK, b: IJ, x: IJK, y: IJ, z: IJK):
    volume_and_surface(a, b, out=(x[:-1], y[:-1], z[:-1]))


def mixed_dimensions_reference(a, b, x, y, z):
    x[:-1] = a[:-1] + 2.0 * b[:-1, :, None]
    y[:-1] = 2.0 * b[1:]
    z[:-1] = a[:-1] * 2.0 * b[:-1, :, None]


TUPLES.add("tuple_result_over_different_dimensions", mixed_dimensions_program,
    arguments(a=F(), b=F(shape=SHAPE_2D), x=OUT(), y=OUT(shape=SHAPE_2D), z=OUT()),
    mixed_dimensions_reference, outputs=("x", "y", "z"))



# =========================================================================== program parameters
# A program's tuple parameter takes a tuple of arrays (and scalars), nested as its annotation;
# its body passes the whole tuple, an item (t[1]) or a slice of a leaf (out[0][1:-1, :, :]).


def _pair(make_first, make_second):
    return lambda rng: (make_first(rng), make_second(rng))


@field_operator
def swapped(t: tuple[IJK, IJK]) -> tuple[IJK, IJK]:
    return t[1], t[0] * 2.0


@program
def swap_tuple_program(t: tuple[IJK, IJK], out: tuple[IJK, IJK]):
    swapped(t, out=out)


def swap_tuple_reference(t, out):
    out[0][...] = t[1]
    out[1][...] = t[0] * 2.0


TUPLE_PROGRAMS.add("tuple_parameter_passed_whole_to_whole_out", swap_tuple_program,
    arguments(t=_pair(F(), F()), out=_pair(OUT(), OUT())), swap_tuple_reference,
    outputs=("out",))


@field_operator
def weighted(t: tuple[IJK, tuple[IJK, float64]]) -> IJK:
    return t[0] + t[1][0] * t[1][1]


@field_operator
def laplacian(a: IJK) -> IJK:
    return -4.0 * a + a(I + 1) + a(I - 1) + a(J + 1) + a(J - 1)


@program
def nested_tuple_program(t: tuple[IJK, tuple[IJK, float64]], out: tuple[IJK, IJK]):
    weighted(t, out=out[0])
    laplacian(t[1][0], out=out[1][1:-1, 1:-1, :])


def nested_tuple_reference(t, out):
    a, (b, s) = t
    out[0][...] = a + b * s
    d = dom(b.shape, np.s_[1:-1, 1:-1, :])
    out[1][d] = (-4.0 * at(b, d) + at(b, d, 1) + at(b, d, -1) + at(b, d, 0, 1)
                 + at(b, d, 0, -1))


TUPLE_PROGRAMS.add("nested_tuple_parameter_with_a_scalar_and_sliced_items", nested_tuple_program,
    arguments(t=lambda rng: (F()(rng), (F()(rng), 1.5)), out=_pair(OUT(), OUT())),
    nested_tuple_reference, outputs=("out",))


@field_operator
def difference(a: IJK, b: IJK) -> IJK:
    return a - b


@field_operator
def pair_sum(pair: tuple[IJK, IJ]) -> IJK:
    return pair[0] + pair[1]


@program
def tuple_items_program(t: tuple[IJK, IJK, IJ], c: IJK, out: tuple[IJK, IJK], last: IJK):
    difference(t[0], t[-2], out=out[1])
    pair_sum((c, t[2]), out=out[0][:, :, 1:])
    pair_sum((t[1], t[-1]), out=last[:-1, :, :])


def tuple_items_reference(t, c, out, last):
    a, b, g = t
    out[1][...] = a - b
    out[0][:, :, 1:] = c[:, :, 1:] + g[:, :, None]
    last[:-1] = b[:-1] + g[:-1, :, None]


TUPLE_PROGRAMS.add("tuple_parameter_items_over_different_dimensions", tuple_items_program,
    arguments(t=lambda rng: (F()(rng), F()(rng), F(shape=SHAPE_2D)(rng)), c=F(),
              out=_pair(OUT(), OUT()), last=OUT()),
    tuple_items_reference, outputs=("out", "last"))


@field_operator
def sum_and_product(a: IJK, b: IJK) -> tuple[IJK, IJK]:
    return a + b, a * b


@program
def tuple_out_domain_program(t: tuple[IJK, IJK], out: tuple[IJK, IJK]):
    sum_and_product(t[1], t[0], out=(out[1], out[0]), domain={I: (1, 8), K: (0, 4)})


def tuple_out_domain_reference(t, out):
    a, b = t
    out[1][1:8, :, 0:4] = b[1:8, :, 0:4] + a[1:8, :, 0:4]
    out[0][1:8, :, 0:4] = b[1:8, :, 0:4] * a[1:8, :, 0:4]


TUPLE_PROGRAMS.add("tuple_out_items_reordered_with_domain", tuple_out_domain_program,
    arguments(t=_pair(F(), F()), out=_pair(OUT(), OUT())), tuple_out_domain_reference,
    outputs=("out",))


@scan_operator(axis=K, forward=True, init=0.0)
def weighted_running_sum(total: float64, value: float64, weight: float64) -> float64:
    return total * weight + value


@program
def tuple_scan_program(t: tuple[IJK, float64], out: tuple[IJK]):
    weighted_running_sum(t[0], t[1], out=out[0][:, :-1, :])


def tuple_scan_reference(t, out):
    f, weight = t
    total = np.zeros(f.shape[:2])
    for k in range(f.shape[2]):
        total = total * weight + f[:, :, k]
        out[0][:, :-1, k] = total[:, :-1]


TUPLE_PROGRAMS.add("tuple_parameter_items_through_a_scan", tuple_scan_program,
    arguments(t=lambda rng: (F()(rng), 0.5), out=lambda rng: (OUT()(rng),)),
    tuple_scan_reference, outputs=("out",))
