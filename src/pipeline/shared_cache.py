"""A shared second cache level for a fleet: Redis behind each machine's disk cache.

    lookup:  local disk --miss--> Redis --miss--> [lock in Redis] compute
    publish: local disk, then Redis (write-through)

Entries travel sealed as local ones are (their key and their payload's SHA-256, checked
before anything is unpickled). A ``CompiledArtifact`` travels with its build: the file or
folder under the writer's ``builds/`` directory, packed, unpacked under this machine's cache
root (path-checked, atomically) and checked against its content hash by the step's
``validate`` before it is used.

Single flight across machines: the first to miss takes a Redis lock (``SET NX PX``) and the
others wait for the entry, re-checking; a lock whose holder died expires after
``lock_seconds`` (longer than the slowest build). A Redis that is down, slow or refuses
degrades to the local cache with one ``CacheDegradedWarning``; no call waits longer than the
socket timeouts.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs

from pipeline.caching import CacheStats, DiskStepCache, open_entry, seal_entry
from pipeline.errors import CacheDegradedWarning
from pipeline.stages import CompiledArtifact

__all__ = ["RedisStore", "SharedStepCache"]

T = TypeVar("T")


class RemoteUnavailable(Exception):
    """The shared store did not answer (internal: the cache degrades to local)."""


class RedisStore:
    """Bytes by key in a Redis database, with a lock per key.

    Args:
        url: ``redis://host:port/db`` (``rediss://`` for TLS).
        client: an existing client instead (``fakeredis.FakeRedis()`` in tests).
        timeout: seconds any operation may take before the store counts as down.
        prefix: namespaces the keys, so caches can share a database.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: Any = None,
        timeout: float = 5.0,
        prefix: str = "stencilforge:",
    ) -> None:
        if client is None:
            if url is None:
                raise ValueError("RedisStore needs a url (redis://host:port/db) or a client")
            try:
                import redis  # noqa: PLC0415  (an optional package: stencilforge[redis])
            except ImportError as error:
                raise ImportError(
                    f"the shared cache {url} needs redis-py: pip install 'stencilforge[redis]'"
                ) from error
            client = redis.Redis.from_url(
                url, socket_timeout=timeout, socket_connect_timeout=timeout
            )
        self.url = url or repr(client)
        self._client = client
        self._prefix = prefix
        self.available = True

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r})"

    def _call(self, operation: Callable[[], T]) -> T:
        if not self.available:
            raise RemoteUnavailable("found unavailable earlier in this process")
        try:
            return operation()
        except Exception as error:  # any failure of the store: degrade, and say so once
            self.available = False
            warnings.warn(
                f"the shared cache {self.url} is unavailable ({type(error).__name__}: "
                f"{error}); this process uses its local cache only",
                CacheDegradedWarning,
                stacklevel=4,
            )
            raise RemoteUnavailable(f"{type(error).__name__}: {error}") from error

    def get(self, key: str) -> bytes | None:
        value = self._call(lambda: self._client.get(self._prefix + key))
        return bytes(value) if value is not None else None

    def put(self, key: str, data: bytes) -> None:
        self._call(lambda: self._client.set(self._prefix + key, data))

    def acquire(self, key: str, seconds: float) -> str | None:
        """A token if this caller now holds ``key``'s lock (for ``seconds``), else None."""
        token = uuid.uuid4().hex
        name = f"{self._prefix}lock:{key}"
        taken = self._call(lambda: self._client.set(name, token, nx=True, px=int(seconds * 1000)))
        return token if taken else None

    def release(self, key: str, token: str) -> None:
        name = f"{self._prefix}lock:{key}"

        def release() -> None:
            if self._client.get(name) == token.encode():
                self._client.delete(name)

        self._call(release)


