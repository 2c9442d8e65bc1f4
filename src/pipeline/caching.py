"""``CachedStep``: remember what a step returned, in memory or on disk.

The key of an entry combines a fingerprint of the step's own configuration (salted with the
package and Python versions) with a fingerprint of the input. Exceptions are never cached.

On disk, concurrent misses on one key compute once, across threads and processes: the first
caller holds an OS file lock (released by the kernel if the process dies) while it computes;
the others wait on the lock and then read the published entry. An entry that cannot be read
back is evicted with a logged warning and recomputed.
"""

from __future__ import annotations

import logging
import os
import pickle
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import attrs
import cachetools
import diskcache
import filelock

from pipeline.errors import CacheStoreError, UnsafeCacheDirectoryError
from pipeline.fingerprint import code_digest, fingerprint
from pipeline.workflow import Step, step_name

__all__ = [
    "CacheStats",
    "CachedStep",
    "DiskStepCache",
    "MemoryStepCache",
    "StepCache",
    "ensure_private_directory",
    "package_version",
]

_log = logging.getLogger(__name__)

S = TypeVar("S")
T = TypeVar("T")


def package_version() -> str:
    """The installed stencilforge version ("unknown" when run from an uninstalled tree)."""
    try:
        return metadata.version("stencilforge")
    except metadata.PackageNotFoundError:
        return "unknown"


_SALT = (package_version(), sys.implementation.cache_tag)


@attrs.define
class CacheStats:
    """Counters of one cache: lookups that hit, that missed, and entries evicted as damaged."""

    hits: int = 0
    misses: int = 0
    damaged: int = 0


class StepCache(Protocol):
    """Storage for a ``CachedStep``.

    ``strict`` says whether keys must be stable across processes (strict fingerprints).
    """

    strict: bool
    stats: CacheStats

    def get_or_compute(
        self, key: str, compute: Callable[[], T], validate: Callable[[T], bool] | None = None
    ) -> tuple[T, bool]:
        """Return the value stored under ``key`` and whether it was stored (a hit), computing
        and storing it on a miss.

        A stored value for which ``validate`` answers False is treated as damaged: evicted
        with a logged warning and recomputed.

        Raises:
            CacheStoreError: the computed value cannot be stored (not picklable, on disk).
        """
        ...


class MemoryStepCache:
    """An in-process LRU (``cachetools.LRUCache``), safe to share between threads.

    Concurrent misses on one key in one process compute once.
    """

    strict = False

    def __init__(self, maxsize: int = 128) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, got {maxsize}")
        self.stats = CacheStats()
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

    def get_or_compute(
        self, key: str, compute: Callable[[], T], validate: Callable[[T], bool] | None = None
    ) -> tuple[T, bool]:
        hit, value = self._lookup(key, validate)
        if hit:
            return value, True
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            hit, value = self._lookup(key, validate)
            if hit:
                return value, True
            with self._lock:
                self.stats.misses += 1
            result = compute()
            with self._lock:
                self._entries[key] = result
                self._key_locks.pop(key, None)
            return result, False


