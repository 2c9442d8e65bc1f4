"""``CachedStep``: remember what a step returned, in memory or on disk.

The key of an entry combines a fingerprint of the step's own configuration (salted with the
package and Python versions) with a fingerprint of the input. Exceptions are never cached.

On disk, concurrent misses on one key compute once, across threads and processes: the first
caller holds an OS file lock (released by the kernel if the process dies) while it computes;
the others wait on the lock and then read the published entry.

Every disk entry verifies itself (``seal_entry``/``open_entry``): it is bytes that carry its key and
the SHA-256 of its payload, checked before the payload is unpickled, so a damaged, altered,
swapped or foreign value is evicted with a logged warning (naming the directory) and
recomputed, never returned. diskcache is never asked to unpickle (``_PlainDisk`` refuses).
A damaged store (the sqlite file) is moved aside and recreated. A store that cannot be
written (a read-only directory, a full disk) still serves what it holds and computes the
rest uncached, with one warning.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import pickle
import sqlite3
import stat
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import attrs
import diskcache
import filelock

from pipeline.errors import CacheDegradedWarning, CacheStoreError, UnsafeCacheDirectoryError
from pipeline.fingerprint import code_digest, fingerprint
from pipeline.memory_cache import MemoryStepCache
from pipeline.single_flight import CacheStats, SingleFlightCache
from pipeline.steps import Step, step_name

__all__ = [
    "CachedStep",
    "DiskStepCache",
    "StepCache",
    "ensure_private_directory",
    "make_private",
    "open_entry",
    "package_version",
    "seal_entry",
]

_log = logging.getLogger(__name__)

S = TypeVar("S")
T = TypeVar("T")


@functools.cache
def package_version() -> str:
    """The installed stencilforge version ("unknown" when run from an uninstalled tree).
    Read once per process: every fingerprint of a compilation step asks for it, and reading
    the package's metadata took 3 ms."""
    try:
        return metadata.version("stencilforge")
    except metadata.PackageNotFoundError:
        return "unknown"


#: The first bytes of every disk entry (the format's version).
_MAGIC = b"stencilforge-entry-1\n"


# The entry format joins the key: entries of an older format are never read (and not
# reported as damaged after an upgrade).
_SALT = (package_version(), sys.implementation.cache_tag, _MAGIC)


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


