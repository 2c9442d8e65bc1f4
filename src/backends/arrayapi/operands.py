"""The operands of an embedded operation, converted as the frontend types them.

Python literals are weak (NumPy 2 weak scalars: they take their kind from the other operand);
NumPy scalars and 0-d arrays are strong. Converting explicitly, rather than leaving it to the
namespace, makes strict namespaces agree with NumPy.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from allocators import namespace_attribute

__all__ = ["as_array", "coerce", "is_integer", "is_scalar", "kind"]

#: Weak kinds in promotion order: two literals promote to the later of their kinds.
_WEAK_ORDER = "bif"
_PYTHON_TYPES: dict[str, type] = {"b": bool, "i": int, "f": float}
_ORDERINGS = frozenset({operator.lt, operator.le, operator.gt, operator.ge})


def is_scalar(value: Any) -> bool:
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


def is_integer(array: Any) -> bool:
    """Whether ``array`` is an array of an integer dtype (signed or not)."""
    return hasattr(array, "dtype") and np.dtype(str(array.dtype).rsplit(".", 1)[-1]).kind in "iu"


def kind(value: Any) -> str:
    """The kind of a scalar or array: ``"b"``, ``"i"`` (unsigned included) or ``"f"``."""
    if isinstance(value, bool | np.bool_):
        return "b"
    if isinstance(value, int | np.integer):
        return "i"
    if isinstance(value, float | np.floating):
        return "f"
    return np.dtype(str(value.dtype).rsplit(".", 1)[-1]).kind.replace("u", "i")


def coerce(ns: Any, a: Any, b: Any, op: Callable[..., Any] | None) -> tuple[Any, Any]:
    """Convert two operands as the frontend types them (``pipeline.dsl.passes.typing_.promote``).

    Done explicitly, so that strict namespaces agree with NumPy and a pair of literals (``where(c,
    3, 0.5)``) has the common kind of both rather than the first one's.
    """
    ka, kb = kind(a), kind(b)
    if op is operator.truediv and ka in "ib" and kb in "ib":
        return _to_float(ns, a), _to_float(ns, b)
    if op in _ORDERINGS and ka == kb == "b":
        # NumPy orders False before True; the array API defines no ordering of booleans.
        return _to_int(ns, a), _to_int(ns, b)
    if ka == kb:
        return a, b
    if _is_weak(a) and _is_weak(b):
        common = max(ka, kb, key=_WEAK_ORDER.index)
        python_type = _PYTHON_TYPES[common]
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


def _to_int(ns: Any, value: Any) -> Any:
    return int(value) if _is_weak(value) else _astype(ns, value, "int64")


def _to_float(ns: Any, value: Any) -> Any:
    return float(value) if _is_weak(value) else _astype(ns, value, "float64")


def as_array(ns: Any, value: Any, like: Any) -> Any:
    """``value`` as an array of ``ns`` when it is a scalar (of ``like``'s dtype, where ``like``
    has one); an array as it is."""
    if not is_scalar(value):
        return value
    dtype = like.dtype if like is not None and hasattr(like, "dtype") else None
    return ns.asarray(value, dtype=dtype)