@attrs.define
class SharedStepCache:
    """A ``StepCache``: a machine's ``DiskStepCache`` with a ``RedisStore`` behind it.

    Attributes:
        local: this machine's disk cache.
        remote: the shared store.
        root: this machine's cache directory (builds travel relative to it).
        lock_seconds: how long a lock may be held: longer than the slowest build.
        poll_seconds: how often a waiting caller re-checks for the entry.
    """

    local: DiskStepCache
    remote: RedisStore | None
    root: Path
    lock_seconds: float = 900.0
    poll_seconds: float = 0.05
    stats: CacheStats = attrs.field(init=False, repr=False)
    # Keys this process has just fetched from the fleet: hits, though the local cache missed.
    _fetched_now: dict[str, bool] = attrs.field(factory=dict, init=False, repr=False)
    strict = True

    def __attrs_post_init__(self) -> None:
        self.stats = self.local.stats  # hits and misses are the local cache's

    def __reduce__(self) -> tuple[Any, ...]:
        # A compile worker opens the same directory and the same store.
        url = self.remote.url if self.remote is not None else None
        return (_reopen, (str(self.local.directory), url, str(self.root)))

    def get_or_compute(
        self, key: str, compute: Callable[[], T], validate: Callable[[T], bool] | None = None
    ) -> tuple[T, bool]:
        def shared() -> T:
            # The local cache missed (and holds its own lock): ask the fleet, or build once.
            found = self._fetch(key, validate)
            if found is not None:
                return found[0]
            return self._compute_once(key, compute, validate)

        value, hit = self.local.get_or_compute(key, shared, validate)
        return value, hit or self._fetched_now.pop(key, False)

    def _fetch(self, key: str, validate: Callable[[T], bool] | None) -> tuple[T] | None:
        """The fleet's entry for ``key``, verified and made local; None when it has none."""
        if self.remote is None:
            return None
        try:
            data = self.remote.get(key)
        except RemoteUnavailable as error:
            self._degrade(str(error))
            return None
        if data is None:
            return None
        try:
            value = self._unpack(open_entry(key, data))
        except Exception as error:
            warnings.warn(
                f"ignoring the shared cache's entry {key} in {self.remote.url}: {error}; it "
                "will be rebuilt and replaced",
                CacheDegradedWarning,
                stacklevel=2,
            )
            return None
        if validate is not None and not validate(value):
            return None
        self._fetched_now[key] = True
        return (value,)

    def _compute_once(
        self, key: str, compute: Callable[[], T], validate: Callable[[T], bool] | None
    ) -> T:
        token = None
        try:
            if self.remote is not None:
                try:
                    while (token := self.remote.acquire(key, self.lock_seconds)) is None:
                        found = self._fetch(key, validate)  # built by the holder meanwhile?
                        if found is not None:
                            return found[0]
                        time.sleep(self.poll_seconds)
                    found = self._fetch(key, validate)  # the holder finished as we took it
                    if found is not None:
                        return found[0]
                except RemoteUnavailable as error:
                    self._degrade(str(error))
            value = compute()
            self._publish(key, value)
            return value
        finally:
            if token is not None and self.remote is not None:
                try:
                    self.remote.release(key, token)
                except RemoteUnavailable as error:
                    self._degrade(str(error))

    def _publish(self, key: str, value: object) -> None:
        if self.remote is None:
            return
        try:
            self.remote.put(key, seal_entry(key, self._pack(value)))
        except RemoteUnavailable as error:
            self._degrade(str(error))

    def _pack(self, value: object) -> tuple[str, object, str | None, bytes | None]:
        """What travels: the value, and for an artifact its build, relative to the root."""
        if not isinstance(value, CompiledArtifact):
            return ("value", value, None, None)
        build = _build_object(Path(value.path))
        try:
            relative = build.relative_to(self.root)
            library = Path(value.path).relative_to(self.root)
        except ValueError:
            return ("value", value, None, None)  # built outside the cache: not shareable
        packed = io.BytesIO()
        with tarfile.open(fileobj=packed, mode="w:gz") as archive:
            archive.add(build, arcname=str(relative))
        return ("artifact", value, str(library), packed.getvalue())

    def _unpack(self, travelled: Any) -> Any:
        kind, value, library, packed = travelled
        if kind == "value":
            return value
        assert isinstance(value, CompiledArtifact) and library is not None and packed is not None
        target = self.root / library
        build = _build_object(target)
        if not build.exists():
            scratch = Path(tempfile.mkdtemp(prefix="shared-", dir=self.root))
            try:
                with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as archive:
                    archive.extractall(scratch, filter="data")  # no paths out of scratch
                build.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                unpacked = scratch / build.relative_to(self.root)
                try:
                    os.replace(unpacked, build)  # atomic: a reader sees all or nothing
                except OSError:
                    if not build.exists():
                        raise
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        return attrs.evolve(value, path=str(target))

    def _degrade(self, reason: str) -> None:
        """The store said why, once (``RedisStore._call``): stop asking it."""
        del reason
        self.remote = None


def _build_object(path: Path) -> Path:
    """The file or folder directly under the ``builds/`` directory that holds ``path``."""
    for ancestor in (path, *path.parents):
        if ancestor.parent.name == "builds":
            return ancestor
    return path


def _reopen(directory: str, url: str | None, root: str) -> SharedStepCache:
    from backends.cache import shared_store  # noqa: PLC0415  (one store per URL per process)

    return SharedStepCache(DiskStepCache(directory), shared_store(url) if url else None, Path(root))
