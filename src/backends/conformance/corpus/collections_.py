"""Named collections: dataclasses and ``typing.NamedTuple``\\ s of fields and scalars.

Cases of the DSL corpus (``backends.conformance.corpus``); no ``from __future__ import
annotations``, since the DSL reads the annotations (of the classes too).
"""

import dataclasses
from typing import NamedTuple

import numpy as np

from pipeline.dsl import field_operator, float64, program

from .cases import OUT, F, Feature, arguments, at, dom
from .grid import IJ, IJK, SHAPE_2D, I, J

NAMED_COLLECTIONS = Feature("named collections")


@dataclasses.dataclass(frozen=True)
class Wind:
    u: IJK
    v: IJK


class Scaled(NamedTuple):
    field: IJK
    factor: float64


def _wind(rng):
    return Wind(F()(rng), F()(rng))


def _wind_out(rng):
    return Wind(OUT()(rng), OUT()(rng))


# =========================================================================== dataclasses


@field_operator
def rotated(wind: Wind) -> Wind:
    return Wind(u=-wind.v, v=wind.u(I + 1) - wind.u(I - 1))


@program
def rotate_program(wind: Wind, out: Wind):
    rotated(wind, out=Wind(out.u[1:-1, :, :], out.v[1:-1, :, :]))


def rotate_reference(wind, out):
    d = dom(wind.u.shape, np.s_[1:-1, :, :])
    out.u[d] = -at(wind.v, d)
    out.v[d] = at(wind.u, d, 1) - at(wind.u, d, -1)


NAMED_COLLECTIONS.add("dataclass_parameter_fields_and_constructed_result", rotate_program,
    arguments(wind=_wind, out=_wind_out), rotate_reference, outputs=("out",))


@field_operator
def speed_squared(wind: Wind) -> IJK:
    return wind.u * wind.u + wind.v * wind.v


@field_operator
def advected(wind: Wind, q: IJK) -> IJK:
    return q - 0.5 * (wind.u * (q(I + 1) - q) + wind.v * (q(J + 1) - q))


@program
def wind_fields_program(wind: Wind, q: IJK, speed: IJK, moved: IJK):
    speed_squared(Wind(wind.u, v=wind.v), out=speed)
    advected(wind, q, out=moved[:-1, :-1, :])


def wind_fields_reference(wind, q, speed, moved):
    speed[...] = wind.u * wind.u + wind.v * wind.v
    d = dom(q.shape, np.s_[:-1, :-1, :])
    moved[d] = at(q, d) - 0.5 * (at(wind.u, d) * (at(q, d, 1) - at(q, d))
                                 + at(wind.v, d) * (at(q, d, 0, 1) - at(q, d)))


NAMED_COLLECTIONS.add("dataclass_built_in_a_program_and_fields_read_shifted",
    wind_fields_program, arguments(wind=_wind, q=F(), speed=OUT(), moved=OUT()),
    wind_fields_reference, outputs=("speed", "moved"))


# =========================================================================== NamedTuples


@field_operator
def scaled_sum(a: Scaled, b: Scaled) -> IJK:
    field, factor = a
    return field * factor + b[0] * b.factor


@program
def named_tuple_program(a: Scaled, b: Scaled, out: IJK):
    scaled_sum(a, b, out=out)


def named_tuple_reference(a, b, out):
    out[...] = a.field * a.factor + b.field * b.factor


NAMED_COLLECTIONS.add("named_tuple_unpacked_indexed_and_read_by_field", named_tuple_program,
    arguments(a=lambda rng: Scaled(F()(rng), 2.0), b=lambda rng: Scaled(F()(rng), -0.5),
              out=OUT()),
    named_tuple_reference)


class Surface(NamedTuple):
    height: IJ
    slope: IJ


@field_operator
def surface_of(h: IJ) -> Surface:
    return Surface(h, h(I + 1) - h)


@field_operator
def steepness(h: IJ) -> IJ:
    surface = surface_of(h)
    return surface.slope * surface.slope + surface_of(h).height


@program
def surface_program(h: IJ, surface: Surface, steep: IJ):
    surface_of(h, out=Surface(surface.height[:-1, :], surface.slope[:-1, :]))
    steepness(h, out=steep[:-1, :])


def surface_reference(h, surface, steep):
    surface.height[:-1] = h[:-1]
    surface.slope[:-1] = h[1:] - h[:-1]
    steep[:-1] = (h[1:] - h[:-1]) ** 2 + h[:-1]


NAMED_COLLECTIONS.add("named_tuple_returned_by_an_inlined_call", surface_program,
    arguments(h=F(shape=SHAPE_2D),
              surface=lambda rng: Surface(OUT(shape=SHAPE_2D)(rng), OUT(shape=SHAPE_2D)(rng)),
              steep=OUT(shape=SHAPE_2D)),
    surface_reference, outputs=("surface", "steep"))


# =========================================================================== nested


@field_operator
def blended(pair: tuple[Wind, Scaled]) -> tuple[IJK, IJK]:
    wind, scaled = pair
    return wind.u * scaled.factor + scaled.field, pair[0].v


@program
def nested_collections_program(pair: tuple[Wind, Scaled], out: tuple[IJK, IJK]):
    blended(pair, out=out)


def nested_collections_reference(pair, out):
    wind, scaled = pair
    out[0][...] = wind.u * scaled.factor + scaled.field
    out[1][...] = wind.v


NAMED_COLLECTIONS.add("collections_nested_in_a_tuple", nested_collections_program,
    arguments(pair=lambda rng: (_wind(rng), Scaled(F()(rng), 3.0)),
              out=lambda rng: (OUT()(rng), OUT()(rng))),
    nested_collections_reference, outputs=("out",))
