"""A backend's builds in the cache: where they are made, how they are published and checked.

``BuildCache(root)`` owns one backend's part of the cache (``<cache>/c``, ``<cache>/dace``):

- ``space()``: private ``builds/`` and ``tmp/`` (created 0700, refused when others can write
  them), what killed builds left in ``tmp/`` swept; in a cache that cannot be written, one
  private temporary directory instead (the build is used, not kept);
- ``publish(space, built, name, files)``: one atomic ``os.replace`` of a built file or folder
  into ``builds/name`` (made private first: 0700 for folders and executables, 0600 for the
  rest, whatever the umask), with its content hash (SHA-256 of each of ``files``, joined); a folder
  gets a completion marker holding that hash; a publication another process made meanwhile
  is kept when intact; then the cache's size bound is enforced (in the configured cache
  directory only);
- ``intact(path, content_hash, files)``: the check a cached artifact passes before it is used;
- ``once(name, find, build)``: a product every process needs (the support object, an
  extension) built by one process at a time, the others waiting and then finding it.

Compilations call ``build(space, make)``, which runs ``make`` in a fresh work directory and,
when the cache's disk is full, once more outside the cache (uncached, with a warning); one
that builds one file per program calls ``program(source, name, make)``, which publishes it.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import attrs
import filelock

from backends.cache import build_directories, configured_cache_directory, sweep_stale_builds
from backends.cache_inventory import enforce_size_bound
from pipeline.caching import make_private
from pipeline.errors import CacheDegradedWarning, DamagedArtifactError
from pipeline.fingerprint import fingerprint, fingerprint_bytes
from pipeline.stages import CompiledArtifact, ProgramSource

__all__ = ["COMPLETE_MARKER", "BuildCache", "BuildSpace", "content_hash", "verified_bytes"]

T = TypeVar("T")

#: The file a published build folder holds its content hash in.
COMPLETE_MARKER = "COMPLETE"


@attrs.frozen
class BuildSpace:
    """Where one build is made (``scratch``) and published (``builds``); ``kept``: False for
    a temporary space outside the cache (nothing is kept)."""

    builds: Path
    scratch: Path
    kept: bool


def content_hash(files: Sequence[Path]) -> str:
    """The content hash of a build: SHA-256 of each file, joined with ``:``."""
    return ":".join(fingerprint_bytes(path.read_bytes()) for path in files)


def verified_bytes(path: Path, content_hash: str, what: str) -> bytes:
    """The bytes of the published file ``path``, checked against its recorded hash.

    Raises:
        DamagedArtifactError: the file is missing or its bytes changed since publish
            (``what`` names it in the message: "built object", "built CUDA program").
    """
    try:
        data = path.read_bytes()
    except OSError as error:
        raise DamagedArtifactError(f"{what} {path} cannot be read: {error}") from error
    if fingerprint_bytes(data) != content_hash:
        raise DamagedArtifactError(f"{what} {path} does not match its recorded hash")
    return data


def _uncached_space() -> BuildSpace:
    temporary = Path(tempfile.mkdtemp(prefix="stencilforge-uncached-"))
    return BuildSpace(temporary, temporary, kept=False)


def _is_the_cache_directory(path: Path) -> bool:
    """Whether ``path`` is the configured cache directory: only there is the size bound
    enforced. A build directory of the user's own choosing (``CCompilation(build_directory=
    "/tmp/mine")``) is not pruned, and nothing beside it is: its parent may be ``/tmp``."""
    try:
        return path.resolve() == configured_cache_directory().resolve()
    except OSError:
        return False


def _disk_full(error: BaseException) -> bool:
    return (isinstance(error, OSError) and error.errno == errno.ENOSPC) or (
        "No space left on device" in str(error)
    )


@attrs.frozen
class BuildCache:
    """One backend's builds under the cache directory (see the module docstring).

    Attributes:
        root: the backend's part of the cache, ``<cache>/<backend>``.
    """

    root: Path

    def space(self) -> BuildSpace:
        """The directories of a build (see ``backends.cache.build_directories``)."""
        builds, scratch, kept = build_directories(self.root)
        if kept:
            sweep_stale_builds(scratch)
        return BuildSpace(builds, scratch, kept)

    def build(self, prefix: str, make: Callable[[BuildSpace, Path], T]) -> T:
        """``make(space, workdir)`` in a fresh private work directory, removed after a
        success (a failure keeps it, and the error names it);
        when the cache's disk fills up, once more in a space outside the cache, with a
        ``CacheDegradedWarning`` (that build is used, not kept).

        Raises:
            whatever ``make`` raises for other reasons.
        """
        space = self.space()
        try:
            return self._in_workdir(space, prefix, make)
        except Exception as error:
            if not (space.kept and _disk_full(error)):
                raise
            warnings.warn(
                f"the build cache {self.root} is full ({error}); building outside it, "
                "uncached (free space, lower STENCILFORGE_CACHE_MAX_SIZE, or run "
                "`stencilforge cache prune --max-size ...`)",
                CacheDegradedWarning,
                stacklevel=3,
            )
            return self._in_workdir(_uncached_space(), prefix, make)

    def once(self, name: str, find: Callable[[], T | None], build: Callable[[], T]) -> T:
        """What ``find()`` finds of the product ``name``, else ``build()``'s, built by one
        process at a time: the others wait on a lock of this cache (``<root>/<name>.lock``)
        and then find it. For what many processes need at once on a cold cache (the support
        object, an extension), so that it is built once per cache, not once per process.
        Where the lock cannot be made (a read-only cache), each builds its own.
        """
        found = find()
        if found is not None:
            return found
        try:
            lock = filelock.FileLock(str(self.root / f"{name}.lock"), mode=0o600)
            lock.acquire()
        except OSError:
            return build()
        try:
            found = find()
            return build() if found is None else found
        finally:
            lock.release()

    def program(
        self, step: object, source: ProgramSource, suffix: str, make: Callable[[Path], Path]
    ) -> CompiledArtifact:
        """``step``'s artifact of ``source``: ``make(workdir)`` builds its file in a fresh work
        directory (``build``), which is published (``publish``) as
        ``builds/<entry point>.<key><suffix>``, the key a digest of ``step`` and the source.

        Raises:
            whatever ``make`` raises.
        """
        name = f"{source.entry_point}.{fingerprint((step, source.text))[:24]}{suffix}"

        def build(space: BuildSpace, workdir: Path) -> CompiledArtifact:
            path, digest = self.publish(space, make(workdir), name)
            return CompiledArtifact(str(path), digest, source.entry_point, source)

        return self.build(source.entry_point, build)

    @staticmethod
    def _in_workdir(space: BuildSpace, prefix: str, make: Callable[[BuildSpace, Path], T]) -> T:
        workdir = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir=space.scratch))
        result = make(space, workdir)  # a failed build keeps its sources (swept in an hour)
        shutil.rmtree(workdir, ignore_errors=True)
        return result

    def publish(
        self, space: BuildSpace, built: Path, name: str, files: Sequence[str] = ()
    ) -> tuple[Path, str]:
        """Move ``built`` (a file, or a folder whose ``files`` are its content) to
        ``builds/name`` in one ``os.replace``; its path and content hash.

        A folder already published there by another process is kept if intact.
        """
        target = space.builds / name
        if built.is_dir():
            digest = content_hash([built / f for f in files])
            (built / COMPLETE_MARKER).write_text(digest)
            make_private(built)
            try:
                os.replace(built, target)  # the publish: atomic on one filesystem
            except OSError:
                if not self.intact(target, digest, files):
                    shutil.rmtree(target, ignore_errors=True)
                    os.replace(built, target)
        else:
            digest = content_hash([built])
            make_private(built)
            os.replace(built, target)  # the publish: atomic on one filesystem
        if space.kept and _is_the_cache_directory(self.root.parent):
            enforce_size_bound(self.root.parent)
        return target, digest

    @staticmethod
    def intact(path: Path, digest: str, files: Sequence[str] = ()) -> bool:
        """Whether a published build still has the bytes recorded at publish time (a folder:
        its marker too); False when anything is missing."""
        try:
            if path.is_dir():
                marker = (path / COMPLETE_MARKER).read_text()
                return marker == digest and content_hash([path / f for f in files]) == digest
            return content_hash([path]) == digest
        except OSError:
            return False
