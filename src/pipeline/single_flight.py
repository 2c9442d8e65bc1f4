"""Compute once per key: the ``get_or_compute`` that the local step caches share.

A cache supplies the three steps marked * (how it looks a key up, how callers of one key take
turns, how it keeps a value); the algorithm around them is written once, here:

    get_or_compute(key, compute, validate)
      *lookup ------------------------------------------------------ hit --> (value, True)
        | miss
      *single flight on key: one caller at a time, the others wait here
        *lookup again: whoever held it before may have stored it --- hit --> (value, True)
          | miss
          count a miss, compute --> *store --> (value, False)

An exception from ``compute`` propagates and nothing is stored: the next caller computes.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import attrs

__all__ = ["CacheStats", "SingleFlightCache"]

T = TypeVar("T")


@attrs.define
class CacheStats:
    """Counters of one cache: lookups that hit, that missed, and entries evicted as damaged."""

    hits: int = 0
    misses: int = 0
    damaged: int = 0


class SingleFlightCache(abc.ABC):
    """A ``StepCache`` (``pipeline.caching``) made of a lookup, a single flight and a store."""

    def __init__(self) -> None:
        self.stats = CacheStats()
        self._misses_lock = threading.Lock()

    def get_or_compute(
        self, key: str, compute: Callable[[], T], validate: Callable[[T], bool] | None = None
    ) -> tuple[T, bool]:
        """See ``StepCache.get_or_compute``; the steps are drawn in the module docstring."""
        hit, value = self._lookup(key, validate)
        if hit:
            return value, True
        with self._single_flight(key):
            hit, value = self._lookup(key, validate)
            if hit:
                return value, True
            with self._misses_lock:
                self.stats.misses += 1
            result = compute()
            self._store(key, result)
            return result, False

    @abc.abstractmethod
    def _lookup(self, key: str, validate: Callable[[Any], bool] | None) -> tuple[bool, Any]:
        """Whether ``key`` holds a value that ``validate`` accepts, and the value. A value it
        refuses, or one that cannot be read, is evicted with a logged warning and counted
        as damaged; a hit is counted."""

    @abc.abstractmethod
    def _single_flight(self, key: str) -> AbstractContextManager[None]:
        """Held by one caller of ``key`` at a time while it looks again, computes and stores."""

    @abc.abstractmethod
    def _store(self, key: str, value: object) -> None:
        """Keep ``value`` under ``key``, or say why it cannot be kept.

        Raises:
            CacheStoreError: the value can never be stored here (not picklable, on disk).
        """
