"""The DSL's builtin functions: ``where``, ``astype``, the math functions and the dtypes.

In a field operator the frontend recognizes these objects by identity and turns them into IR.
When the definition runs embedded, they dispatch to the field objects passed in (anything with
a ``__dsl_builtin__(name, args)`` method); on plain Python or NumPy scalars they compute with
NumPy.

The dtypes ``float64``, ``int32``, ... exported by ``pipeline`` are ``DType`` objects: NumPy
takes them wherever it takes a dtype (``allocators.zeros(shape, float64)``), and in a field
operator ``float64(x)`` converts, as ``astype(x, float64)`` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pipeline.dsl import types
from pipeline.dsl.types import as_dtype

__all__ = [
    "DType",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctanh",
    "astype",
    "bool_",
    "cbrt",
    "ceil",
    "concat_where",
    "cos",
    "cosh",
    "exp",
    "float32",
    "float64",
    "floor",
    "fmod",
    "gamma",
    "int32",
    "int64",
    "isfinite",
    "isinf",
    "isnan",
    "log",
    "maximum",
    "minimum",
    "power",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
    "where",
]

# name -> number of arguments; "abs" is Python's builtin.
BUILTIN_ARITY: dict[str, int] = {
    "where": 3,
    "concat_where": 3,
    "abs": 1,
    "sqrt": 1,
    "exp": 1,
    "log": 1,
    "sin": 1,
    "cos": 1,
    "tan": 1,
    "arcsin": 1,
    "arccos": 1,
    "arctan": 1,
    "sinh": 1,
    "cosh": 1,
    "tanh": 1,
    "arcsinh": 1,
    "arccosh": 1,
    "arctanh": 1,
    "cbrt": 1,
    "gamma": 1,
    "floor": 1,
    "ceil": 1,
    "trunc": 1,
    "isfinite": 1,
    "isinf": 1,
    "isnan": 1,
    "minimum": 2,
    "maximum": 2,
    "power": 2,
    "fmod": 2,
}
MATH_FUNCTIONS = frozenset(BUILTIN_ARITY) - {"where", "concat_where", "abs"}
#: The frontend's choice on a scalar condition (``if`` statements, ``a if c else b``): typed
#: like ``where``, with a scalar condition, and rewritten to ``where`` by the type pass.
SCALAR_CHOICE = "__scalar_choice__"
#: Builtins of one number that answer a question about it: boolean results.
PREDICATES = frozenset({"isfinite", "isinf", "isnan"})


def _dispatch(name: str, args: tuple[Any, ...]) -> Any:
    for arg in args:
        method = getattr(arg, "__dsl_builtin__", None)
        if method is not None:
            return method(name, args)
    if name == "gamma":
        return scalar_gamma(args[0])
    if name == "concat_where":
        raise TypeError(
            "concat_where(cond, a, b) chooses between fields: a or b must be a field"
        )
    return getattr(np, name)(*args)


def scalar_gamma(value: Any) -> Any:
    """C's ``tgamma`` of one number, in its float dtype (NumPy has no gamma function)."""
    dtype = value.dtype if isinstance(value, np.floating) else np.dtype(np.float64)
    x = float(value)
    try:
        result = math.gamma(x)
    except ValueError:  # a pole: 0 (signed infinity) or a negative integer (NaN)
        result = math.copysign(math.inf, x) if x == 0 else math.nan
    except OverflowError:
        result = math.inf
    return dtype.type(result)


def _make(name: str) -> Callable[..., Any]:
    arity = BUILTIN_ARITY[name]

    def builtin(*args: Any) -> Any:
        if len(args) != arity:
            raise TypeError(f"{name}() takes {arity} argument(s), got {len(args)}")
        return _dispatch(name, args)

    builtin.__name__ = builtin.__qualname__ = name
    builtin.__module__ = __name__
    builtin.__doc__ = f"The DSL builtin ``{name}`` (elementwise, like ``numpy.{name}``)."
    return builtin


def _items(value: Any) -> tuple[Any, ...] | None:
    """The items of a tuple or of a named collection instance; None for a single value."""
    record = types.record_of(type(value))
    if record is not None:
        return record.values(value)
    return tuple(value) if isinstance(value, tuple) else None


def _like(template: Any, items: list[Any]) -> Any:
    """``items`` as a value of ``template``'s kind: its collection class, or a tuple."""
    record = types.record_of(type(template))
    return record.build(tuple(items)) if record is not None else tuple(items)


def _nesting(value: Any) -> Any:
    """The nesting of ``value``, comparable: None for a single value, else its collection
    class (None for a plain tuple) and its items' nestings."""
    items = _items(value)
    if items is None:
        return None
    record = types.record_of(type(value))
    return (record.cls if record is not None else None, tuple(_nesting(i) for i in items))


def _describe(value: Any) -> str:
    items = _items(value)
    if items is None:
        return "value"
    record = types.record_of(type(value))
    if record is None:
        return f"({', '.join(_describe(item) for item in items)})"
    named = zip(record.fields, items, strict=True)
    return f"{record.name}({', '.join(f'{f}={_describe(i)}' for f, i in named)})"


