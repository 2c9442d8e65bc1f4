"""Fields over an array namespace: the values a definition computes on when run embedded.

An ``EmbeddedField`` is an array plus, per dimension, the absolute index of its first
element (its *origin*); its domain is ``[origin, origin + size)``. A shift moves the origin,
not the data. Operations act on the intersection of their operands' domains and broadcast
along dimensions an operand lacks. Program parameters are backed by a ``_Cell`` so that
namespaces without in-place update (JAX) can replace the array after a write.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from allocators import namespace_attribute
from backends.arrayapi.elementwise import (
    MANY_OPERANDS,
    floor_divide,
    many_operand_function,
    unary_function,
)
from backends.arrayapi.operands import as_array, coerce, is_scalar
from pipeline.dsl.evaluation import current_output_domain
from pipeline.dsl.regions import Region
from pipeline.dsl.stages import ScanSettings
from pipeline.dsl.types import Named, Offset, record_of

__all__ = ["EmbeddedField", "field_parameter", "input_field"]

Scalar = bool | int | float


@attrs.define(eq=False)
class _Cell:
    """Holds the current array of a program parameter."""

    array: Any
    functional: bool


_BinaryMethod = Callable[["EmbeddedField", Any], "EmbeddedField"]


def _operator(op: Callable[[Any, Any], Any], reflected: bool = False) -> _BinaryMethod:
    """The method of a binary operator: ``op`` over both operands' common domain."""

    def method(self: EmbeddedField, other: Any) -> EmbeddedField:
        return self._binary(other, op, reflected)

    return method


def _operators(op: Callable[[Any, Any], Any]) -> tuple[_BinaryMethod, _BinaryMethod]:
    """The methods of a binary operator and of its reflection (``__add__``, ``__radd__``)."""
    return _operator(op), _operator(op, True)


def _unary_operator(op: Callable[[Any], Any]) -> Callable[[EmbeddedField], EmbeddedField]:
    """The method of a unary operator: ``op`` over the field's domain."""

    def method(self: EmbeddedField) -> EmbeddedField:
        return self._combine([], op)

    return method


