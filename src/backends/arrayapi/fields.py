"""Fields over an array namespace: the values a definition computes on when run embedded.

An ``EmbeddedField`` is an array plus, per dimension, the absolute index of its first
element (its *origin*); its domain is ``[origin, origin + size)``. A shift moves the origin,
not the data. Operations act on the intersection of their operands' domains and broadcast
along dimensions an operand lacks. Program parameters are backed by a ``_Cell`` so that
namespaces without in-place update (JAX) can replace the array after a write.
"""

from __future__ import annotations

import functools
import importlib
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from allocators import namespace_attribute, namespace_name
from pipeline.dsl.builtins import scalar_gamma
from pipeline.dsl.programs import current_output_domain
from pipeline.dsl.regions import Region
from pipeline.dsl.stages import ScanSettings
from pipeline.dsl.types import Offset

__all__ = ["EmbeddedField", "field_parameter", "input_field"]

Scalar = bool | int | float


class _Cell:
    """Holds the current array of a program parameter."""

    __slots__ = ("array", "functional")

    def __init__(self, array: Any, functional: bool) -> None:
        self.array = array
        self.functional = functional


class EmbeddedField:
    """An array over named dimensions with an origin per dimension.

    Attributes:
        dims: dimension names, one per array axis.
        origin: absolute index of the first element along each axis.
        ns: the array namespace.
    """

    __slots__ = ("_data", "_index", "cell", "dims", "ns", "origin")
    __hash__ = None  # type: ignore[assignment]  # == builds a field, so fields are unhashable

    def __init__(
        self,
        data: Any,
        dims: tuple[str, ...],
        origin: tuple[int, ...],
        ns: Any,
        cell: _Cell | None = None,
        index: tuple[slice, ...] | None = None,
    ) -> None:
        self._data = data
        self.dims = dims
        self.origin = origin
        self.ns = ns
        self.cell = cell
        self._index = index

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
            a, b = _coerce(self.ns, a, b, op)
            return op(b, a) if reflected else op(a, b)

        if not isinstance(other, EmbeddedField) and not _is_scalar(other):
            return NotImplemented  # type: ignore[no-any-return]
        return self._combine([other], apply)

    def __add__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.add)

    def __radd__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.add, True)

    def __sub__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.sub)

    def __rsub__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.sub, True)

    def __mul__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.mul)

    def __rmul__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.mul, True)

    def __truediv__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.truediv)

    def __rtruediv__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.truediv, True)

    def __floordiv__(self, o: Any) -> EmbeddedField:
        return self._binary(o, functools.partial(_floor_divide, self.ns))

    def __rfloordiv__(self, o: Any) -> EmbeddedField:
        return self._binary(o, functools.partial(_floor_divide, self.ns), True)

    def __mod__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.mod)

    def __rmod__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.mod, True)

    def __pow__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.pow)

    def __rpow__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.pow, True)

    def __and__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.and_)

    def __rand__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.and_, True)

    def __or__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.or_)

    def __ror__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.or_, True)

    def __lt__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.lt)

    def __le__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.le)

    def __gt__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.gt)

    def __ge__(self, o: Any) -> EmbeddedField:
        return self._binary(o, operator.ge)

    def __eq__(self, o: Any) -> EmbeddedField:  # type: ignore[override]
        return self._binary(o, operator.eq)

    def __ne__(self, o: Any) -> EmbeddedField:  # type: ignore[override]
        return self._binary(o, operator.ne)

    def __neg__(self) -> EmbeddedField:
        return self._combine([], operator.neg)

    def __pos__(self) -> EmbeddedField:
        return self._combine([], operator.pos)

    def __invert__(self) -> EmbeddedField:
        return self._combine([], operator.invert)

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
        arrays = [
            a._restricted(bounds, dims) if isinstance(a, EmbeddedField) else a for a in args
        ]
        position = dims.index(axis)
        plane_dims = tuple(d for d in dims if d != axis)
        plane_origin = tuple(bounds[d][0] for d in plane_dims)
        plane_shape = tuple(bounds[d][1] - bounds[d][0] for d in plane_dims)
        start, stop = bounds[axis]
        points = range(stop - start) if settings.forward else range(stop - start - 1, -1, -1)
        carry: Any = settings.init
        carries: list[tuple[Any, ...]] = []
        for point in points:
            values = [
                EmbeddedField(_plane(ns, a, position, point), plane_dims, plane_origin, ns)
                if isinstance(b, EmbeddedField)
                else a
                for a, b in zip(arrays, args, strict=True)
            ]
            carry = function(carry, *values)
            carries.append(carry if isinstance(carry, tuple) else (carry,))
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
        return tuple(results) if isinstance(settings.init, tuple) else results[0]

    def __dsl_builtin__(self, name: str, args: tuple[Any, ...]) -> Any:
        """Apply the DSL builtin ``name`` (see ``pipeline.dsl.builtins``)."""
        ns = self.ns
        position = next(i for i, a in enumerate(args) if isinstance(a, EmbeddedField))
        first = args[position]
        # By position, not identity: the same field may be passed twice (minimum(x, x)).
        others = [*args[:position], *args[position + 1 :]]

        def ordered(a0: Any, *rest: Any) -> list[Any]:
            values = list(rest)
            values.insert(position, a0)
            return values

        if name == "astype":
            dtype = namespace_attribute(ns, np.dtype(args[1]).name)
            return first._combine([], lambda a: ns.astype(a, dtype))
        if name == "concat_where":
            return _concat_where(ns, *args)
        if name == "where":

            def where(*values: Any) -> Any:
                cond, a, b = ordered(*values)
                a, b = _coerce(ns, a, b, None)
                a = _as_array(ns, a, b)
                b = _as_array(ns, b, a)
                return ns.where(_as_array(ns, cond, None), a, b)

            return first._combine(others, where)
        if name in {"minimum", "maximum", "power", "fmod"}:

            def binary(*values: Any) -> Any:
                a, b = ordered(*values)
                a, b = _coerce(ns, a, b, None)
                if name == "power":
                    return a**b
                a, b = _as_array(ns, a, b), _as_array(ns, b, a)
                if name == "fmod":
                    return _fmod(ns, a, b)
                return namespace_attribute(ns, name)(a, b)

            return first._combine(others, binary)

        def unary(a: Any) -> Any:
            if name in _PREDICATES:
                if _is_integer(a):
                    return ns.full(a.shape, name == "isfinite", dtype=ns.bool)
                return namespace_attribute(ns, name)(a)
            if _is_integer(a) and name in {"floor", "ceil", "trunc", "abs"}:
                return a if name != "abs" else ns.abs(a)
            if _is_integer(a):
                a = ns.astype(a, ns.float64)
            if name == "gamma":
                return _gamma(ns, a)
            if name == "cbrt" and not hasattr(ns, "cbrt"):  # not in the array API
                return ns.sign(a) * ns.abs(a) ** (1 / 3)
            return namespace_attribute(ns, _ARRAY_API_NAMES.get(name, name))(a)

        return first._combine([], unary)


