"""A shared second cache level for a fleet: Redis behind each machine's disk cache.

    lookup:  local disk --miss--> Redis --miss--> [lock in Redis] compute
    publish: local disk, then Redis (write-through)

Entries are authenticated, not only sealed: whoever can write to the Redis could compute a
plain hash, so each entry carries its key and an HMAC-SHA256, with the fleet's secret, over
the key and the payload (the pickled value, an artifact's build archive included). The MAC
is checked before anything is unpickled or unpacked; an entry that fails is ignored with
one warning, never unpickled, rebuilt and replaced. A ``CompiledArtifact`` travels with its
build: the file or folder under the writer's ``builds/`` directory, packed, unpacked under
this machine's cache root (path-checked, atomically) and checked against its content hash
by the step's ``validate`` before it is used.

Single flight across machines: the first to miss takes a Redis lock (``SET NX PX``) and the
others wait for the entry, re-checking; a lock whose holder died expires after
``lock_seconds`` (longer than the slowest build). A Redis that is down, slow or refuses
degrades to the local cache with one ``CacheDegradedWarning``; no call waits longer than the
socket timeouts.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import io
import os
import pickle
import shutil
import tarfile
import tempfile
import time
import urllib.parse
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs

from pipeline.caching import DiskStepCache, ensure_private_directory, make_private
from pipeline.config import (
    CACHE_SECRET_FILE_VARIABLE,
    CACHE_SECRET_VARIABLE,
    CACHE_URL_VARIABLE,
    cache_secret,
)
from pipeline.errors import CacheDegradedWarning, CacheSecretError
from pipeline.single_flight import CacheStats
from pipeline.stages import CompiledArtifact

__all__ = [
    "MINIMUM_SECRET_BYTES",
    "RedisStore",
    "SharedStepCache",
    "required_cache_secret",
    "shared_store",
]

T = TypeVar("T")

#: The fewest bytes a fleet's secret may have: a shorter one could be guessed offline from
#: any entry read out of the Redis.
MINIMUM_SECRET_BYTES = 16

#: The first bytes of every shared entry (the format's version). Not the local entries':
#: an entry sealed with a plain hash, which anyone can compute, is never read from the fleet.
_MAGIC = b"stencilforge-shared-1\n"


class UnauthenticatedEntry(Exception):
    """A shared entry not written with this fleet's secret (internal: it is rebuilt)."""


def _mac(secret: bytes, key: str, payload: bytes) -> bytes:
    message = b"".join((_MAGIC, key.encode(), b"\n", payload))
    return hmac.new(secret, message, hashlib.sha256).hexdigest().encode()


def _seal(secret: bytes, key: str, value: object) -> bytes:
    """The bytes published for ``value`` under ``key``: its key and its payload's MAC before
    the payload (the pickled value)."""
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return b"".join((_MAGIC, key.encode(), b"\n", _mac(secret, key, payload), b"\n", payload))


def _open(secret: bytes, key: str, stored: bytes) -> Any:
    """The value in ``stored``, if it is ``key``'s entry written with ``secret``.

    Raises:
        UnauthenticatedEntry: not an entry of this format, of another key, or its MAC does
            not verify (written without the secret, or altered); nothing was unpickled.
    """
    if not stored.startswith(_MAGIC):
        raise UnauthenticatedEntry("not an entry of this format (an older or foreign one)")
    try:
        stored_key, mac, payload = stored[len(_MAGIC) :].split(b"\n", 2)
    except ValueError:
        raise UnauthenticatedEntry("a truncated entry") from None
    if stored_key != key.encode():
        raise UnauthenticatedEntry("the entry of another key (swapped or copied)")
    if not hmac.compare_digest(mac, _mac(secret, key, payload)):
        raise UnauthenticatedEntry(
            "its MAC does not verify: it was not written with this fleet's secret, or was "
            "altered since"
        )
    return pickle.loads(payload)