def ensure_private_directory(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` (mode 0700) if needed and check that only this user can write it.

    Raises:
        UnsafeCacheDirectoryError: the directory is writable by group or others, or (on
            POSIX) owned by another user; the message says how to fix it.
    """
    directory = Path(path).expanduser().absolute()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = directory.stat()
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeCacheDirectoryError(f"cache path {directory} is not a directory")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise UnsafeCacheDirectoryError(
            f"cache directory {directory} is owned by uid {info.st_uid}, not by you "
            f"(uid {os.getuid()}); cache entries are code that will be loaded, so use a "
            "directory of your own (set STENCILFORGE_CACHE_DIR)"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeCacheDirectoryError(
            f"cache directory {directory} is writable by group or others "
            f"(mode {stat.filemode(info.st_mode)}); cache entries are code that will be "
            f"loaded, so run `chmod go-w {directory}` or choose another directory"
        )
    return directory


class DiskStepCache:
    """A ``diskcache.Cache`` under a private directory, shared by threads and processes."""

    strict = True

    def __init__(self, directory: str | os.PathLike[str], *, lock_timeout: float = 600.0) -> None:
        self.directory = ensure_private_directory(directory)
        self.stats = CacheStats()
        self._entries = diskcache.Cache(str(self.directory / "entries"))
        self._locks = self.directory / "locks"
        self._locks.mkdir(mode=0o700, exist_ok=True)
        self._lock_timeout = lock_timeout

    def __repr__(self) -> str:
        return f"DiskStepCache({str(self.directory)!r})"

    def _lookup(self, key: str, validate: Callable[[Any], bool] | None) -> tuple[bool, Any]:
        try:
            value = self._entries.get(key, default=_MISSING, retry=True)
        except Exception as error:
            _log.warning(
                "evicting damaged cache entry %s in %s (%s: %s); it will be recomputed",
                key,
                self.directory,
                type(error).__name__,
                error,
            )
            self.stats.damaged += 1
            self._entries.delete(key, retry=True)
            return False, None
        if value is _MISSING:
            return False, None
        if validate is not None and not validate(value):
            _log.warning(
                "evicting cache entry %s in %s: it failed validation (e.g. its built file was "
                "truncated or altered); it will be recomputed",
                key,
                self.directory,
            )
            self.stats.damaged += 1
            self._entries.delete(key, retry=True)
            return False, None
        self.stats.hits += 1
        return True, value

    @contextmanager
    def _single_flight(self, key: str) -> Iterator[None]:
        lock = filelock.FileLock(self._locks / f"{key}.lock", timeout=self._lock_timeout)
        with lock:
            yield

    def get_or_compute(
        self, key: str, compute: Callable[[], T], validate: Callable[[T], bool] | None = None
    ) -> tuple[T, bool]:
        hit, value = self._lookup(key, validate)
        if hit:
            return value, True
        with self._single_flight(key):
            hit, value = self._lookup(key, validate)
            if hit:
                return value, True
            self.stats.misses += 1
            result = compute()
            try:
                self._entries.set(key, result, retry=True)
            except (pickle.PicklingError, TypeError, AttributeError) as error:
                raise CacheStoreError(
                    f"{self!r} cannot store a {type(result).__module__}."
                    f"{type(result).__qualname__}: it cannot be pickled ({error}); return a "
                    "picklable artifact (attrs classes of plain values are), or cache the step "
                    "in memory with CachedStep.in_memory"
                ) from error
            return result, False

    def clear(self) -> None:
        """Remove every entry."""
        self._entries.clear(retry=True)


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


@attrs.frozen
class CachedStep(Generic[S, T]):
    """A step whose results are remembered by a ``StepCache``.

    Attributes:
        step: the wrapped step; its ``emits``/``accepts`` declarations stay visible to
            ``CompilePipeline`` through ``workflow.unwrap_step``.
        cache: where results live.
        key: the input's fingerprint; by default ``fingerprint(inp, strict=cache.strict)``.
        validate: checks a stored result before it is returned (e.g. that a built file
            is intact); a result that fails is evicted with a warning and recomputed.
    """

    step: Step[S, T]
    cache: StepCache = attrs.field(eq=False)
    key: Callable[[S], str] | None = None
    validate: Callable[[T], bool] | None = None
    _step_key: str = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        # A disk key must change when the step's code does (its class's modules, by source);
        # an in-memory cache lives no longer than the code it ran.
        code = code_digest(self.step) if self.cache.strict else ""
        step_key = fingerprint((_SALT, self.step, code), strict=self.cache.strict)
        object.__setattr__(self, "_step_key", step_key)

    @classmethod
    def in_memory(cls, step: Step[S, T], *, maxsize: int = 128) -> CachedStep[S, T]:
        """Cache in a process-local LRU of ``maxsize`` entries."""
        return cls(step, MemoryStepCache(maxsize))

    @classmethod
    def on_disk(
        cls,
        step: Step[S, T],
        *,
        directory: str | os.PathLike[str],
        validate: Callable[[T], bool] | None = None,
    ) -> CachedStep[S, T]:
        """Cache in ``directory`` (created mode 0700), shared by processes.

        Raises:
            FingerprintError: the step's configuration has no stable fingerprint.
            UnsafeCacheDirectoryError: the directory is writable by others.
        """
        return cls(step, DiskStepCache(directory), validate=validate)

    def cache_key(self, inp: S) -> str:
        """The key under which the result for ``inp`` is stored."""
        if self.key is not None:
            input_key = self.key(inp)
        else:
            input_key = fingerprint(inp, strict=self.cache.strict)
        return f"{self._step_key[:32]}-{input_key}"

    def __call__(self, inp: S, /) -> T:
        return self.call_with_hit(inp)[0]

    def call_with_hit(self, inp: S, /) -> tuple[T, bool]:
        """The step's result for ``inp``, and whether the cache answered.

        Raises:
            CacheStoreError: the result cannot be stored in the cache, naming the step.
        """
        try:
            return self.cache.get_or_compute(
                self.cache_key(inp), lambda: self.step(inp), self.validate
            )
        except CacheStoreError as error:
            raise CacheStoreError(
                f"the result of step {step_name(self.step)}: {error}"
            ) from error.__cause__
