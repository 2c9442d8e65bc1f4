"""One domain per output of a tuple result: ``domain=(dom_x, (dom_y, dom_z))`` nested like
``out=``, and outputs of one call sliced differently.

Cases of the DSL corpus (``backends.conformance.corpus``); no ``from __future__ import
annotations``, since the DSL reads the annotations (of the classes too).
"""

import dataclasses

import numpy as np

from pipeline.dsl import concat_where, field_operator, float64, int64, program, scan_operator

from .cases import OUT, SCALAR, F, Feature, arguments
from .grid import IJ, IJK, SHAPE_2D, I, J, K

OUTPUT_DOMAINS = Feature("a domain per output")


@field_operator
def shifted_doubled_bounded(a: IJ) -> tuple[IJ, tuple[IJ, IJ]]:
    # The boundary branch of the third result is chosen at I == 2, inside its domain only.
    return a(I + 1), (a * 2.0, concat_where(I == 2, 5.0, a(J - 1)))


@program
def nested_domains_program(a: IJ, lo: int64, x: IJ, y: IJ, z: IJ):
    shifted_doubled_bounded(a, out=(x, (y, z)),
                            domain=({I: (0, 8)}, ({I: (lo, 10), J: (1, 8)}, {J: (1, 9)})))


def nested_domains_reference(a, lo, x, y, z):
    x[:8] = a[1:9]
    y[lo:10, 1:8] = a[lo:10, 1:8] * 2.0
    z[:, 1:9] = a[:, 0:8]
    z[2, 1:9] = 5.0


OUTPUT_DOMAINS.add("a_domain_per_output_nested_like_out", nested_domains_program,
    arguments(a=F(shape=SHAPE_2D), lo=SCALAR(3), x=OUT(shape=SHAPE_2D), y=OUT(shape=SHAPE_2D),
              z=OUT(shape=SHAPE_2D)),
    nested_domains_reference, outputs=("x", "y", "z"))


@dataclasses.dataclass(frozen=True)
class Flux:
    east: IJK
    north: IJK


@field_operator
def fluxes(q: IJK) -> Flux:
    return Flux(q(I + 1) - q, q(J + 1) - q)


@program
def flux_domains_program(q: IJK, out: Flux):
    fluxes(q, out=out, domain=({I: (0, 9)}, {J: (0, 8), K: (1, 6)}))


def flux_domains_reference(q, out):
    out.east[:9] = q[1:] - q[:-1]
    out.north[:, :8, 1:] = q[:, 1:, 1:] - q[:, :-1, 1:]


OUTPUT_DOMAINS.add("a_domain_per_field_of_a_dataclass_result", flux_domains_program,
    arguments(q=F(), out=lambda rng: Flux(OUT()(rng), OUT()(rng))),
    flux_domains_reference)


@scan_operator(axis=K, forward=True, init=(0.0, 1.0))
def sum_and_product(carry: tuple[float64, float64], x: float64) -> tuple[float64, float64]:
    return carry[0] + x, carry[1] * x


@field_operator
def column_sum_and_product(x: IJK) -> tuple[IJK, IJK]:
    return sum_and_product(x)


@program
def scan_domains_program(x: IJK, total: IJK, product: IJK):
    column_sum_and_product(x, out=(total, product), domain=({I: (1, 9)}, {J: (2, 7)}))


def scan_domains_reference(x, total, product):
    total[1:9] = np.cumsum(x[1:9], axis=2)
    product[:, 2:7] = np.cumprod(x[:, 2:7], axis=2)


OUTPUT_DOMAINS.add("a_domain_per_component_of_a_scan_carry", scan_domains_program,
    arguments(x=F(0.5, 1.5), total=OUT(), product=OUT()), scan_domains_reference,
    outputs=("total", "product"))


@field_operator
def gradients(a: IJK) -> tuple[IJK, IJK]:
    return a(I + 1) - a, a(J - 1) - a


@program
def sliced_outputs_program(a: IJK, di: IJK, dj: IJK):
    gradients(a, out=(di[:-1, :, :], dj[:, 1:, :]))


def sliced_outputs_reference(a, di, dj):
    di[:-1] = a[1:] - a[:-1]
    dj[:, 1:] = a[:, :-1] - a[:, 1:]


OUTPUT_DOMAINS.add("outputs_of_one_call_sliced_differently", sliced_outputs_program,
    arguments(a=F(), di=OUT(), dj=OUT()), sliced_outputs_reference, outputs=("di", "dj"))
