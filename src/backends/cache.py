"""The build-cache directory: where compiled backends keep translations and built objects.

``STENCILFORGE_CACHE_DIR`` overrides the default, the per-user cache directory
(``platformdirs.user_cache_dir("stencilforge")``, e.g. ``~/.cache/stencilforge``). The
directory is created mode 0700 and refused when group or others can write it, because its
entries are code that will be loaded.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import platformdirs

from pipeline.caching import ensure_private_directory

__all__ = [
    "CACHE_DIR_VARIABLE",
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
    """Remove build directories in ``scratch`` left by killed builds (older than an hour).

    A build in progress touches its directory continuously, so an hour-old one is dead.
    """
    now = time.time()
    for entry in scratch.iterdir():
        try:
            if now - entry.stat().st_mtime > STALE_BUILD_SECONDS:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            continue