# DSL (NumPy) names -> array-API standard names.
_ARRAY_API_NAMES = {
    "arcsin": "asin",
    "arccos": "acos",
    "arctan": "atan",
    "arcsinh": "asinh",
    "arccosh": "acosh",
    "arctanh": "atanh",
    "power": "pow",
}
_PREDICATES = frozenset({"isfinite", "isinf", "isnan"})


def _floor_divide(ns: Any, a: Any, b: Any) -> Any:
    """``a // b``, with NumPy's integer division by zero (0) also where the namespace leaves
    it undefined (JAX gives -1 or -2)."""
    result = a // b
    if not namespace_name(ns).startswith("jax") or _kind(result) != "i":
        return result
    return ns.where(b == 0, ns.zeros_like(result), result)


def _fmod(ns: Any, a: Any, b: Any) -> Any:
    """C's ``fmod`` (the sign of ``a``; integers by zero give 0, as in NumPy)."""
    if hasattr(ns, "fmod"):
        return ns.fmod(a, b)
    # The array API has only the remainder with the sign of b: move it to a's side.
    remainder = ns.remainder(a, b)
    moved = (remainder != 0) & ((remainder < 0) != (a < 0))
    return ns.where(moved, remainder - b, remainder)


def _host_gamma(a: Any) -> Any:
    host = np.asarray(a)
    return np.vectorize(scalar_gamma, otypes=[host.dtype])(host)


def _gamma(ns: Any, a: Any) -> Any:
    """``tgamma`` elementwise: no array namespace has it, so it runs on the host (on JAX as a
    callback, so that it also runs where ``jax.jit`` traces the definition)."""
    name = namespace_name(ns)
    if name.startswith("jax"):
        jax = importlib.import_module("jax")  # imported: its namespace was passed in
        return jax.pure_callback(_host_gamma, jax.ShapeDtypeStruct(a.shape, a.dtype), a)
    host = a.get() if name.startswith("cupy") else a  # CuPy copies to the host only if asked
    return ns.asarray(_host_gamma(host), dtype=a.dtype)


def _is_scalar(value: Any) -> bool:
    """A Python or NumPy scalar, or a 0-d array (how boolean scalar parameters arrive)."""
    if isinstance(value, bool | int | float | np.generic):
        return True
    return getattr(value, "shape", None) == () and hasattr(value, "dtype")