# Not frozen: a frozen attrs class takes twice as long to build, and a field is built per
# operation of a running definition.
@attrs.define(eq=False, repr=False)
class EmbeddedField:
    """An array over named dimensions with an origin per dimension.

    Attributes:
        dims: dimension names, one per array axis.
        origin: absolute index of the first element along each axis.
        ns: the array namespace.
        cell: the current array of the program parameter this field is a slice of (read at
            ``index``), or None for a field that holds its own array.
    """

    _data: Any
    dims: tuple[str, ...]
    origin: tuple[int, ...]
    ns: Any
    cell: _Cell | None = None
    _index: tuple[slice, ...] | None = None
    __hash__ = None  # type: ignore[assignment]  # == builds a field, so fields are unhashable

    @property
    def array(self) -> Any:
        """The current values (read through the cell for program parameters)."""
        if self.cell is not None:
            assert self._index is not None
            return self.cell.array[self._index]
        return self._data

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    def bounds(self) -> dict[str, tuple[int, int]]:
        """Absolute (start, stop) per dimension."""
        return {d: (o, o + n) for d, o, n in zip(self.dims, self.origin, self.shape, strict=True)}

    def __repr__(self) -> str:
        domain = ", ".join(f"{d}[{a}:{b}]" for d, (a, b) in self.bounds().items())
        return f"EmbeddedField({domain}, dtype={self.array.dtype})"

    # -- shifts and output slices ---------------------------------------------------------
    def __call__(self, *offsets: Offset) -> EmbeddedField:
        origin = list(self.origin)
        for offset in offsets:
            name = offset.dimension.name
            if name not in self.dims:
                raise ValueError(f"cannot shift along {name}: the field has dimensions {self.dims}")
            origin[self.dims.index(name)] -= offset.value
        return EmbeddedField(self.array, self.dims, tuple(origin), self.ns)

    def __getitem__(self, index: slice | tuple[slice, ...]) -> EmbeddedField:
        items = index if isinstance(index, tuple) else (index,)
        if len(items) > len(self.dims) or not all(isinstance(s, slice) for s in items):
            raise IndexError(f"slice a field with one slice per dimension {self.dims}")
        items = items + (slice(None),) * (len(self.dims) - len(items))
        bounds = [s.indices(n)[:2] for s, n in zip(items, self.shape, strict=True)]
        slices = tuple(slice(a, max(a, b)) for a, b in bounds)
        origin = tuple(o + a for o, (a, _) in zip(self.origin, bounds, strict=True))
        if self.cell is None:
            return EmbeddedField(self.array[slices], self.dims, origin, self.ns)
        assert self._index is not None
        root = tuple(
            slice(r.start + s.start, r.start + s.stop)
            for r, s in zip(self._index, slices, strict=True)
        )
        return EmbeddedField(None, self.dims, origin, self.ns, self.cell, root)

    def __dsl_domain__(self, bounds: dict[str, tuple[int, int]]) -> EmbeddedField:
        """This field cut to absolute ``bounds`` (start, stop) along some dimensions."""
        slices = tuple(
            slice(bounds[d][0] - o, bounds[d][1] - o) if d in bounds else slice(None)
            for d, o in zip(self.dims, self.origin, strict=True)
        )
        return self[slices]

    def __dsl_assign__(self, value: EmbeddedField | Scalar) -> None:
        """Write ``value`` over this field's whole domain (the ``out=`` of a call)."""
        if any(n == 0 for n in self.shape):
            return  # an empty domain: nothing to write (and inputs need not cover it)
        dtype = self.array.dtype
        if isinstance(value, EmbeddedField):
            data = value._restricted(self.bounds(), self.dims)
            data = self.ns.astype(data, dtype) if data.dtype != dtype else data
            data = self.ns.broadcast_to(data, self.shape)
        else:
            data = self.ns.full(self.shape, value, dtype=dtype)
        if self.cell is None or self._index is None:
            raise TypeError("only slices of program parameters can be written with out=")
        if self.cell.functional:
            self.cell.array = self.cell.array.at[self._index].set(data)
        else:
            self.cell.array[self._index] = data

    def _restricted(self, bounds: dict[str, tuple[int, int]], dims: Sequence[str]) -> Any:
        """The values over ``bounds``, axes ordered as ``dims`` (size 1 where broadcast)."""
        index = []
        for d, o in zip(self.dims, self.origin, strict=True):
            start, stop = bounds.get(d, (o, o + self.shape[self.dims.index(d)]))
            index.append(slice(start - o, stop - o))
        data = self.array[tuple(index)]
        present = [d for d in dims if d in self.dims]
        if present != list(self.dims):
            data = self.ns.permute_dims(data, tuple(self.dims.index(d) for d in present))
        shape = [data.shape[present.index(d)] if d in self.dims else 1 for d in dims]
        return self.ns.reshape(data, tuple(shape))

    # -- elementwise operations -----------------------------------------------------------
    def _combine(self, others: Sequence[Any], function: Callable[..., Any]) -> EmbeddedField:
        fields = [self, *[o for o in others if isinstance(o, EmbeddedField)]]
        dims, bounds = _common_domain(fields)
        arrays = [
            o._restricted(bounds, dims)
            if isinstance(o, EmbeddedField)
            # A NumPy scalar (float64(x) of a number) is strong: a 0-d array of the namespace.
            else (self.ns.asarray(o) if isinstance(o, np.generic) else o)
            for o in (self, *others)
        ]
        result = function(*arrays)
        origin = tuple(bounds[d][0] for d in dims)
        return EmbeddedField(result, tuple(dims), origin, self.ns)

    def _binary(
        self, other: Any, op: Callable[[Any, Any], Any], reflected: bool = False
    ) -> EmbeddedField:
        def apply(a: Any, b: Any) -> Any:
            a, b = coerce(self.ns, a, b, op)
            return op(b, a) if reflected else op(a, b)

        if not isinstance(other, EmbeddedField) and not is_scalar(other):
            return NotImplemented  # type: ignore[no-any-return]
        return self._combine([other], apply)

    __add__, __radd__ = _operators(operator.add)
    __sub__, __rsub__ = _operators(operator.sub)
    __mul__, __rmul__ = _operators(operator.mul)
    __truediv__, __rtruediv__ = _operators(operator.truediv)
    __mod__, __rmod__ = _operators(operator.mod)
    __pow__, __rpow__ = _operators(operator.pow)
    __and__, __rand__ = _operators(operator.and_)
    __or__, __ror__ = _operators(operator.or_)
    __lt__ = _operator(operator.lt)
    __le__ = _operator(operator.le)
    __gt__ = _operator(operator.gt)
    __ge__ = _operator(operator.ge)
    __eq__ = _operator(operator.eq)  # type: ignore[assignment]
    __ne__ = _operator(operator.ne)  # type: ignore[assignment]
    __neg__ = _unary_operator(operator.neg)
    __pos__ = _unary_operator(operator.pos)
    __invert__ = _unary_operator(operator.invert)

    def __floordiv__(self, o: Any) -> EmbeddedField:
        return self._binary(o, functools.partial(floor_divide, self.ns))

    def __rfloordiv__(self, o: Any) -> EmbeddedField:
        return self._binary(o, functools.partial(floor_divide, self.ns), True)

    def __abs__(self) -> EmbeddedField:
        return self._combine([], self.ns.abs)

    def __bool__(self) -> bool:
        raise TypeError(
            "a field has no truth value; use where(cond, a, b) instead of if/and/or, and & | ~"
        )

    def __dsl_scan__(
        self,
        function: Callable[..., Any],
        settings: ScanSettings,
        args: tuple[Any, ...],
        domain: dict[str, tuple[int, int]] | None,
    ) -> EmbeddedField | tuple[EmbeddedField, ...]:
        """Sweep ``function`` along the scan's axis over the arguments' common domain (cut
        to the output ``domain`` where it says more), one plane at a time."""
        fields = [a for a in args if isinstance(a, EmbeddedField)]
        dims, bounds = _common_domain(fields)
        axis = settings.axis
        if axis not in dims:
            raise ValueError(
                f"the scan sweeps {axis}, but its arguments have dimensions {tuple(dims)}"
            )
        for d, (start, stop) in (domain or {}).items():
            if d in bounds:
                lo, hi = bounds[d]
                bounds[d] = (max(lo, start), max(lo, start, min(hi, stop)))
        ns = self.ns
        # Each field over its own dimensions only: a plane of a field of fewer dimensions
        # broadcasts, it does not claim the others' extents.
        owned = [
            [d for d in dims if d in a.dims] if isinstance(a, EmbeddedField) else []
            for a in args
        ]
        arrays = [
            a._restricted(bounds, own) if isinstance(a, EmbeddedField) else a
            for a, own in zip(args, owned, strict=True)
        ]
        position = dims.index(axis)
        plane_dims = tuple(d for d in dims if d != axis)
        plane_origin = tuple(bounds[d][0] for d in plane_dims)
        plane_shape = tuple(bounds[d][1] - bounds[d][0] for d in plane_dims)
        start, stop = bounds[axis]
        points = range(stop - start) if settings.forward else range(stop - start - 1, -1, -1)
        init = settings.init
        # A named collection's carry is its class's instance, as the function reads it.
        carry: Any = init.record.build(tuple(init)) if isinstance(init, Named) else init
        carries: list[tuple[Any, ...]] = []
        for point in points:
            values = [
                _plane_field(ns, a, own, axis, point, bounds)
                if isinstance(b, EmbeddedField)
                else a
                for a, b, own in zip(arrays, args, owned, strict=True)
            ]
            carry = function(carry, *values)
            record = record_of(type(carry))
            carries.append(
                record.values(carry)
                if record is not None
                else carry if isinstance(carry, tuple) else (carry,)
            )
        if not settings.forward:
            carries.reverse()
        components = len(settings.init) if isinstance(settings.init, tuple) else 1
        results = []
        for component in range(components):
            planes = [
                _full_plane(ns, c[component], plane_dims, plane_origin, plane_shape, self)
                for c in carries
            ]
            origin = (*plane_origin[:position], start, *plane_origin[position:])
            if planes:
                stacked = ns.stack(planes, axis=position)
            else:
                shape = (*plane_shape[:position], 0, *plane_shape[position:])
                stacked = ns.zeros(shape, dtype=ns.float64)
            results.append(EmbeddedField(stacked, tuple(dims), origin, ns))
        if isinstance(init, Named):
            return init.record.build(tuple(results))  # type: ignore[no-any-return]
        return tuple(results) if isinstance(init, tuple) else results[0]

    def __dsl_builtin__(self, name: str, args: tuple[Any, ...]) -> Any:
        """Apply the DSL builtin ``name`` (see ``pipeline.dsl.builtins``)."""
        ns = self.ns
        position = next(i for i, a in enumerate(args) if isinstance(a, EmbeddedField))
        first = args[position]
        if name == "astype":
            dtype = namespace_attribute(ns, np.dtype(args[1]).name)
            return first._combine([], lambda a: ns.astype(a, dtype))
        if name == "concat_where":
            return _concat_where(ns, *args)
        if name in MANY_OPERANDS:
            # By position, not identity: the same field may be passed twice (minimum(x, x)).
            others = [*args[:position], *args[position + 1 :]]
            return first._combine(others, many_operand_function(ns, name, position))
        return first._combine([], unary_function(ns, name))


