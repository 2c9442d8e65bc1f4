"""Remembering the argument checks' verdict for arguments that cannot change.

``ArgumentChecker.check`` reads, of each argument: for an array its type, shape, dtype, device
and namespace (and, of NumPy arrays only, flags, strides and the owning buffer); of a scalar
its type and value. For calls whose every argument is a plain scalar or an array whose
metadata is fixed at creation (``allocators.frozen_metadata``: JAX arrays), those properties
form a hashable key that decides the verdict, so a key the checks accepted once is accepted
again without reading the arguments twice. Any other call (a NumPy or CuPy array among the
arguments) is checked in full, every time. A call with the very objects of the last call the
checks accepted, or with new arrays indistinguishable from them (a result fed back), and equal
scalars, is accepted without building and hashing a key.

``RememberedEntry`` makes such a check and an executable without a native entry into a
self-checking entry (``fast_entry``'s contract): the fallback of the backend's native entry
(ADR 0021), which takes the very JAX arrays it saw accepted at once, or, without one, the
program's fast slot itself.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Any

import attrs
import numpy as np

from allocators.immutable import frozen_metadata

__all__ = ["RememberedCheck", "RememberedEntry", "verdict_key"]

_PLAIN_SCALARS = frozenset({bool, int, float})
_REFERENCE = weakref.ref


def verdict_key(args: tuple[Any, ...]) -> tuple[Hashable, ...] | None:
    """What the argument checks read of ``args``, as a hashable key; ``None`` when some
    argument's checked properties are not all in a key (a NumPy array, say)."""
    parts: list[Hashable] = []
    for value in args:
        kind = type(value)
        if kind in _PLAIN_SCALARS:
            parts.append((kind, value))
            continue
        metadata = frozen_metadata(value)
        if metadata is not None:
            parts.append(metadata)
        elif isinstance(value, np.generic):
            parts.append((kind, value))
        else:
            return None
    return tuple(parts)


@attrs.define
class RememberedCheck:
    """``check(args)``, skipped for arguments whose ``verdict_key`` it accepted before.

    Attributes:
        check: the full check of one specialization (``ArgumentChecker.check`` with the
            backend's device, namespace and array type bound); raises on a refusal.
        maxsize: how many accepted keys are kept; past it, the memory starts again empty (a
            program called with ever new scalar values keeps being checked, never wrongly).

    Refusals are never remembered: each one is checked, and explained, again. The arguments
    of the last call the full check accepted are kept too, weakly (an array of them can be
    freed), with their metadata, so that a call on the same arrays, or on new ones with that
    metadata, and equal scalars is accepted by comparing argument by argument.
    """

    check: Callable[[tuple[Any, ...]], None]
    maxsize: int = 256
    _accepted: set[tuple[Hashable, ...]] = attrs.field(factory=set, init=False)
    # Per argument of that call: (weak reference, metadata) of an array, (type, value) of a
    # scalar.
    _last: tuple[tuple[Any, Any], ...] = attrs.field(default=(), init=False)

    def __call__(self, args: tuple[Any, ...]) -> bool:
        """Check ``args`` unless their key was accepted before.

        Returns:
            Whether ``args``'s verdict is remembered: ``accepts(args)`` is true from now on
            (until the memory is full and starts again).

        Raises:
            whatever ``check`` raises for a refusal.
        """
        if self._is_last(args):
            return True
        key = verdict_key(args)
        if key is not None and key in self._accepted:
            return True
        self.check(args)
        if key is None:
            return False
        if len(self._accepted) >= self.maxsize:
            self._accepted.clear()
        self._accepted.add(key)
        self._last = _identities(args)
        return True

    def accepts(self, args: tuple[Any, ...]) -> bool:
        """Whether the check accepted ``args``, or arguments with their key, before (it is not
        run)."""
        if self._is_last(args):
            return True
        key = verdict_key(args)
        return key is not None and key in self._accepted

    def _is_last(self, args: tuple[Any, ...]) -> bool:
        # Run on every repeat JAX call: indexing, as zip(strict=True) costs ~0.5 us a call.
        last = self._last
        if len(last) != len(args):
            return False
        for index, (first, second) in enumerate(last):
            value = args[index]
            if type(first) is _REFERENCE:  # an array: (reference, metadata)
                if first() is not value and frozen_metadata(value) != second:
                    return False
            elif first is not type(value) or second != value:  # a scalar: (type, value)
                return False
        return True


def _identities(args: tuple[Any, ...]) -> tuple[tuple[Any, Any], ...]:
    """What ``RememberedCheck._is_last`` compares ``args`` with: per array a weak reference
    and its metadata, per scalar its type and value (``()``: nothing, when an array cannot
    be referenced weakly)."""
    kept: list[tuple[Any, Any]] = []
    for value in args:
        metadata = frozen_metadata(value)
        if metadata is None:
            kept.append((type(value), value))
            continue
        try:
            kept.append((weakref.ref(value), metadata))
        except TypeError:
            return ()
    return tuple(kept)


@attrs.frozen
class RememberedEntry:
    """A self-checking entry for an executable without one: ``executable(*args)`` when
    ``check`` accepted arguments indistinguishable from ``args`` before, else
    ``NotImplemented``.

    It satisfies ``SelfCheckingExecutable.fast_entry``'s contract: a refusal reads only the
    properties in ``verdict_key`` (nothing runs, no memory is touched), and then the caller
    checks in full, which explains it.

    Attributes:
        check: the specialization's remembered check.
        executable: the executable it guards (called only on accepted arguments).
        compile_time_args: the backend's ``compile_time_args``; ``args`` must give
            ``specialized_for``, the key the executable was built for, so that a call of
            another signature never runs it.
        specialized_for: the executable's compile-time arguments.
    """

    check: RememberedCheck
    executable: Callable[..., Any]
    compile_time_args: Callable[[tuple[Any, ...]], Hashable]
    specialized_for: Hashable

    def __call__(self, *args: Any) -> Any:
        if not self.check.accepts(args):
            return NotImplemented
        found = self.compile_time_args(args)
        if found is not self.specialized_for and found != self.specialized_for:
            return NotImplemented
        return self.executable(*args)
