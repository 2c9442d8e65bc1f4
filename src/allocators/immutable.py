"""Arrays whose metadata cannot change once they exist, and a hashable summary of it.

A JAX array's type, shape, dtype and placement are fixed when it is made (its values too:
JAX arrays are immutable). For such an array, ``frozen_metadata`` returns those properties as
a hashable tuple; two arrays with equal summaries are indistinguishable to anything that reads
only these properties (the argument checks of ``pipeline``). NumPy and CuPy arrays answer
``None``: their flags, strides and base (what their checks also read) can differ between
arrays of equal shape and dtype. JAX is never imported here: an array of it means it is.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable

__all__ = ["frozen_metadata"]

# Array types found to be JAX arrays: a documented cache, so that a type is asked once.
_immutable_types: set[type] = set()
_mutable_types: set[type] = set()


def _is_immutable_array_type(kind: type, value: object) -> bool:
    jax = sys.modules.get("jax")
    immutable = (
        jax is not None
        and isinstance(value, jax.Array)
        # A tracer (inside jax.jit) stands for arrays of many values and placements.
        and not isinstance(value, getattr(jax.core, "Tracer", ()))
    )
    (_immutable_types if immutable else _mutable_types).add(kind)
    return immutable


def frozen_metadata(value: object) -> Hashable | None:
    """``(type, shape, dtype, sharding)`` of a JAX array; ``None`` for anything else.

    Never raises. Called for every argument of a repeat JAX call, so a known type costs one
    set lookup.
    """
    kind = type(value)
    if kind in _immutable_types or (
        kind not in _mutable_types and _is_immutable_array_type(kind, value)
    ):
        return (kind, value.shape, value.dtype, value.sharding)  # type: ignore[attr-defined]
    return None