def _pairwise(name: str, choice: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    """``choice(a, b)`` of single values; of tuples (or collections of one class) nested
    alike, the tuple of the choices between their items.

    Raises:
        TypeError: ``a`` and ``b`` are nested differently.
    """
    if _nesting(a) != _nesting(b):
        raise TypeError(
            f"the branches of {name}() are {_describe(a)} and {_describe(b)}; a choice "
            "between tuples is made item by item, so nest both branches alike"
        )
    return _chosen(choice, a, b)


def _chosen(choice: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
    items_a, items_b = _items(a), _items(b)
    if items_a is None or items_b is None:
        return choice(a, b)
    return _like(a, [_chosen(choice, x, y) for x, y in zip(items_a, items_b, strict=True)])


def where(cond: Any, a: Any, b: Any) -> Any:
    """The DSL builtin ``where(cond, a, b)``: ``a`` where ``cond`` holds, ``b`` elsewhere
    (elementwise, like ``numpy.where``). Of two tuples nested alike (or two instances of one
    dataclass or NamedTuple), the tuple of the choices between their items.

    Raises:
        TypeError: ``cond`` is a tuple, or the branches are nested differently.
    """
    if _items(cond) is not None:
        raise TypeError("the mask of where() is one field or scalar, not a tuple")
    return _pairwise("where", lambda x, y: _dispatch("where", (cond, x, y)), a, b)


def concat_where(cond: Any, a: Any, b: Any) -> Any:
    """The DSL builtin ``concat_where(cond, a, b)``: ``a`` where the condition on indices
    holds (``K == 0``, ``I < n``, combined with ``& | ~``), ``b`` elsewhere; each is
    evaluated only where it is chosen, so a boundary condition reads no halo. Of two tuples
    nested alike, the tuple of the choices between their items.

    Raises:
        TypeError: the branches are nested differently, or neither of two items is a field.
    """
    return _pairwise(
        "concat_where", lambda x, y: _dispatch("concat_where", (cond, x, y)), a, b
    )


sqrt = _make("sqrt")
exp = _make("exp")
log = _make("log")
sin = _make("sin")
cos = _make("cos")
tan = _make("tan")
arcsin = _make("arcsin")
arccos = _make("arccos")
arctan = _make("arctan")
sinh = _make("sinh")
cosh = _make("cosh")
tanh = _make("tanh")
arcsinh = _make("arcsinh")
arccosh = _make("arccosh")
arctanh = _make("arctanh")
cbrt = _make("cbrt")
gamma = _make("gamma")
floor = _make("floor")
ceil = _make("ceil")
trunc = _make("trunc")
isfinite = _make("isfinite")
isinf = _make("isinf")
isnan = _make("isnan")
minimum = _make("minimum")
maximum = _make("maximum")
power = _make("power")
fmod = _make("fmod")


def astype(value: Any, dtype: Any) -> Any:
    """Convert ``value`` to ``dtype`` (one of the DSL dtypes); a tuple (or a dataclass or
    NamedTuple instance) item by item.

    Raises:
        TypeError: ``dtype`` is not a DSL dtype.
    """
    resolved = as_dtype(dtype)
    if resolved is None:
        raise TypeError(f"astype() needs a DSL dtype, got {dtype!r}")
    items = _items(value)
    if items is not None:
        return _like(value, [astype(item, resolved) for item in items])
    method = getattr(value, "__dsl_builtin__", None)
    if method is not None:
        return method("astype", (value, resolved))
    return resolved.type(value)


class DType:
    """A DSL dtype (``float64``, ``int32``, ...): a dtype to NumPy, a conversion in the DSL.

    NumPy, CuPy and JAX take it wherever they take a dtype (it has a ``dtype`` attribute) and
    it compares equal to the NumPy dtype it names. Called, ``float64(x)`` is
    ``astype(x, float64)``: in a field operator on fields or scalars, elsewhere on numbers.
    """

    __slots__ = ("dtype",)

    def __init__(self, dtype: np.dtype[Any]) -> None:
        self.dtype = dtype

    def __call__(self, value: Any) -> Any:
        return astype(value, self.dtype)

    def __eq__(self, other: object) -> bool:
        if other is None:  # np.dtype(None) is float64
            return False
        try:
            return bool(np.dtype(other) == self.dtype)  # type: ignore[call-overload]
        except TypeError:
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.dtype)

    def __repr__(self) -> str:
        return self.dtype.name

    def __getattr__(self, name: str) -> Any:
        # The rest of numpy.dtype's surface (name, kind, itemsize, type, ...).
        if name == "dtype":  # not yet set (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.dtype, name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (DType, (self.dtype,))


float32 = DType(types.float32)
float64 = DType(types.float64)
int32 = DType(types.int32)
int64 = DType(types.int64)
bool_ = DType(types.bool_)


_BY_OBJECT: dict[int, str] = {
    id(f): f.__name__
    for f in (
        where,
        concat_where,
        sqrt,
        exp,
        log,
        sin,
        cos,
        tan,
        arcsin,
        arccos,
        arctan,
        sinh,
        cosh,
        tanh,
        arcsinh,
        arccosh,
        arctanh,
        cbrt,
        gamma,
        floor,
        ceil,
        trunc,
        isfinite,
        isinf,
        isnan,
        minimum,
        maximum,
        power,
        fmod,
    )
}
_BY_OBJECT[id(abs)] = "abs"
_BY_OBJECT[id(astype)] = "astype"


def builtin_name(value: object) -> str | None:
    """The IR name of a DSL builtin object (``abs`` included), or None."""
    return _BY_OBJECT.get(id(value))