def _is_weak(value: Any) -> bool:
    """A Python literal: it takes its kind from the other operand (NumPy 2 weak scalars).

    NumPy scalars (``astype(3, float32)``) and 0-d arrays (boolean parameters) are strong,
    as the frontend types them.
    """
    return isinstance(value, bool | int | float)


def _is_integer(array: Any) -> bool:
    return hasattr(array, "dtype") and np.dtype(str(array.dtype).rsplit(".", 1)[-1]).kind in "iu"


def _kind(value: Any) -> str:
    if isinstance(value, bool | np.bool_):
        return "b"
    if isinstance(value, int | np.integer):
        return "i"
    if isinstance(value, float | np.floating):
        return "f"
    return np.dtype(str(value.dtype).rsplit(".", 1)[-1]).kind.replace("u", "i")


#: Weak kinds in promotion order: two literals promote to the later of their kinds.
_WEAK_ORDER = "bif"
_PYTHON_TYPES: dict[str, type] = {"b": bool, "i": int, "f": float}


def _coerce(ns: Any, a: Any, b: Any, op: Callable[..., Any] | None) -> tuple[Any, Any]:
    """Convert two operands as the frontend types them (``pipeline.dsl.passes.typing_.promote``).

    Done explicitly, so that strict namespaces agree with NumPy and a pair of literals (``where(c,
    3, 0.5)``) has the common kind of both rather than the first one's.
    """
    ka, kb = _kind(a), _kind(b)
    if op is operator.truediv and ka in "ib" and kb in "ib":
        return _to_float(ns, a), _to_float(ns, b)
    if op in _ORDERINGS and ka == kb == "b":
        # NumPy orders False before True; the array API defines no ordering of booleans.
        return _to_int(ns, a), _to_int(ns, b)
    if ka == kb:
        return a, b
    if _is_weak(a) and _is_weak(b):
        kind = max(ka, kb, key=_WEAK_ORDER.index)
        python_type = _PYTHON_TYPES[kind]
        return python_type(a), python_type(b)
    if _is_weak(b):
        return _promote_pair(ns, a, b, ka, kb)
    if _is_weak(a):
        b2, a2 = _promote_pair(ns, b, a, kb, ka)
        return a2, b2
    return a, b  # two strong operands of different kinds: the frontend refuses these


def _promote_pair(ns: Any, strong: Any, weak: Any, k_strong: str, k_weak: str) -> tuple[Any, Any]:
    """A strong operand and a literal of another kind, converted to their common dtype."""
    if k_weak == "f" and k_strong in "ib":
        return _astype(ns, strong, "float64"), float(weak)
    if k_weak == "i" and k_strong == "b":
        return _astype(ns, strong, "int64"), int(weak)
    return strong, _PYTHON_TYPES[k_strong](weak)


def _astype(ns: Any, value: Any, dtype: str) -> Any:
    if isinstance(value, np.generic):
        return np.dtype(dtype).type(value)
    return ns.astype(value, namespace_attribute(ns, dtype))


_ORDERINGS = frozenset({operator.lt, operator.le, operator.gt, operator.ge})


def _to_int(ns: Any, value: Any) -> Any:
    return int(value) if _is_weak(value) else _astype(ns, value, "int64")


def _to_float(ns: Any, value: Any) -> Any:
    return float(value) if _is_weak(value) else _astype(ns, value, "float64")


def _as_array(ns: Any, value: Any, like: Any) -> Any:
    if not _is_scalar(value):
        return value
    dtype = like.dtype if like is not None and hasattr(like, "dtype") else None
    return ns.asarray(value, dtype=dtype)


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
    first, second = _coerce(ns, first, second, None)
    first, second = _as_array(ns, first, second), _as_array(ns, second, first)
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


def field_parameter(array: Any, dims: tuple[str, ...], ns: Any, functional: bool) -> EmbeddedField:
    """The field a program parameter's array becomes, with origin 0 in every dimension."""
    cell = _Cell(array, functional)
    index = tuple(slice(0, n) for n in array.shape)
    return EmbeddedField(None, dims, (0,) * len(dims), ns, cell, index)


def input_field(
    array: Any, dims: tuple[str, ...], box: tuple[tuple[int, int], ...], ns: Any
) -> EmbeddedField:
    """A read-only program parameter restricted to ``box`` (start, stop per axis), its origin
    at the box's start: operations then compute over what the program reads, no more."""
    view = array[tuple(slice(start, stop) for start, stop in box)]
    return EmbeddedField(view, dims, tuple(start for start, _ in box), ns)
