"""The build-cache directory: where compiled backends keep translations and built objects.

``STENCILFORGE_CACHE_DIR`` overrides the default, the per-user cache directory
(``platformdirs.user_cache_dir("stencilforge")``, e.g. ``~/.cache/stencilforge``). The
directory is created mode 0700 and refused when group or others can write it, because its
entries are code that will be loaded.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import platformdirs

from pipeline.caching import ensure_private_directory

__all__ = [
    "CACHE_DIR_VARIABLE",
    "build_directories",
    "cache_directory",
    "sweep_stale_builds",
]

CACHE_DIR_VARIABLE = "STENCILFORGE_CACHE_DIR"


def cache_directory() -> Path:
    """The private build-cache directory (created if needed).

    Raises:
        UnsafeCacheDirectoryError: the directory is writable by group or others.
    """
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    path = Path(configured) if configured else Path(platformdirs.user_cache_dir("stencilforge"))
    return ensure_private_directory(path)


STALE_BUILD_SECONDS = 3600.0


def sweep_stale_builds(scratch: Path) -> None:
    """Remove what killed builds left in ``scratch`` (directories and files older than an
    hour).

    A build in progress touches its directory continuously, so an hour-old one is dead.
    """
    now = time.time()
    for entry in scratch.iterdir():
        try:
            if now - entry.lstat().st_mtime <= STALE_BUILD_SECONDS:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink()  # a file a killed writer left (a compiler memo, say)
        except OSError:
            continue


def build_directories(root: Path) -> tuple[Path, Path, bool]:
    """Where a compilation builds and publishes under ``root``: ``(builds, scratch, kept)``.

    Both private (created 0700, refused when others can write them). When ``root`` cannot be
    written (a read-only cache), one new private temporary directory serves as both and
    ``kept`` is False: the build is used by this process and not kept (the step cache
    warns that it stores nothing).

    Raises:
        UnsafeCacheDirectoryError: a directory on the way is writable by others.
    """
    if root.exists() and not os.access(root, os.W_OK):
        temporary = Path(tempfile.mkdtemp(prefix="stencilforge-uncached-"))
        return temporary, temporary, False
    root = ensure_private_directory(root)
    return ensure_private_directory(root / "builds"), ensure_private_directory(root / "tmp"), True