def _concat_where(ns: Any, region: Region, a: Any, b: Any) -> EmbeddedField:
    """``a`` where ``region`` holds, ``b`` elsewhere, over the output domain of the call
    (each branch taken only where its own domain reaches)."""
    fields = [v for v in (a, b) if isinstance(v, EmbeddedField)]
    dims, _ = _common_domain(fields)
    domain = current_output_domain() or {}
    # Over every point either branch has, and the output domain (a number has them all).
    bounds: dict[str, tuple[int, int]] = {}
    for d in dims:
        spans = [f.bounds()[d] for f in fields if d in f.dims]
        if d in domain:
            spans.append(domain[d])
        bounds[d] = (min(lo for lo, _ in spans), max(hi for _, hi in spans))
    shape = tuple(bounds[d][1] - bounds[d][0] for d in dims)
    mask = ns.zeros(shape, dtype=ns.bool)
    for box in region.resolve({}):
        inside = ns.ones(shape, dtype=ns.bool)
        for d, (lo, hi) in box.items():
            axis = dims.index(d)
            index = ns.reshape(
                ns.arange(bounds[d][0], bounds[d][1], dtype=ns.int64),
                tuple(-1 if i == axis else 1 for i in range(len(dims))),
            )
            if lo is not None:
                inside = inside & (index >= lo)
            if hi is not None:
                inside = inside & (index < hi)
        mask = mask | inside
    first, second = (_placed(ns, v, bounds, dims, shape) for v in (a, b))
    first, second = coerce(ns, first, second, None)
    first, second = as_array(ns, first, second), as_array(ns, second, first)
    origin = tuple(bounds[d][0] for d in dims)
    return EmbeddedField(ns.where(mask, first, second), tuple(dims), origin, ns)


