"""Located arrays: an array that carries its dimensions and the index of its first element.

``located(a, dims=(I, J, K), origin={I: -1})`` says that ``a``'s axes are I, J and K, and
that its element 0 along I is index -1 of the grid (its element ``i`` is index ``i - 1``).
A program call takes one wherever it takes an array (ADR 0026): the dimensions must be the
parameter's, and the origins place the array in the grid's absolute indices, which are
what ``domain=``, ``concat_where`` conditions and shifts speak of.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from pipeline.dsl.types import Dimension

__all__ = ["LocatedArray", "located"]


def _dimensions(value: Sequence[Dimension]) -> tuple[Dimension, ...]:
    return tuple(value)


@attrs.frozen(eq=False)
class LocatedArray:
    """An array with its dimensions and, per dimension, the index of its element 0.

    Attributes:
        array: the values (a NumPy, CuPy, JAX or array-API array, as a program takes).
        dims: one dimension per axis of ``array``, in axis order.
        origin: per axis, the grid index of the array's element 0 along it.
    """

    array: Any
    dims: tuple[Dimension, ...] = attrs.field(converter=_dimensions)
    origin: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape (a static-domain program keys its variants by it)."""
        return tuple(self.array.shape)

    @property
    def dim_names(self) -> tuple[str, ...]:
        """The dimensions' names, in axis order."""
        return tuple(dim.name for dim in self.dims)

    @property
    def domain(self) -> dict[Dimension, tuple[int, int]]:
        """The grid indices the array covers: (start, stop) per dimension."""
        shape = tuple(self.array.shape)
        return {
            dim: (start, start + size)
            for dim, start, size in zip(self.dims, self.origin, shape, strict=True)
        }

    def __repr__(self) -> str:
        where = ", ".join(f"{dim.name}[{lo}:{hi}]" for dim, (lo, hi) in self.domain.items())
        return f"located({type(self.array).__name__} over {where})"


def located(
    array: Any, dims: Sequence[Dimension], origin: Mapping[Dimension, int] | None = None
) -> LocatedArray:
    """``array`` with its dimensions and origin, for a program call (ADR 0026).

    Args:
        array: an array of the program's backend, with one axis per dimension.
        dims: its dimensions in axis order: they must be the parameter's, in its order.
        origin: per dimension, the grid index of element 0 (dimensions left out: 0).

    Raises:
        TypeError: ``dims`` holds something that is not a ``Dimension``, or a dimension
            twice; ``array`` has no shape; an origin that is not an integer.
        ValueError: ``array``'s rank is not the number of ``dims``; ``origin`` names a
            dimension that is not in ``dims``.
    """
    dims = tuple(dims)
    if not all(isinstance(dim, Dimension) for dim in dims):
        raise TypeError(f"located(dims=...) takes Dimensions (dims=(I, J, K)), got {dims!r}")
    names = [dim.name for dim in dims]
    if len(set(names)) < len(names):
        raise TypeError(f"located(dims=...) names a dimension twice: {', '.join(names)}")
    shape = getattr(array, "shape", None)
    if shape is None:
        raise TypeError(f"located() takes an array, got {type(array).__name__}")
    if len(shape) != len(dims):
        raise ValueError(
            f"located(): the array has {len(shape)} axis/axes but dims= names {len(dims)} "
            f"({', '.join(names)}); give one dimension per axis"
        )
    given = dict(origin or {})
    if not all(isinstance(dim, Dimension) for dim in given):
        raise TypeError(f"located(origin=...) is keyed by Dimensions ({{I: -1}}), got {given!r}")
    unknown = [dim.name for dim in given if dim.name not in names]
    if unknown:
        raise ValueError(
            f"located(origin=...) names {', '.join(unknown)}, which is not in dims= "
            f"({', '.join(names)})"
        )
    starts = []
    for dim in dims:
        start = given.get(dim, 0)
        if isinstance(start, bool):
            raise TypeError(f"located(origin=...) takes integer indices, got {start!r}")
        try:
            starts.append(operator.index(start))
        except TypeError:
            raise TypeError(
                f"located(origin=...) takes integer indices, got {start!r} for {dim.name}"
            ) from None
    return LocatedArray(array, dims, tuple(starts))
