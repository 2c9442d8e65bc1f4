"""Staggered dimensions (ADR 0027): fields at cell edges (``IHalf = staggered(I)``) beside
fields at cells, and the half shifts between them: interpolation to edges, a flux
divergence back to cells, vertical interfaces (``KHalf``), a shifted expression and a
shifted call, an edge field of fewer dimensions broadcast, and a program passing an edge
field from one call to the next. An edge array has one point more than a cell array along
the staggered axis.

Cases of the DSL corpus; no ``from __future__ import annotations``: the DSL reads them.
"""

from pipeline.dsl import Field, field_operator, float64, program, staggered

from .cases import OUT, F, Feature, arguments
from .composition import double
from .grid import IJK, SHAPE, I, J, K

STAGGERED_DIMENSIONS = Feature("staggered dimensions")

IHalf, KHalf = staggered(I), staggered(K)
EDGES_I = Field[[IHalf, J, K], float64]
EDGES_IJ = Field[[IHalf, J], float64]
INTERFACES = Field[[I, J, KHalf], float64]
N_I, N_J, N_K = SHAPE
I_EDGES = (N_I + 1, N_J, N_K)
K_INTERFACES = (N_I, N_J, N_K + 1)


@field_operator
def _to_edges(a: IJK) -> EDGES_I:
    return 0.5 * (a(IHalf - 0.5) + a(IHalf + 0.5))


@program
def edges_interpolated(a: IJK, out: EDGES_I):
    _to_edges(a, out=out[1:-1, :, :])  # the interior edges: a cell on either side


def edges_interpolated_reference(a, out):
    out[1:-1] = 0.5 * (a[:-1] + a[1:])


STAGGERED_DIMENSIONS.add("staggered_edges_interpolated", edges_interpolated,
    arguments(a=F(), out=OUT(shape=I_EDGES)), edges_interpolated_reference)


@field_operator
def _divergence(flux: EDGES_I) -> IJK:
    return flux(I + 0.5) - flux(I - 0.5)


@program
def flux_divergence(flux: EDGES_I, out: IJK):
    _divergence(flux, out=out)


def flux_divergence_reference(flux, out):
    out[...] = flux[1:] - flux[:-1]


STAGGERED_DIMENSIONS.add("staggered_flux_divergence", flux_divergence,
    arguments(flux=F(shape=I_EDGES), out=OUT()), flux_divergence_reference)


@field_operator
def _interface_mean(w: INTERFACES) -> IJK:
    return 0.5 * (w(K - 0.5) + w(K + 0.5))


@program
def vertical_interfaces(w: INTERFACES, out: IJK):
    _interface_mean(w, out=out[:, :, 1:])


def vertical_interfaces_reference(w, out):
    out[:, :, 1:] = 0.5 * (w[:, :, 1:-1] + w[:, :, 2:])


STAGGERED_DIMENSIONS.add("staggered_vertical_interfaces", vertical_interfaces,
    arguments(w=F(shape=K_INTERFACES), out=OUT()), vertical_interfaces_reference)


@field_operator
def _weighted_edges(a: IJK, b: IJK, h: EDGES_IJ) -> EDGES_I:
    product = a * b
    return product(IHalf - 0.5) * h + (a - b)(IHalf + 0.5)


@program
def shifted_expression_broadcast(a: IJK, b: IJK, h: EDGES_IJ, out: EDGES_I):
    _weighted_edges(a, b, h, out=out[1:N_I, :, :])


def shifted_expression_broadcast_reference(a, b, h, out):
    out[1:N_I] = (a * b)[:-1] * h[1:N_I, :, None] + (a - b)[1:]


STAGGERED_DIMENSIONS.add("staggered_shifted_expression_broadcast", shifted_expression_broadcast,
    arguments(a=F(), b=F(), h=F(shape=I_EDGES[:2]), out=OUT(shape=I_EDGES)),
    shifted_expression_broadcast_reference)


@field_operator
def _gradient(a: IJK) -> EDGES_I:
    return a(IHalf + 0.5) - a(IHalf - 0.5)


@program
def edge_temporary(a: IJK, gradient: EDGES_I, out: IJK):
    _gradient(a, out=gradient[1:-1, :, :])
    _divergence(gradient, out=out[1:-1, :, :])


def edge_temporary_reference(a, gradient, out):
    gradient[1:-1] = a[1:] - a[:-1]
    out[1:-1] = gradient[2:-1] - gradient[1:-2]


STAGGERED_DIMENSIONS.add("staggered_edge_temporary", edge_temporary,
    arguments(a=F(), gradient=OUT(shape=I_EDGES), out=OUT()), edge_temporary_reference,
    outputs=("gradient", "out"))


@field_operator
def _edges_of_a_call(a: IJK) -> EDGES_I:
    return double(a)(IHalf + 0.5) - a(IHalf - 0.5)  # the call's result moves to the edges


@program
def shifted_call(a: IJK, out: EDGES_I):
    _edges_of_a_call(a, out=out[1:N_I, :, :])


def shifted_call_reference(a, out):
    out[1:N_I] = 2.0 * a[1:] - a[:-1]


STAGGERED_DIMENSIONS.add("staggered_shifted_call", shifted_call,
    arguments(a=F(), out=OUT(shape=I_EDGES)), shifted_call_reference)
