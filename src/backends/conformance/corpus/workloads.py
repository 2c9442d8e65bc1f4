"""The reference workloads of the design: the laplacian and COSMO's horizontal diffusion.

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""


import numpy as np

from pipeline.dsl import field_operator, float64, program, where

from .cases import OUT, SCALAR, F, Feature, arguments, at, dom
from .grid import IJK, I, J

REFERENCE_WORKLOADS = Feature("reference workloads")

# =========================================================================== reference workloads


@field_operator
def laplacian(f: IJK) -> IJK:
    return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)


@program
def lap(inp: IJK, out: IJK):
    laplacian(inp, out=out[1:-1, 1:-1, :])


def lap_at(f: np.ndarray, d: tuple[slice, ...], di: int = 0, dj: int = 0) -> np.ndarray:
    return (-4.0 * at(f, d, di, dj) + at(f, d, di + 1, dj) + at(f, d, di - 1, dj)
            + at(f, d, di, dj + 1) + at(f, d, di, dj - 1))


def lap_reference(inp: np.ndarray, out: np.ndarray) -> None:
    d = dom(out.shape, np.s_[1:-1, 1:-1, :])
    out[d] = lap_at(inp, d)


REFERENCE_WORKLOADS.add("laplacian", lap, arguments(inp=F(), out=OUT()), lap_reference)


@field_operator
def hdiff(inp: IJK, coeff: float64) -> IJK:
    lap_field = 4.0 * inp - (inp(I - 1) + inp(I + 1) + inp(J - 1) + inp(J + 1))
    flx_raw = lap_field(I + 1) - lap_field
    flx = where(flx_raw * (inp(I + 1) - inp) > 0.0, 0.0, flx_raw)
    fly_raw = lap_field(J + 1) - lap_field
    fly = where(fly_raw * (inp(J + 1) - inp) > 0.0, 0.0, fly_raw)
    return inp - coeff * (flx - flx(I - 1) + fly - fly(J - 1))


@program
def hdiff_program(inp: IJK, coeff: float64, out: IJK):
    hdiff(inp, coeff, out=out[2:-2, 2:-2, :])


def hdiff_reference(inp: np.ndarray, coeff: float, out: np.ndarray) -> None:
    d = dom(out.shape, np.s_[2:-2, 2:-2, :])

    def lap_(di, dj):
        return 4.0 * at(inp, d, di, dj) - (at(inp, d, di - 1, dj) + at(inp, d, di + 1, dj)
                                           + at(inp, d, di, dj - 1) + at(inp, d, di, dj + 1))

    def flx(di, dj):
        raw = lap_(di + 1, dj) - lap_(di, dj)
        return np.where(raw * (at(inp, d, di + 1, dj) - at(inp, d, di, dj)) > 0.0, 0.0, raw)

    def fly(di, dj):
        raw = lap_(di, dj + 1) - lap_(di, dj)
        return np.where(raw * (at(inp, d, di, dj + 1) - at(inp, d, di, dj)) > 0.0, 0.0, raw)

    out[d] = at(inp, d) - coeff * (flx(0, 0) - flx(-1, 0) + fly(0, 0) - fly(0, -1))


REFERENCE_WORKLOADS.add("hdiff", hdiff_program,
    arguments(inp=F(shape=(16, 16, 8)), coeff=SCALAR(0.025), out=OUT(shape=(16, 16, 8))),
    hdiff_reference)


