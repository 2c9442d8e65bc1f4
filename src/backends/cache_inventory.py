"""What the build cache holds, and keeping it under a size bound.

The cache directory holds *stores* (the step caches: any ``<part>/entries/cache.db``) and
*builds* (``<backend>/builds/``: shared objects and DaCe build folders, each named by an
entry of an ``artifacts`` store). ``inventory`` measures each part; ``prune`` removes the
least recently used entries, an artifact entry together with its build, until the cache fits
a size; builds no entry names (left by evicted entries) go first, once they are an hour old
(younger ones may be a publish whose entry is being written). Removing a build a running
process has loaded does not disturb it: the process keeps the file it mapped.

``STENCILFORGE_CACHE_MAX_SIZE`` (default 4 GiB; ``0`` means no bound) is enforced after each
build is published (``enforce_size_bound``).
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import diskcache

from backends.cache import STALE_BUILD_SECONDS
from pipeline.caching import open_entry
from pipeline.config import CACHE_MAX_SIZE_VARIABLE, cache_max_size
from pipeline.stages import CompiledArtifact

__all__ = [
    "DEFAULT_MAX_SIZE",
    "MAX_SIZE_VARIABLE",
    "CachePart",
    "clear",
    "enforce_size_bound",
    "inventory",
    "max_size",
    "parse_size",
    "prune",
]

_log = logging.getLogger(__name__)

MAX_SIZE_VARIABLE = CACHE_MAX_SIZE_VARIABLE
DEFAULT_MAX_SIZE = 4 * 1024**3


@attrs.frozen
class CachePart:
    """One part of the cache: a store of a cached step, or a backend's builds.

    Attributes:
        name: its path under the cache directory (``translations``, ``c/builds``).
        size: bytes on disk.
        entries: stored entries, or built objects for builds.
        hits, misses: lookups since the store was created (stores only).
    """

    name: str
    size: int
    entries: int
    hits: int | None = None
    misses: int | None = None


def parse_size(text: str) -> int:
    """Bytes from ``"4G"``, ``"500MiB"``, ``"1.5g"`` or ``"123"`` (powers of 1024).

    Raises:
        ValueError: not a size, saying how to write one.
    """
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text.lower())
    if found is None:
        raise ValueError(f"{text!r} is not a size; write bytes, or a number with K, M, G or T")
    number, unit = found.groups()
    return int(float(number) * 1024 ** "_kmgt".index(unit or "_"))


def max_size() -> int:
    """The bound ``STENCILFORGE_CACHE_MAX_SIZE`` sets (0: none), read at each call.

    Raises:
        ValueError: the variable is not a size, naming it.
    """
    configured = cache_max_size()
    if not configured:
        return DEFAULT_MAX_SIZE
    try:
        return parse_size(configured)
    except ValueError as error:
        raise ValueError(f"{MAX_SIZE_VARIABLE}: {error}") from None


def _stores(root: Path) -> Iterator[Path]:
    for database in sorted(root.glob("**/entries/cache.db")):
        yield database.parent


def _builds(root: Path) -> Iterator[Path]:
    yield from sorted(p for p in root.glob("*/builds") if p.is_dir())


def _size(path: Path) -> int:
    if path.is_file() or path.is_symlink():
        return path.lstat().st_size
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() or p.is_symlink())


def inventory(root: Path) -> tuple[CachePart, ...]:
    """Each store and each backend's builds under the cache directory ``root``."""
    parts = []
    for store in _stores(root):
        with _connection(store) as connection:
            (count,) = connection.execute("SELECT COUNT(*) FROM Cache").fetchone()
            settings = dict(connection.execute("SELECT key, value FROM Settings").fetchall())
        parts.append(
            CachePart(
                str(store.parent.relative_to(root)),
                _size(store),
                count,
                int(settings.get("hits", 0)),
                int(settings.get("misses", 0)),
            )
        )
    for builds in _builds(root):
        objects = list(builds.iterdir())
        parts.append(CachePart(str(builds.relative_to(root)), _size(builds), len(objects)))
    return tuple(parts)


@contextlib.contextmanager
def _connection(store: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(f"file:{store / 'cache.db'}?mode=ro", uri=True, timeout=30)
    try:
        yield connection
    finally:
        connection.close()


def clear(root: Path) -> int:
    """Remove every entry and build under ``root``; the bytes freed."""
    freed = 0
    for store in _stores(root):
        before = _size(store)
        with contextlib.closing(diskcache.Cache(str(store))) as entries:
            entries.clear(retry=True)
        freed += before - _size(store)
    for builds in _builds(root):
        for built in builds.iterdir():
            freed += _remove(built)
    return freed


@attrs.frozen
class _Unit:
    """What pruning removes at once: an entry, and for an artifact entry its build."""

    used: float
    size: int
    store: Path
    key: str
    build: Path | None


def prune(root: Path, max_bytes: int) -> int:
    """Remove least recently used entries (with their builds) until the cache under ``root``
    takes at most ``max_bytes``; the bytes freed. Builds no entry names go first."""
    units, named = _units(root)
    freed = 0
    now = time.time()
    for builds in _builds(root):
        for built in builds.iterdir():
            if built not in named and now - built.lstat().st_mtime > STALE_BUILD_SECONDS:
                freed += _remove(built)
    total = sum(part.size for part in inventory(root))
    for unit in sorted(units, key=lambda u: u.used):
        if total <= max_bytes:
            break
        with contextlib.closing(diskcache.Cache(str(unit.store))) as entries:
            entries.delete(unit.key, retry=True)
        released = unit.size + (_remove(unit.build) if unit.build is not None else 0)
        total -= released
        freed += released
    return freed


def _units(root: Path) -> tuple[list[_Unit], set[Path]]:
    """Every entry as a unit of pruning, and the builds entries name."""
    units: list[_Unit] = []
    named: set[Path] = set()
    build_roots = list(_builds(root))
    for store in _stores(root):
        with _connection(store) as connection:
            rows = connection.execute(
                "SELECT key, access_time, size, value FROM Cache WHERE raw = 1"
            ).fetchall()
        for key, used, size, value in rows:
            build = _build_of(key, value, build_roots)
            if build is not None:
                named.add(build)
            units.append(_Unit(float(used), int(size or 0), store, str(key), build))
    return units, named


def _build_of(key: str, value: object, build_roots: list[Path]) -> Path | None:
    """The build an artifact entry names (its top file or folder under a ``builds/``)."""
    try:
        artifact = open_entry(key, bytes(value)) if isinstance(value, bytes | memoryview) else None
    except Exception:
        return None
    if not isinstance(artifact, CompiledArtifact):
        return None
    path = Path(artifact.path)
    for builds in build_roots:
        with contextlib.suppress(ValueError):
            return builds / path.relative_to(builds).parts[0]
    return None


def _remove(path: Path) -> int:
    size = _size(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
    return size


def enforce_size_bound(root: Path) -> None:
    """Prune ``root`` to nine tenths of ``max_size()`` when it has grown past it (after a
    publish). A failure to prune is logged: the build that triggered it is good."""
    bound = max_size()
    if bound <= 0:
        return
    try:
        total = sum(part.size for part in inventory(root))
        if total > bound:
            freed = prune(root, bound * 9 // 10)
            _log.info("build cache %s was %d bytes over its bound: freed %d", root, total - bound,
                      freed)
    except (OSError, sqlite3.Error) as error:
        _log.warning("could not keep the build cache %s under its bound: %s", root, error)
