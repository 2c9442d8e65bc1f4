"""The DSL's builtin functions: ``where``, ``astype`` and the math functions.

In a field operator the frontend recognizes these objects by identity and turns them into IR.
When the definition runs embedded, they dispatch to the field objects passed in (anything with
a ``__dsl_builtin__(name, args)`` method); on plain Python or NumPy scalars they compute with
NumPy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pipeline.dsl.types import as_dtype

__all__ = [
    "BUILTIN_ARITY",
    "arccos",
    "arcsin",
    "arctan",
    "astype",
    "builtin_name",
    "ceil",
    "cos",
    "cosh",
    "exp",
    "floor",
    "log",
    "maximum",
    "minimum",
    "power",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "where",
]

# name -> number of arguments; "abs" is Python's builtin.
BUILTIN_ARITY: dict[str, int] = {
    "where": 3,
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
    "floor": 1,
    "ceil": 1,
    "minimum": 2,
    "maximum": 2,
    "power": 2,
}
MATH_FUNCTIONS = frozenset(BUILTIN_ARITY) - {"where", "abs"}


def _dispatch(name: str, args: tuple[Any, ...]) -> Any:
    for arg in args:
        method = getattr(arg, "__dsl_builtin__", None)
        if method is not None:
            return method(name, args)
    return getattr(np, name)(*args)


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


where = _make("where")
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
floor = _make("floor")
ceil = _make("ceil")
minimum = _make("minimum")
maximum = _make("maximum")
power = _make("power")


def astype(value: Any, dtype: Any) -> Any:
    """Convert ``value`` to ``dtype`` (one of the DSL dtypes)."""
    resolved = as_dtype(dtype)
    if resolved is None:
        raise TypeError(f"astype() needs a DSL dtype, got {dtype!r}")
    method = getattr(value, "__dsl_builtin__", None)
    if method is not None:
        return method("astype", (value, resolved))
    return resolved.type(value)


_BY_OBJECT: dict[int, str] = {
    id(f): f.__name__
    for f in (
        where,
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
        floor,
        ceil,
        minimum,
        maximum,
        power,
    )
}
_BY_OBJECT[id(abs)] = "abs"
_BY_OBJECT[id(astype)] = "astype"


def builtin_name(value: object) -> str | None:
    """The IR name of a DSL builtin object (``abs`` included), or None."""
    return _BY_OBJECT.get(id(value))
