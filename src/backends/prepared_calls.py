"""Native calls prepared once, reused while the same arguments come again.

A loaded CUDA or DaCe program turns a call's arguments into what its native entry takes (an
argument struct, an argument vector): work that a repeat call with the same arrays need not
redo. ``PreparedCalls`` remembers what was prepared, by ``ArgumentSignature``: the very array
objects (weakly), their shapes, strides and dtypes, whether a written host array is still
writable, the scalar values, and a context (the current device). ``find`` is the test of a
``SelfCheckingExecutable.fast_entry``: it reads only those properties, and finds a prepared
call only for arguments indistinguishable from those a full call checked.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

import attrs
import numpy as np

__all__ = ["ArgumentSignature", "PreparedCalls"]

P = TypeVar("P")


@attrs.frozen
class ArgumentSignature:
    """What a prepared call was prepared for.

    Attributes:
        count: how many arguments the call had.
        arrays: per array argument: position, weak reference, shape, strides, dtype, and
            whether it is written and must still be writable.
        scalars: per scalar argument: position, value.
        context: what the call ran on besides its arguments (the current device), or None.
    """

    count: int
    arrays: tuple[tuple[int, Callable[[], Any], Any, Any, Any, bool], ...]
    scalars: tuple[tuple[int, Any], ...]
    context: Hashable = None

    @classmethod
    def of(
        cls,
        args: Sequence[Any],
        arrays: Sequence[int],
        scalars: Sequence[int],
        *,
        written: frozenset[int] = frozenset(),
        context: Hashable = None,
    ) -> ArgumentSignature:
        """The signature of ``args``, whose ``arrays`` and ``scalars`` are at those positions;
        of the ``written`` arrays, NumPy's must stay writable (CuPy's have no such flag)."""
        return cls(
            len(args),
            tuple(
                (
                    i,
                    _reference(args[i]),
                    args[i].shape,
                    args[i].strides,
                    args[i].dtype,
                    i in written and isinstance(args[i], np.ndarray),
                )
                for i in arrays
            ),
            tuple((i, args[i]) for i in scalars),
            context,
        )

    def matches(self, args: tuple[Any, ...], context: Hashable) -> bool:
        """Whether ``args`` are the objects this signature was made of, unchanged, in the
        same ``context``."""
        if len(args) != self.count or context != self.context:
            return False
        for position, ref, shape, strides, dtype, written in self.arrays:
            array = args[position]
            if (
                ref() is not array
                or array.shape != shape
                or array.strides != strides
                or (array.dtype is not dtype and array.dtype != dtype)
                or (written and not array.flags.writeable)
            ):
                return False
        for position, value in self.scalars:
            given = args[position]
            if type(given) is not type(value) or given != value:
                return False
        return True


@attrs.define
class PreparedCalls(Generic[P]):
    """The prepared calls of one executable, by argument signature: the last one found,
    and the ``maxsize`` last prepared (the oldest dropped first). Safe to share between
    threads; a signature keeps no argument alive.
    """

    maxsize: int = 8
    _last: tuple[ArgumentSignature, P] | None = attrs.field(default=None, init=False)
    _memo: OrderedDict[tuple[int, ...], tuple[ArgumentSignature, P]] = attrs.field(
        factory=OrderedDict, init=False
    )
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    def find(self, args: tuple[Any, ...], context: Hashable = None) -> P | None:
        """The call prepared for arguments indistinguishable from ``args`` in ``context``,
        or None (then nothing of ``args`` was read beyond what a signature compares)."""
        # The call before first: a repeat call skips building the key.
        entry = self._last
        if entry is None or not entry[0].matches(args, context):
            entry = self._memo.get(tuple(map(id, args)))
            if entry is None or not entry[0].matches(args, context):
                return None
            self._last = entry
        return entry[1]

    def remember(self, args: tuple[Any, ...], signature: ArgumentSignature, prepared: P) -> None:
        """Keep ``prepared``, the call prepared for ``args`` (of ``signature``)."""
        entry = (signature, prepared)
        with self._lock:
            self._memo[tuple(map(id, args))] = entry
            while len(self._memo) > self.maxsize:
                self._memo.popitem(last=False)
        self._last = entry


def _reference(value: Any) -> Callable[[], Any]:
    """A weak reference to ``value``: a signature must not keep the user's arrays alive.

    An object without weak references gets one that never matches, so its signature is
    used only by the call that prepared it (the call holds the arrays while it runs).
    """
    try:
        return weakref.ref(value)
    except TypeError:
        return _never


def _never() -> None:
    return None
