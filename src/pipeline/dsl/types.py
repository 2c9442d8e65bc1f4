"""The DSL's type vocabulary: dimensions, offsets, dtypes, field types and named collections.

``Field[[I, J, K], float64]`` is a ``FieldType``; ``I + 1`` is an ``Offset``;
``staggered(I)`` is I's staggered counterpart (the cell edges, ADR 0027) and ``IHalf + 0.5``
a half shift. A dataclass or ``typing.NamedTuple`` of fields and scalars is a tuple with
field names: its ``Record`` (the class and its fields in declaration order) rides on a
``Named`` tuple.
"""

from __future__ import annotations

import builtins
import dataclasses
from typing import Any

import attrs
import numpy as np

from pipeline.dsl.regions import Bound, compare

__all__ = [
    "DTYPES",
    "Dimension",
    "Field",
    "FieldType",
    "Named",
    "Offset",
    "Record",
    "ScalarType",
    "as_dtype",
    "bool_",
    "float32",
    "float64",
    "int32",
    "int64",
    "record_of",
    "staggered",
]

float32 = np.dtype("float32")
float64 = np.dtype("float64")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
bool_ = np.dtype("bool")

DTYPES: tuple[np.dtype[Any], ...] = (float32, float64, int32, int64, bool_)
_PYTHON_DTYPES: dict[type, np.dtype[Any]] = {
    builtins.float: float64,
    builtins.int: int64,
    builtins.bool: bool_,
}


def as_dtype(value: object) -> np.dtype[Any] | None:
    """The DSL dtype that ``value`` names (a NumPy dtype, scalar type, or Python type), or None."""
    if isinstance(value, type) and value in _PYTHON_DTYPES:
        return _PYTHON_DTYPES[value]
    try:
        dtype = np.dtype(value)  # type: ignore[call-overload]
    except TypeError:
        return None
    return dtype if dtype in DTYPES else None


@attrs.frozen(repr=False, eq=False)
class Dimension:
    """A named axis of a Cartesian grid. ``I + 1`` is the offset +1 along ``I``.

    Compared with an integer it is a condition on indices, for ``concat_where``: ``K == 0``,
    ``I < n`` (a ``pipeline.dsl.regions.Region``). Dimensions compare equal by name and
    staggering.

    ``staggered(I)`` (``is_staggered``) is I's staggered counterpart, the cell edges: its
    point ``j`` sits half a cell below ``I``'s point ``j`` (ADR 0027). Both share ``name``,
    the array axis: a shift by a half-integer (``I + 0.5``) moves between them.
    """

    name: str
    is_staggered: bool = attrs.field(default=False, kw_only=True)

    @property
    def counterpart(self) -> Dimension:
        """The staggered counterpart of an unstaggered dimension, and the other way round."""
        return Dimension(self.name, is_staggered=not self.is_staggered)

    def __eq__(self, other: object) -> Any:
        if isinstance(other, Dimension):
            return self.name == other.name and self.is_staggered == other.is_staggered
        return self._compare("==", other)

    def __ne__(self, other: object) -> Any:
        if isinstance(other, Dimension):
            return not (self.name == other.name and self.is_staggered == other.is_staggered)
        return self._compare("!=", other)

    def __hash__(self) -> int:
        return hash(("Dimension", self.name, self.is_staggered))

    def __lt__(self, other: object) -> Any:
        return self._compare("<", other)

    def __le__(self, other: object) -> Any:
        return self._compare("<=", other)

    def __gt__(self, other: object) -> Any:
        return self._compare(">", other)

    def __ge__(self, other: object) -> Any:
        return self._compare(">=", other)

    def _compare(self, op: str, other: object) -> Any:
        if isinstance(other, bool) or not isinstance(other, int | np.integer):
            return NotImplemented
        return compare(self.name, op, Bound(int(other)))

    def __add__(self, value: float) -> Offset:
        return Offset.written(self, _check_offset(value))

    def __sub__(self, value: float) -> Offset:
        return Offset.written(self, -_check_offset(value))

    def __repr__(self) -> str:
        own = f"Dimension({self.name!r})"
        return f"staggered({own})" if self.is_staggered else own

    def __str__(self) -> str:
        return f"{self.name}Half" if self.is_staggered else self.name


def staggered(dimension: Dimension) -> Dimension:
    """The staggered counterpart of ``dimension``: ``IHalf = staggered(I)``.

    ``IHalf``'s point ``j`` is the edge half a cell below ``I``'s point ``j``; a field over
    ``IHalf`` is an array of its own along ``I``'s axis (``n + 1`` edges beside ``n`` cells).

    Raises:
        TypeError: ``dimension`` is not a ``Dimension``, or is staggered already (its
            counterpart is ``dimension.counterpart``).
    """
    if not isinstance(dimension, Dimension):
        raise TypeError(f"staggered() takes a Dimension, got {dimension!r}")
    if dimension.is_staggered:
        raise TypeError(
            f"{dimension} is staggered already; its unstaggered counterpart is "
            f"{dimension}.counterpart (Dimension({dimension.name!r}))"
        )
    return dimension.counterpart


def _check_offset(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"an offset must be an integer or a half-integer, got {value!r}")
    if isinstance(value, int | np.integer) or float(value) % 1 == 0:
        return int(value)
    if float(value) % 1 != 0.5:
        raise TypeError(
            f"a shift moves by a whole number of points (I + 1) or by a half between a "
            f"dimension and its staggered counterpart (IHalf + 0.5), not by {value!r}"
        )
    return float(value)


