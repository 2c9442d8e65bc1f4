"""The DSL's math builtins on the arrays of a namespace, as NumPy computes them.

What the array API names differently or lacks (``fmod``, ``cbrt``, ``gamma``, integer division
by zero on JAX) is filled in here, so that every namespace gives NumPy's values.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from allocators import namespace_attribute, namespace_name
from backends.arrayapi.operands import as_array, coerce, is_integer, kind
from pipeline.dsl.builtins import scalar_gamma

__all__ = ["MANY_OPERANDS", "floor_divide", "gamma", "many_operand_function", "unary_function"]

#: The builtins of several operands (the others take one).
MANY_OPERANDS = frozenset({"where", "minimum", "maximum", "power", "fmod"})

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


def many_operand_function(ns: Any, name: str, position: int) -> Callable[..., Any]:
    """The array function of builtin ``name`` (one of ``MANY_OPERANDS``) over ``ns``.

    It takes the operands with the one at ``position`` first (the field the builtin is applied
    through), then the others in their order; numbers among them are converted as the frontend
    types them.
    """

    def ordered(first: Any, *rest: Any) -> list[Any]:
        values = list(rest)
        values.insert(position, first)
        return values

    if name == "where":

        def where(*values: Any) -> Any:
            cond, a, b = ordered(*values)
            a, b = coerce(ns, a, b, None)
            a = as_array(ns, a, b)
            b = as_array(ns, b, a)
            return ns.where(as_array(ns, cond, None), a, b)

        return where

    def binary(*values: Any) -> Any:
        a, b = ordered(*values)
        a, b = coerce(ns, a, b, None)
        if name == "power":
            return a**b
        a, b = as_array(ns, a, b), as_array(ns, b, a)
        if name == "fmod":
            return _fmod(ns, a, b)
        return namespace_attribute(ns, name)(a, b)

    return binary


def unary_function(ns: Any, name: str) -> Callable[[Any], Any]:
    """The array function of the one-operand builtin ``name`` over ``ns``."""
    return functools.partial(_unary, ns, name)


def _unary(ns: Any, name: str, a: Any) -> Any:
    if name in _PREDICATES:
        if is_integer(a):
            return ns.full(a.shape, name == "isfinite", dtype=ns.bool)
        return namespace_attribute(ns, name)(a)
    if is_integer(a) and name in {"floor", "ceil", "trunc", "abs"}:
        return a if name != "abs" else ns.abs(a)
    if is_integer(a):
        a = ns.astype(a, ns.float64)
    if name == "gamma":
        return gamma(ns, a)
    if name == "cbrt" and not hasattr(ns, "cbrt"):  # not in the array API
        return ns.sign(a) * ns.abs(a) ** (1 / 3)
    return namespace_attribute(ns, _ARRAY_API_NAMES.get(name, name))(a)


def floor_divide(ns: Any, a: Any, b: Any) -> Any:
    """``a // b``, with NumPy's integer division by zero (0) also where the namespace leaves
    it undefined (JAX gives -1 or -2)."""
    result = a // b
    if not namespace_name(ns).startswith("jax") or kind(result) != "i":
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


def gamma(ns: Any, a: Any) -> Any:
    """``tgamma`` elementwise: no array namespace has it, so it runs on the host (on JAX as a
    callback, so that it also runs where ``jax.jit`` traces the definition)."""
    name = namespace_name(ns)
    if name.startswith("jax"):
        jax = importlib.import_module("jax")  # imported: its namespace was passed in
        return jax.pure_callback(_host_gamma, jax.ShapeDtypeStruct(a.shape, a.dtype), a)
    host = a.get() if name.startswith("cupy") else a  # CuPy copies to the host only if asked
    return ns.asarray(_host_gamma(host), dtype=a.dtype)
