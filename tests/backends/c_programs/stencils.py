"""Programs the ``c_cpu`` tests compile, with NumPy references written with plain slicing.

No ``from __future__ import annotations``: the DSL reads the annotations of the definitions.
"""

import numpy as np

from pipeline.dsl import Dimension, Field, field_operator, float64, int32, minimum, program, where

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741

IJK = Field[[I, J, K], float64]
IJKi32 = Field[[I, J, K], int32]


@field_operator
def laplacian(f: IJK) -> IJK:
    return -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)


@program
def lap(inp: IJK, out: IJK):
    laplacian(inp, out=out[1:-1, 1:-1, :])


def lap_reference(inp: np.ndarray, out: np.ndarray) -> None:
    """What ``lap`` writes: the interior of ``out`` (halo 1 in I and J)."""
    out[1:-1, 1:-1, :] = (
        -4.0 * inp[1:-1, 1:-1, :]
        + inp[2:, 1:-1, :]
        + inp[:-2, 1:-1, :]
        + inp[1:-1, 2:, :]
        + inp[1:-1, :-2, :]
    )


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
    """What ``hdiff_program`` writes: the interior of ``out`` (halo 2 in I and J)."""
    ni, nj = inp.shape[:2]

    def at(di: int, dj: int) -> np.ndarray:
        return inp[2 + di : ni - 2 + di, 2 + dj : nj - 2 + dj, :]

    def lap_(di: int, dj: int) -> np.ndarray:
        return 4.0 * at(di, dj) - (
            at(di - 1, dj) + at(di + 1, dj) + at(di, dj - 1) + at(di, dj + 1)
        )

    def flx(di: int) -> np.ndarray:
        raw = lap_(di + 1, 0) - lap_(di, 0)
        return np.where(raw * (at(di + 1, 0) - at(di, 0)) > 0.0, 0.0, raw)

    def fly(dj: int) -> np.ndarray:
        raw = lap_(0, dj + 1) - lap_(0, dj)
        return np.where(raw * (at(0, dj + 1) - at(0, dj)) > 0.0, 0.0, raw)

    out[2:-2, 2:-2, :] = at(0, 0) - coeff * (flx(0) - flx(-1) + fly(0) - fly(-1))


@field_operator
def shifted_axpy(a: IJK, b: IJK, alpha: float64) -> IJK:
    return alpha * a(I + 1) + b(K - 1)


@program
def axpy_program(a: IJK, b: IJK, alpha: float64, out: IJK):
    shifted_axpy(a, b, alpha, out=out[:-1, :, 1:])


@field_operator
def scaled_int(a: IJKi32, n: int32) -> IJKi32:
    return a(J + 1) * n + n


@program
def int_program(a: IJKi32, n: int32, out: IJKi32):
    scaled_int(a, n, out=out[:, :-1, :])


@field_operator
def clipped(a: IJK) -> IJK:
    return minimum(0.5, a)


@program
def clip_program(a: IJK, out: IJK):
    clipped(a, out=out)


@field_operator
def vertical_chain(f: IJK) -> IJK:
    smooth = f(K - 1) + 2.0 * f + f(K + 1)
    return smooth(K + 1) - smooth(I - 1)


@program
def vertical_chain_program(inp: IJK, out: IJK):
    vertical_chain(inp, out=out[1:-1, 1:-1, 2:-2])


# ------------------------------------------------- fields of other dimensions than the stencil's

L = Dimension("L")
IK = Field[[I, K], float64]
JK = Field[[J, K], float64]
IJKL = Field[[I, J, K, L], float64]


@field_operator
def mixed_dims(f: IJK, h: IK, g: JK) -> IJK:
    return f(I + 1) + h(I + 1) + g(J + 1)


@program
def mixed_dims_program(f: IJK, h: IK, g: JK, out: IJK):
    mixed_dims(f, h, g, out=out[:-1, :-1, :])


def mixed_dims_reference(f: np.ndarray, h: np.ndarray, g: np.ndarray, out: np.ndarray) -> None:
    """What ``mixed_dims_program`` writes: ``out[:-1, :-1]``."""
    out[:-1, :-1] = f[1:, :-1] + h[1:, None, :] + g[None, 1:, :]


@field_operator
def four_dims(f: IJKL) -> IJKL:
    return f(I + 1) + f(J - 1) + f(K + 1)


@program
def four_dims_program(f: IJKL, out: IJKL):
    four_dims(f, out=out[:-1, 1:, :-1, :])


def four_dims_reference(f: np.ndarray, out: np.ndarray) -> None:
    """What ``four_dims_program`` writes: ``out[:-1, 1:, :-1]``."""
    out[:-1, 1:, :-1] = f[1:, 1:, :-1] + f[:-1, :-1, :-1] + f[:-1, 1:, 1:]
