"""Remembering the argument checks' verdict for arguments that cannot change.

``ArgumentChecker.check`` reads, of each argument: for an array its type, shape, dtype, device
and namespace (and, of NumPy arrays only, flags, strides and the owning buffer); of a scalar
its type and value. For calls whose every argument is a plain scalar or an array whose
metadata is fixed at creation (``allocators.frozen_metadata``: JAX arrays), those properties
form a hashable key that decides the verdict, so a key the checks accepted once is accepted
again without reading the arguments twice. Any other call (a NumPy or CuPy array among the
arguments) is checked in full, every time.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import attrs
import numpy as np

from allocators.immutable import frozen_metadata

__all__ = ["RememberedCheck", "verdict_key"]

_PLAIN_SCALARS = frozenset({bool, int, float})


def verdict_key(args: tuple[Any, ...]) -> tuple[Hashable, ...] | None:
    """What the argument checks read of ``args``, as a hashable key; ``None`` when some
    argument's checked properties are not all in a key (a NumPy array, say)."""
    parts: list[Hashable] = []
    for value in args:
        kind = type(value)
        if kind in _PLAIN_SCALARS or isinstance(value, np.generic):
            parts.append((kind, value))
            continue
        metadata = frozen_metadata(value)
        if metadata is None:
            return None
        parts.append(metadata)
    return tuple(parts)


@attrs.define
class RememberedCheck:
    """``check(args)``, skipped for arguments whose ``verdict_key`` it accepted before.

    Attributes:
        check: the full check of one specialization (``ArgumentChecker.check`` with the
            backend's device, namespace and array type bound); raises on a refusal.
        maxsize: how many accepted keys are kept; past it, the memory starts again empty (a
            program called with ever new scalar values keeps being checked, never wrongly).

    Refusals are never remembered: each one is checked, and explained, again.
    """

    check: Callable[[tuple[Any, ...]], None]
    maxsize: int = 256
    _accepted: set[tuple[Hashable, ...]] = attrs.field(factory=set, init=False)

    def __call__(self, args: tuple[Any, ...]) -> None:
        key = verdict_key(args)
        if key is not None and key in self._accepted:
            return
        self.check(args)
        if key is not None:
            if len(self._accepted) >= self.maxsize:
                self._accepted.clear()
            self._accepted.add(key)
