"""``MemoryStepCache``: a step cache that lives in one process, in an LRU."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import cachetools

from pipeline.single_flight import SingleFlightCache

__all__ = ["MemoryStepCache"]

_log = logging.getLogger(__name__)


class MemoryStepCache(SingleFlightCache):
    """An in-process LRU (``cachetools.LRUCache``), safe to share between threads.

    Concurrent misses on one key in one process compute once.
    """

    strict = False

    def __init__(self, maxsize: int = 128) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        super().__init__()
        self._entries: cachetools.LRUCache[str, Any] = cachetools.LRUCache(maxsize=maxsize)
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}

    def __repr__(self) -> str:
        return f"MemoryStepCache(maxsize={self._entries.maxsize})"

    def _lookup(self, key: str, validate: Callable[[Any], bool] | None) -> tuple[bool, Any]:
        with self._lock:
            if key not in self._entries:
                return False, None
            value = self._entries[key]
            if validate is not None and not validate(value):
                _log.warning(
                    "evicting invalid in-memory cache entry %s; it will be recomputed", key
                )
                self.stats.damaged += 1
                del self._entries[key]
                return False, None
            self.stats.hits += 1
            return True, value

    @contextmanager
    def _single_flight(self, key: str) -> Iterator[None]:
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            yield

    def _store(self, key: str, value: object) -> None:
        # The key's lock is dropped with a stored value only: after a failed compute, those
        # still waiting on it and those who come next must still take turns on one lock.
        with self._lock:
            self._entries[key] = value
            self._key_locks.pop(key, None)