def _placed(
    ns: Any,
    value: Any,
    bounds: dict[str, tuple[int, int]],
    dims: list[str],
    shape: tuple[int, ...],
) -> Any:
    """A field's values over ``bounds`` (zeros where its domain does not reach); a number
    as it is."""
    if not isinstance(value, EmbeddedField):
        return value
    own = value.bounds()
    cut = {
        d: (max(lo, own[d][0]), max(lo, own[d][0], min(hi, own[d][1])))
        if d in own
        else (lo, hi)
        for d, (lo, hi) in bounds.items()
    }
    data = value._restricted(cut, dims)
    data = ns.broadcast_to(data, tuple(cut[d][1] - cut[d][0] for d in dims))
    concat = getattr(ns, "concat", None) or ns.concatenate
    for axis, d in enumerate(dims):
        before = cut[d][0] - bounds[d][0]
        after = bounds[d][1] - cut[d][1]
        if before or after:
            sizes = list(data.shape)
            pieces = []
            for count in (before, None, after):
                if count is None:
                    pieces.append(data)
                elif count:
                    sizes[axis] = count
                    pieces.append(ns.zeros(tuple(sizes), dtype=data.dtype))
            data = concat(pieces, axis=axis)
    return data


def _common_domain(
    fields: Sequence[EmbeddedField],
) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """The dimensions of ``fields`` (the widest's first) and the intersection of their
    domains."""
    widest = max(fields, key=lambda f: len(f.dims))
    dims = list(widest.dims)
    for f in fields:
        dims.extend(d for d in f.dims if d not in dims)
    bounds: dict[str, tuple[int, int]] = {}
    for f in fields:
        for d, (a, b) in f.bounds().items():
            lo, hi = bounds.get(d, (a, b))
            bounds[d] = (max(lo, a), max(lo, a, min(hi, b)))
    return dims, bounds