def ensure_private_directory(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` (mode 0700) if needed and check that only this user can write it.

    Raises:
        UnsafeCacheDirectoryError: the directory is writable by group or others, or (on
            POSIX) owned by another user; the message says how to fix it.
    """
    directory = Path(path).expanduser().absolute()
    _refuse_replaceable_ancestors(directory)
    # Each missing level is made 0700 itself: mkdir(parents=True) makes parents by the
    # umask (0777 under umask 000), and the mode asked for is cut by the umask too.
    missing = [p for p in (directory, *directory.parents) if not p.exists()]
    for level in reversed(missing):
        try:
            level.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made meanwhile by another process
        level.chmod(0o700)
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


class DamagedEntryError(Exception):
    """A stored entry that cannot be trusted (internal: the entry is evicted)."""


def seal_entry(key: str, value: object) -> bytes:
    """The bytes stored for ``value`` under ``key``: the key and the payload's SHA-256
    before the payload (the pickled value)."""
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    digest = hashlib.sha256(payload).hexdigest().encode()
    return b"".join((_MAGIC, key.encode(), b"\n", digest, b"\n", payload))


def open_entry(key: str, stored: object) -> Any:
    """The value sealed in ``stored``, if it is an intact entry of ``key``.

    Raises:
        DamagedEntryError: not an entry of this format, of another key (swapped), or its
            payload does not match its hash (altered or torn); nothing was unpickled.
    """
    if not isinstance(stored, bytes) or not stored.startswith(_MAGIC):
        raise DamagedEntryError(f"not a stencilforge entry (a {type(stored).__name__})")
    try:
        stored_key, digest, payload = stored[len(_MAGIC) :].split(b"\n", 2)
    except ValueError:
        raise DamagedEntryError("a truncated entry") from None
    if stored_key.decode(errors="replace") != key:
        raise DamagedEntryError("the entry of another key (swapped or copied)")
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        raise DamagedEntryError("its payload does not match its SHA-256 (altered or torn)")
    return pickle.loads(payload)


class _PlainDisk(diskcache.Disk):  # type: ignore[misc]
    """diskcache's storage, refusing to unpickle anything it reads: our entries are bytes,
    and a pickled value in the store was not written by us."""

    def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
        if mode == diskcache.core.MODE_PICKLE:
            raise DamagedEntryError("a pickled value, which stencilforge never stores")
        return super().fetch(mode, filename, value, read)


def _refuse_replaceable_ancestors(directory: Path) -> None:
    """Refuse a cache whose path passes through a directory that everyone may write without
    the sticky bit: anyone could rename the cache away and put their own in its place.

    Raises:
        UnsafeCacheDirectoryError: naming the directory and what to do.
    """
    for ancestor in directory.parents:
        try:
            mode = ancestor.stat().st_mode
        except OSError:
            continue
        if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
            raise UnsafeCacheDirectoryError(
                f"cache directory {directory} lies under {ancestor}, which is writable by "
                "everyone without the sticky bit: anyone could replace the cache with entries "
                "of their own, which would then be loaded. Put the cache under a directory "
                f"only you can write (set STENCILFORGE_CACHE_DIR), or `chmod +t {ancestor}`"
            )


def make_private(path: str | os.PathLike[str]) -> None:
    """Give ``path`` and everything under it the cache's modes, whatever the umask made them:
    directories and executables (any execute bit) 0700, other files 0600. Symbolic links are
    left alone; what cannot be changed (not ours, gone meanwhile) is skipped.

    Call it before a file or folder is published (moved to where others find it), so that
    nobody else can read or replace it in between.
    """
    root = Path(path)
    for entry in (root, *root.rglob("*")) if root.is_dir() else (root,):
        try:
            info = entry.lstat()
            if stat.S_ISLNK(info.st_mode):
                continue
            executable = stat.S_ISDIR(info.st_mode) or info.st_mode & 0o111
            entry.chmod(0o700 if executable else 0o600)
        except OSError:
            continue


class DiskStepCache(SingleFlightCache):
    """A ``diskcache.Cache`` under a private directory, shared by threads and processes.

    Entries verify themselves (see the module docstring); a damaged store is moved aside and
    recreated; a store that cannot be written serves what it holds and computes the rest
    uncached, with one warning.
    """

    strict = True

    def __init__(self, directory: str | os.PathLike[str], *, lock_timeout: float = 600.0) -> None:
        super().__init__()
        self.directory = ensure_private_directory(directory)
        self._lock_timeout = lock_timeout
        self._locks = self.directory / "locks"
        self._writable = os.access(self.directory, os.W_OK)
        self._warned = False
        self._state_lock = threading.Lock()
        self._entries: diskcache.Cache | None = None
        if self._writable:
            self._locks.mkdir(mode=0o700, exist_ok=True)
            self._entries = self._open_store()
        else:
            self._degrade(f"{self.directory} is not writable")

    def __repr__(self) -> str:
        return f"DiskStepCache({str(self.directory)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # A compile worker opens the same directory (the store and locks are per process).
        return (_reopen, (str(self.directory), self._lock_timeout))

    @property
    def _store_path(self) -> Path:
        return self.directory / "entries"

    def _open_store(self) -> diskcache.Cache | None:
        """The store, recreated (the damaged one moved aside) if it cannot be opened."""
        try:
            return self._private_store()
        except sqlite3.OperationalError as error:
            # No space, no permission, an I/O error: the store may be intact. Read it only.
            self._degrade(f"its store cannot be opened for writing ({error})")
            return None
        except sqlite3.DatabaseError as error:
            aside = self._store_path.with_name(f"entries.damaged-{int(time.time())}-{os.getpid()}")
            _log.warning(
                "the cache store %s is damaged (%s: %s); moved aside to %s and recreated",
                self._store_path,
                type(error).__name__,
                error,
                aside,
            )
            self._store_path.rename(aside)
            try:
                return self._private_store()
            except sqlite3.DatabaseError as again:
                self._degrade(f"its store cannot be recreated ({again})")
                return None

    def _private_store(self) -> diskcache.Cache:
        # Values inline in the database, not in files of their own (diskcache's default above
        # 32 KiB): one file to keep private, and a full disk fails as sqlite's "disk is full".
        # Reads record their time (least-recently-used pruning, backends.cache_inventory) and
        # count hits and misses; diskcache's own culling is off (the bound is the whole
        # cache's, builds included).
        entries = diskcache.Cache(
            str(self._store_path),
            disk=_PlainDisk,
            disk_min_file_size=2**31 - 1,
            eviction_policy="least-recently-used",
            cull_limit=0,
            statistics=True,
        )
        make_private(self._store_path)
        return entries

    def _degrade(self, reason: str) -> None:
        """Keep serving what can be read, compute the rest uncached: warn once."""
        self._writable = False
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"the build cache {self.directory} cannot store new entries: {reason}. "
                "Programs it holds are served; others are compiled in memory each time, "
                "uncached (free space, fix the permissions, or set STENCILFORGE_CACHE_DIR)",
                CacheDegradedWarning,
                stacklevel=4,
            )

    def _read(self, key: str) -> object:
        """The stored bytes of ``key`` (``_MISSING`` when none), without the writable store
        if there is none (read-only: straight from the sqlite file)."""
        if self._entries is not None:
            try:
                return self._entries.get(key, default=_MISSING, retry=True)
            except sqlite3.DatabaseError as error:
                self._recover(error)
                return _MISSING
        return _read_only_lookup(self._store_path, key)

    def _recover(self, error: sqlite3.DatabaseError) -> None:
        with self._state_lock:
            if isinstance(error, sqlite3.OperationalError):
                self._degrade(str(error))
                return
            if self._entries is not None:
                self._entries.close()
            self._entries = self._open_store() if self._writable else None

    def _evict(self, key: str) -> None:
        if self._entries is None:
            return
        try:
            self._entries.delete(key, retry=True)
        except sqlite3.DatabaseError as error:
            self._recover(error)

    def _lookup(self, key: str, validate: Callable[[Any], bool] | None) -> tuple[bool, Any]:
        try:
            stored = self._read(key)
            if stored is _MISSING:
                return False, None
            value = open_entry(key, stored)
        except Exception as error:
            _log.warning(
                "evicting damaged cache entry %s in %s (%s: %s); it will be recomputed",
                key,
                self.directory,
                type(error).__name__,
                error,
            )
            self.stats.damaged += 1
            self._evict(key)
            return False, None
        if validate is not None and not validate(value):
            _log.warning(
                "evicting cache entry %s in %s: it failed validation (e.g. its built file was "
                "truncated or altered); it will be recomputed",
                key,
                self.directory,
            )
            self.stats.damaged += 1
            self._evict(key)
            return False, None
        self.stats.hits += 1
        return True, value

    @contextmanager
    def _single_flight(self, key: str) -> Iterator[None]:
        if not self._writable:
            yield  # nothing is published: no one waits for this computation
            return
        lock = filelock.FileLock(
            self._locks / f"{key}.lock", timeout=self._lock_timeout, mode=0o600
        )
        with lock:
            yield

    def _store(self, key: str, value: object) -> None:
        try:
            sealed = seal_entry(key, value)
        except (pickle.PicklingError, TypeError, AttributeError) as error:
            raise CacheStoreError(
                f"{self!r} cannot store a {type(value).__module__}."
                f"{type(value).__qualname__}: it cannot be pickled ({error}); return a "
                "picklable artifact (attrs classes of plain values are), or cache the step "
                "in memory with CachedStep.in_memory"
            ) from error
        if self._entries is not None and self._writable:
            try:
                self._entries.set(key, sealed, retry=True)
            except sqlite3.DatabaseError as error:
                self._recover(error)
            except OSError as error:  # a value file on a full disk
                self._degrade(str(error))

    def clear(self) -> None:
        """Remove every entry."""
        if self._entries is not None:
            self._entries.clear(retry=True)


def _reopen(directory: str, lock_timeout: float) -> DiskStepCache:
    return DiskStepCache(directory, lock_timeout=lock_timeout)


def _read_only_lookup(store: Path, key: str) -> object:
    """``key``'s stored bytes straight from a store that cannot be written (``_MISSING``
    when it or the entry is absent); pickled values are refused as ``_PlainDisk`` does."""
    database = store / "cache.db"
    if not database.exists():
        return _MISSING
    wal = store / "cache.db-wal"
    # A store closed cleanly has its log folded in: read the file as it is. A log left by a
    # killed writer needs sqlite's shared memory, which a read-only directory cannot hold.
    pending = wal.exists() and wal.stat().st_size > 0
    uri = f"file:{database}?mode=ro" + ("" if pending else "&immutable=1")
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as connection:
            row = connection.execute(
                "SELECT mode, filename, value FROM Cache WHERE key = ? AND raw = 1", (key,)
            ).fetchone()
    except sqlite3.OperationalError:
        return _MISSING  # unreadable without writing: computed, uncached (already warned)
    if row is None:
        return _MISSING
    mode, filename, value = row
    if mode == diskcache.core.MODE_RAW:
        return bytes(value)
    if mode == diskcache.core.MODE_BINARY and filename:
        return (store / filename).read_bytes()
    raise DamagedEntryError(f"a stored value of mode {mode}")


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()


@attrs.frozen
class CachedStep(Generic[S, T]):
    """A step whose results are remembered by a ``StepCache``.

    Attributes:
        step: the wrapped step; its ``emits``/``accepts`` declarations stay visible to
            ``CompilePipeline`` through ``steps.unwrap_step``.
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