def _without_password(url: str) -> str:
    """``url`` as it may be shown in a message: a password in it (``redis://user:pass@``)
    replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


class RemoteUnavailable(Exception):
    """The shared store did not answer (internal: the cache degrades to local)."""


class RedisStore:
    """Bytes by key in a Redis database, with a lock per key.

    Args:
        url: ``redis://host:port/db``; ``rediss://`` for TLS and ``redis://user:password@``
            for Redis AUTH protect the transport (messages show the URL without password).
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
        self.name = _without_password(self.url)
        self._client = client
        self._prefix = prefix
        self.available = True

    def __repr__(self) -> str:
        return f"RedisStore({self.name!r})"

    @staticmethod
    def shown(url: str) -> str:
        """``url`` as messages show it: a password in it replaced by ``***``."""
        return _without_password(url)

    def _call(self, operation: Callable[[], T]) -> T:
        if not self.available:
            raise RemoteUnavailable("found unavailable earlier in this process")
        try:
            return operation()
        except Exception as error:  # any failure of the store: degrade, and say so once
            self.available = False
            warnings.warn(
                f"the shared cache {self.name} is unavailable ({type(error).__name__}: "
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
        secret: the fleet's secret (keyword only), which only the fleet's machines hold:
            entries are published with an HMAC made with it and read only when theirs
            verifies. Needed when there is a ``remote``. It is not pickled: a compile worker
            that reopens this cache reads its own (``pipeline.config.cache_secret``).

    Raises:
        CacheSecretError: a ``remote`` without a secret of ``MINIMUM_SECRET_BYTES`` or more.
    """

    local: DiskStepCache
    remote: RedisStore | None
    root: Path
    lock_seconds: float = 900.0
    poll_seconds: float = 0.05
    secret: bytes = attrs.field(default=b"", kw_only=True, repr=False)
    stats: CacheStats = attrs.field(init=False, repr=False)
    # Keys this process has just fetched from the fleet: hits, though the local cache missed.
    _fetched_now: dict[str, bool] = attrs.field(factory=dict, init=False, repr=False)
    # Keys whose shared entry was ignored (and said so): one warning each.
    _ignored: set[str] = attrs.field(factory=set, init=False, repr=False)
    strict = True

    def __attrs_post_init__(self) -> None:
        if self.remote is not None and len(self.secret) < MINIMUM_SECRET_BYTES:
            raise CacheSecretError(
                f"the shared cache {self.remote.name} needs a secret of at least "
                f"{MINIMUM_SECRET_BYTES} bytes (got {len(self.secret)}) to authenticate its "
                "entries, which are code that will be run: pass secret=, the same on every "
                "machine of the fleet"
            )
        self.stats = self.local.stats  # hits and misses are the local cache's

    def __reduce__(self) -> tuple[Any, ...]:
        # A compile worker opens the same directory and the same store, and reads the
        # fleet's secret where it runs: the secret never travels in a task.
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
            value = self._unpack(_open(self.secret, key, data))
        except Exception as error:
            if key not in self._ignored:  # a waiting caller asks again: say it once
                self._ignored.add(key)
                warnings.warn(
                    f"ignoring the shared cache's entry {key} in {self.remote.name}: {error}; "
                    "it will be rebuilt and replaced",
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
        """``key``'s value, computed here under the fleet's lock for it, unless the lock's
        holder publishes the value first; the lock is released whatever happens."""
        token, found = self._lock_or_wait(key, validate)
        try:
            if token is not None:
                found = self._fetch(key, validate)  # the holder finished as we took it
            if found is not None:
                return found[0]
            value = compute()
            self._publish(key, value)
            return value
        finally:
            if token is not None:
                self._release(key, token)

    def _lock_or_wait(
        self, key: str, validate: Callable[[T], bool] | None
    ) -> tuple[str | None, tuple[T] | None]:
        """Take the fleet's lock for ``key`` (its token), or wait for its holder to publish
        the value (then that value); neither when there is no fleet, or it stops answering."""
        # Held here: a fetch that finds the fleet down drops ``self.remote``, and this
        # store's next acquire then raises RemoteUnavailable, which ends the wait.
        remote = self.remote
        if remote is None:
            return None, None
        try:
            while (token := remote.acquire(key, self.lock_seconds)) is None:
                found = self._fetch(key, validate)  # built by the holder meanwhile?
                if found is not None:
                    return None, found
                time.sleep(self.poll_seconds)
        except RemoteUnavailable as error:
            self._degrade(str(error))
            return None, None
        return token, None

    def _release(self, key: str, token: str) -> None:
        if self.remote is None:
            return  # found down meanwhile: the lock expires after lock_seconds
        try:
            self.remote.release(key, token)
        except RemoteUnavailable as error:
            self._degrade(str(error))

    def _publish(self, key: str, value: object) -> None:
        if self.remote is None:
            return
        try:
            self.remote.put(key, _seal(self.secret, key, self._pack(value)))
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
                ensure_private_directory(build.parent)
                unpacked = scratch / build.relative_to(self.root)
                make_private(unpacked)  # the packer's modes are not ours to keep
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
    """The cache a worker unpickles: its store is this process's for ``url``, its secret the
    worker's own (its environment).

    Raises:
        CacheSecretError: the worker's environment holds no secret for the shared cache.
    """
    local = DiskStepCache(directory)
    if not url:
        return SharedStepCache(local, None, Path(root))
    secret = required_cache_secret(url)
    return SharedStepCache(local, shared_store(url), Path(root), secret=secret)


def required_cache_secret(url: str) -> bytes:
    """The fleet's secret (``cache_secret``) for the shared cache at ``url``.

    Raises:
        CacheSecretError: none is set, or it is shorter than ``MINIMUM_SECRET_BYTES``; the
            message says how to set one.
    """
    secret = cache_secret()
    if secret is None or len(secret) < MINIMUM_SECRET_BYTES:
        shown = _without_password(url)
        problem = "no secret is set" if secret is None else f"its secret has {len(secret)} bytes"
        raise CacheSecretError(
            f"the shared cache {shown} ({CACHE_URL_VARIABLE}) is refused: {problem}, and "
            "without a secret anyone who can write to the Redis runs code on every machine "
            f"that reads it. Set {CACHE_SECRET_VARIABLE} (at least {MINIMUM_SECRET_BYTES} "
            "bytes, the same on every machine of the fleet, e.g. `python -c 'import secrets; "
            f"print(secrets.token_hex(32))'`) or {CACHE_SECRET_FILE_VARIABLE} (a file only "
            f"you can read, chmod 600), or unset {CACHE_URL_VARIABLE} to use the local cache "
            "only"
        )
    return secret


@functools.cache
def shared_store(url: str) -> RedisStore:
    """One store per shared-cache URL in this process (the documented registry): the steps
    of every pipeline share its connection, and it is found unavailable, and said so, once."""
    return RedisStore(url)