def _plane(ns: Any, array: Any, axis: int, index: int) -> Any:
    """``array`` at ``index`` along ``axis`` (index 0 where the array is broadcast there)."""
    at = index if array.shape[axis] > 1 else 0
    return array[(*(slice(None),) * axis, at, ...)]


def _plane_field(
    ns: Any,
    array: Any,
    dims: list[str],
    axis: str,
    point: int,
    bounds: dict[str, tuple[int, int]],
) -> EmbeddedField:
    """The plane at ``point`` along ``axis`` of ``array`` (over ``dims``, cut to ``bounds``):
    a field over its dimensions but the axis; the array itself when it has no such axis."""
    if axis not in dims:
        return EmbeddedField(array, tuple(dims), tuple(bounds[d][0] for d in dims), ns)
    plane_dims = tuple(d for d in dims if d != axis)
    origin = tuple(bounds[d][0] for d in plane_dims)
    return EmbeddedField(_plane(ns, array, dims.index(axis), point), plane_dims, origin, ns)


def _full_plane(
    ns: Any,
    value: Any,
    dims: tuple[str, ...],
    origin: tuple[int, ...],
    shape: tuple[int, ...],
    like: EmbeddedField,
) -> Any:
    """A carry component (a field over some of the plane's dimensions, or a number) as an
    array over the whole plane."""
    if isinstance(value, EmbeddedField):
        bounds = {d: (o, o + n) for d, o, n in zip(dims, origin, shape, strict=True)}
        return ns.broadcast_to(value._restricted(bounds, dims), shape)
    return ns.full(shape, value, dtype=ns.float64 if isinstance(value, float) else None)


def field_parameter(
    array: Any,
    dims: tuple[str, ...],
    ns: Any,
    functional: bool,
    origin: tuple[int, ...] | None = None,
) -> EmbeddedField:
    """The field a program parameter's array becomes, its element 0 at ``origin`` (a located
    array's, ADR 0026; None: 0 in every dimension)."""
    cell = _Cell(array, functional)
    index = tuple(slice(0, n) for n in array.shape)
    return EmbeddedField(None, dims, origin or (0,) * len(dims), ns, cell, index)


def input_field(
    array: Any,
    dims: tuple[str, ...],
    box: tuple[tuple[int, int], ...],
    ns: Any,
    origin: tuple[int, ...] | None = None,
) -> EmbeddedField:
    """A read-only program parameter restricted to ``box`` (start, stop per axis, in
    elements), its origin at the box's start moved by the array's ``origin`` (a located
    array's; None: 0): operations then compute over what the program reads, no more."""
    view = array[tuple(slice(start, stop) for start, stop in box)]
    starts = tuple(start for start, _ in box)
    if origin is not None:
        starts = tuple(start + at for start, at in zip(starts, origin, strict=True))
    return EmbeddedField(view, dims, starts, ns)