@attrs.frozen
class Offset:
    """A shift along ``dimension``: ``value`` points on its array axis.

    A half-integer shift (``half``) moves between ``dimension`` and its counterpart: it reads
    a field over ``source`` (``dimension.counterpart``) and gives one over ``dimension``.
    ``value`` is then the array offset of that read, since a staggered point ``j`` sits half
    a cell below the unstaggered ``j``: ``IHalf + 0.5`` reads ``I`` at ``j`` (value 0),
    ``I + 0.5`` reads ``IHalf`` at ``j + 1`` (value 1).
    """

    dimension: Dimension
    value: int
    half: bool = False

    @classmethod
    def written(cls, dimension: Dimension, amount: float) -> Offset:
        """The offset written ``dimension + amount`` (an integer or a half-integer)."""
        if isinstance(amount, int):
            return cls(dimension, amount)
        whole = int(amount // 1)
        return cls(dimension, whole + (0 if dimension.is_staggered else 1), half=True)

    @property
    def source(self) -> Dimension:
        """The dimension a field must have to be shifted by this offset."""
        return self.dimension.counterpart if self.half else self.dimension

    @property
    def amount(self) -> float:
        """The shift as written: ``0.5`` for ``IHalf + 0.5``."""
        if not self.half:
            return self.value
        return self.value + (0.5 if self.dimension.is_staggered else -0.5)

    def __str__(self) -> str:
        sign = "+" if self.amount >= 0 else "-"
        return f"{self.dimension} {sign} {abs(self.amount)}"


@attrs.frozen
class ScalarType:
    """A scalar of ``dtype``; ``weak`` for Python literals, typed like NumPy 2's weak scalars."""

    dtype: np.dtype[Any]
    weak: bool = False

    def __str__(self) -> str:
        return f"{'weak ' if self.weak else ''}{self.dtype}"


@attrs.frozen
class FieldType:
    """A field over ``dims`` with elements of ``dtype``."""

    dims: tuple[Dimension, ...]
    dtype: np.dtype[Any]

    @property
    def dim_names(self) -> tuple[str, ...]:
        """The array axes' names (a staggered dimension shares its counterpart's)."""
        return tuple(d.name for d in self.dims)

    def __str__(self) -> str:
        return f"Field[[{', '.join(str(d) for d in self.dims)}], {self.dtype}]"


class _FieldFactory:
    """``Field[[dims...], dtype]`` builds a ``FieldType``."""

    def __getitem__(self, item: tuple[Any, Any]) -> FieldType:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError("write a field type as Field[[I, J, ...], dtype]")
        dims, dtype = item
        if not isinstance(dims, list | tuple) or not all(isinstance(d, Dimension) for d in dims):
            raise TypeError(f"Field[...] needs a list of Dimensions first, got {dims!r}")
        if len(set(dims)) != len(dims):
            raise TypeError(f"Field[...] has a repeated dimension: {dims!r}")
        both = next((d for d in dims if d.counterpart in dims and not d.is_staggered), None)
        if both is not None:
            raise TypeError(
                f"Field[...] has both {both} and its staggered counterpart {both.counterpart}: "
                "they are different grid locations (cells and their edges) on one array "
                f"axis; a field is over one of them (move between them with {both} + 0.5)"
            )
        resolved = as_dtype(dtype)
        if resolved is None:
            names = ", ".join(str(d) for d in DTYPES)
            raise TypeError(f"Field[...] dtype must be one of {names}, got {dtype!r}")
        return FieldType(tuple(dims), resolved)

    def __repr__(self) -> str:
        return "Field"


Field = _FieldFactory()


@attrs.frozen
class Record:
    """A named collection class: a dataclass or ``typing.NamedTuple``, and its fields in
    declaration order. Classes compare by identity: two classes with the same fields are two
    types, as in Python."""

    cls: type
    fields: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.cls.__name__

    @property
    def is_tuple(self) -> bool:
        """Whether instances are tuples (a NamedTuple): indexed and unpacked as tuples are."""
        return issubclass(self.cls, tuple)

    def values(self, instance: object) -> tuple[Any, ...]:
        """The field values of ``instance``, in order."""
        return tuple(getattr(instance, field) for field in self.fields)

    def build(self, values: tuple[Any, ...]) -> Any:
        """An instance of the class with ``values``, in field order."""
        return self.cls(*values)


def record_of(value: object) -> Record | None:
    """The ``Record`` of a dataclass or ``typing.NamedTuple`` class ``value``, else None."""
    if not isinstance(value, type):
        return None
    if dataclasses.is_dataclass(value):
        return Record(value, tuple(f.name for f in dataclasses.fields(value)))
    fields = getattr(value, "_fields", None)
    if issubclass(value, tuple) and isinstance(fields, tuple):
        return Record(value, tuple(fields))
    return None


class Named(tuple):  # type: ignore[type-arg]
    """A tuple whose items are a ``Record``'s fields: a nesting, names or values of a named
    collection. It equals only a ``Named`` of the same class and items, so that a plain tuple
    passed where a collection goes is refused as Python would fail on ``s.u``."""

    record: Record

    def __new__(cls, items: Any, record: Record) -> Named:
        named = super().__new__(cls, items)
        named.record = record
        return named

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Named) and self.record == other.record and tuple.__eq__(self, other)
        )

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self.record, tuple(self)))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Named, (tuple(self), self.record))

    def position(self, field: str) -> int:
        """The position of ``field``; ValueError if the class has none."""
        return self.record.fields.index(field)

    def __repr__(self) -> str:
        items = ", ".join(f"{f}={v!r}" for f, v in zip(self.record.fields, self, strict=True))
        return f"{self.record.name}({items})"
