"""The build-cache directory: where compiled backends keep translations and built objects.

``STENCILFORGE_CACHE_DIR`` overrides the default, the per-user cache directory
(``platformdirs.user_cache_dir("stencilforge")``, e.g. ``~/.cache/stencilforge``). The
directory is created mode 0700 and refused when group or others can write it, because its
entries are code that will be loaded.

``STENCILFORGE_CACHE_URL`` names a shared cache (Redis) behind the local one; its entries
are authenticated with the fleet's secret, ``STENCILFORGE_CACHE_SECRET`` (the value) or
``STENCILFORGE_CACHE_SECRET_FILE`` (a file only its owner can read), and a URL without one is
refused (``CacheSecretError``) when the first pipeline that would use it is made.

``cached_pipeline`` composes a compiled backend's pipeline with its translation and
compilation cached in the cache directory, in ``translations/`` and ``artifacts/``.

``STENCILFORGE_TOOLCHAIN_DIR`` overrides where what is built from a toolchain alone lives
(DaCe's precompiled runtime header, CMake configure results and recorded build commands,
keyed by DaCe on compiler, flags and CPU): per user and machine, not per cache directory, so
a new cache directory does not rebuild them (``platformdirs.user_cache_dir(
"stencilforge-toolchain")`` by default; private like the cache).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias, TypedDict, TypeVar

import platformdirs

from pipeline.caching import CachedStep, DiskStepCache, StepCache, ensure_private_directory
from pipeline.config import (
    CACHE_DIR_VARIABLE,
    CACHE_SECRET_FILE_VARIABLE,
    CACHE_SECRET_VARIABLE,
    CACHE_URL_VARIABLE,
    TOOLCHAIN_DIR_VARIABLE,
    cache_dir,
    cache_secret,
    cache_url,
    toolchain_dir,
)
from pipeline.dsl.stages import CompilableProgram, ProgramDefinition
from pipeline.shared_cache import SharedStepCache, required_cache_secret, shared_store
from pipeline.stages import CompiledArtifact, ConcreteDefinition, ProgramSource
from pipeline.steps import Step
from pipeline.workflow import CompilePipeline

__all__ = [
    "CACHE_DIR_VARIABLE",
    "CACHE_SECRET_FILE_VARIABLE",
    "CACHE_SECRET_VARIABLE",
    "CACHE_URL_VARIABLE",
    "TOOLCHAIN_DIR_VARIABLE",
    "SharedCache",
    "build_directories",
    "cache_directory",
    "cache_secret",
    "cached_pipeline",
    "configured_cache_directory",
    "required_cache_secret",
    "shared_store",
    "step_cache",
    "sweep_stale_builds",
    "toolchain_directory",
]

def cache_directory() -> Path:
    """The private build-cache directory (created if needed).

    Raises:
        UnsafeCacheDirectoryError: the directory is writable by group or others.
    """
    return ensure_private_directory(configured_cache_directory())


def configured_cache_directory() -> Path:
    """Where the build-cache directory is (``STENCILFORGE_CACHE_DIR`` or the per-user
    default), read at each call; nothing is created or checked."""
    configured = cache_dir()
    return configured or Path(platformdirs.user_cache_dir("stencilforge"))


def toolchain_directory() -> Path:
    """The private directory of toolchain-only build products (``STENCILFORGE_TOOLCHAIN_DIR``
    or the per-user default, read at each call; not created here: the
    compilation that uses it creates it, mode 0700, or falls back when it cannot).
    """
    return toolchain_dir() or Path(platformdirs.user_cache_dir("stencilforge-toolchain"))


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


def step_cache(
    directory: Path, root: Path, url: str | None = None, *, secret: bytes | None = None
) -> StepCache:
    """The disk cache of a step in ``directory``, with the fleet's shared cache behind it
    when ``url`` (default ``STENCILFORGE_CACHE_URL``, read now) names one.

    Args:
        directory: the step's store, under the cache directory ``root``.
        root: the cache directory (shared builds are unpacked under it).
        url: ``redis://host:port/db``; ``""`` for none whatever the environment says.
        secret: the fleet's secret for the shared cache's entries (default
            ``STENCILFORGE_CACHE_SECRET`` or ``STENCILFORGE_CACHE_SECRET_FILE``, read now).

    Raises:
        CacheSecretError: ``url`` names a shared cache and there is no usable secret.
    """
    local = DiskStepCache(directory)
    url = cache_url() if url is None else url
    if not url:
        return local
    secret = required_cache_secret(url) if secret is None else secret
    return SharedStepCache(local, shared_store(url), root, secret=secret)


class SharedCache(TypedDict, total=False):
    """The keywords that put the fleet's shared cache behind a compiled pipeline's local one,
    taken by ``cached_pipeline`` and by every compiled backend's pipeline factory.

    ``cache_url``: ``redis://host:port/db``; default ``STENCILFORGE_CACHE_URL``, read when the
    pipeline is made; ``""`` for none whatever the environment says.

    ``cache_secret``: the fleet's secret that authenticates the shared cache's entries;
    default ``STENCILFORGE_CACHE_SECRET`` or ``STENCILFORGE_CACHE_SECRET_FILE``.
    """

    cache_url: str | None
    cache_secret: bytes | None


In = TypeVar("In")
Prog = TypeVar("Prog")
Exe = TypeVar("Exe")

#: The pipeline of a compiled backend of the DSL (``cached_pipeline`` with the shared
#: frontend): DSL definitions in, source, an artifact, and ``Exe``, what its loading makes.
CompiledPipeline: TypeAlias = CompilePipeline[
    ConcreteDefinition[ProgramDefinition],
    CompilableProgram,
    ProgramSource,
    CompiledArtifact,
    Exe,
]


def cached_pipeline(
    cache_directory: Path,
    frontend: Step[In, Prog],
    translation: Step[Prog, ProgramSource],
    compilation: Step[ProgramSource, CompiledArtifact],
    loading: Step[CompiledArtifact, Exe],
    *,
    validate: Callable[[CompiledArtifact], bool],
    cache_url: str | None = None,
    cache_secret: bytes | None = None,
) -> CompilePipeline[In, Prog, ProgramSource, CompiledArtifact, Exe]:
    """The pipeline of a compiled backend: ``translation`` and ``compilation`` cached on disk
    (``step_cache``) in ``cache_directory / "translations"`` and ``cache_directory /
    "artifacts"``, with the shared cache of ``cache_url`` behind them.

    Args:
        cache_directory: a private directory (``cache_directory()`` or the caller's own,
            made private by the caller).
        validate: checks a cached artifact before it is used (that the built files are
            still intact).
        cache_url, cache_secret: the shared cache and its secret (see ``SharedCache``).

    Raises:
        CacheSecretError: a shared cache is named and there is no usable secret.
    """
    translations = step_cache(
        cache_directory / "translations", cache_directory, cache_url, secret=cache_secret
    )
    artifacts = step_cache(
        cache_directory / "artifacts", cache_directory, cache_url, secret=cache_secret
    )
    return CompilePipeline(
        frontend=frontend,
        translation=CachedStep(translation, translations),
        compilation=CachedStep(compilation, artifacts, validate=validate),
        loading=loading,
    )
