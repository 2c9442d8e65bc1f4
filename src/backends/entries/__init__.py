"""Native fast entries for every backend's executable, built once per machine.

``sf_entries`` (``backends.entries.source``) is a small CPython extension, compiled like the
c_cpu launcher (``backends.c.launcher``): once per compiler identity, interpreter, NumPy
version and machine, kept in the toolchain directory (``STENCILFORGE_TOOLCHAIN_DIR``) under
``native-entries/`` (else in the build cache under ``native-entries/``), published
atomically with a ``COMPLETE`` marker holding its SHA-256 (``BuildCache.publish``), and
hashed again before each import, so a damaged file is rebuilt and never loaded.

``native_entries()`` is what ``Backend.native_entries`` returns to the dispatcher: the
extension's ``Entry`` type, or ``None`` where no C compiler can build it (then every call
takes the Python path it took before: checks are never skipped, only made slower). The
answer is kept per process (``_LOADED``, a documented per-process registry).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import numpy as np

from backends.build_cache import COMPLETE_MARKER, BuildCache, BuildSpace, verified_bytes
from backends.cache import configured_cache_directory, toolchain_directory
from backends.clike.compiler import CompilationError, compiler_identity
from backends.entries import source
from backends.entries.source import ENTRIES_ABI, ENTRIES_C, ENTRIES_MODULE
from pipeline.caching import ensure_private_directory
from pipeline.errors import DamagedArtifactError, UnsafeCacheDirectoryError
from pipeline.fingerprint import fingerprint, source_digest

__all__ = ["EntryBuild", "native_entries"]

_log = logging.getLogger(__name__)

# Per process: the imported extension's Entry type, or None once it could not be had.
_LOADED: dict[str, Any] = {}
_LOADING = threading.Lock()


@attrs.frozen
class EntryBuild:
    """Where ``sf_entries`` is kept and how it is built.

    Attributes:
        directory: where it is kept (``builds/`` and ``tmp/`` live inside).
        fallback_directory: where it is kept when ``directory`` cannot be created.
        compiler: the C compiler (``$CC``, else ``cc``).
    """

    directory: str
    fallback_directory: str | None = None
    compiler: str = attrs.field(factory=lambda: os.environ.get("CC") or "cc")

    def __fingerprint__(self) -> object:
        return (
            self.compiler,
            compiler_identity(self.compiler, self.directory),
            sys.implementation.cache_tag,
            sysconfig.get_config_var("EXT_SUFFIX"),
            sysconfig.get_paths()["include"],
            np.__version__,
            np.get_include(),
            source_digest(sys.modules[__name__], source),
        )

    def module(self) -> ModuleType:
        """The extension, built and published first if missing, rebuilt if damaged.

        Raises:
            CompilationError: no compiler, or it failed.
            DamagedArtifactError: the file was altered between its check and its import.
        """
        root = self._root()
        name = f"{ENTRIES_MODULE}.{fingerprint(self)[:24]}"
        cache = BuildCache(root)
        folder = cache.space().builds / name
        found = _intact_file(folder)
        if found is None:
            if folder.exists():
                _log.warning("the native entries %s are damaged: building them again", folder)
                shutil.rmtree(folder, ignore_errors=True)
            found = cache.build(ENTRIES_MODULE, lambda space, work: self._build(space, work, name))
        return _import(*found)

    def _root(self) -> Path:
        try:
            return ensure_private_directory(self.directory)
        except UnsafeCacheDirectoryError:
            raise
        except OSError:
            if self.fallback_directory is None:
                raise
            return ensure_private_directory(self.fallback_directory)

    def _build(self, space: BuildSpace, workdir: Path, name: str) -> tuple[Path, str]:
        built = workdir / name
        built.mkdir(mode=0o700)
        source_file = workdir / f"{ENTRIES_MODULE}.c"
        source_file.write_text(ENTRIES_C)
        output = built / _file_name()
        command = [
            self.compiler, "-fPIC", "-shared", "-O2",
            f"-I{sysconfig.get_paths()['include']}", f"-I{np.get_include()}",
            str(source_file), "-o", str(output),
        ]  # fmt: skip
        try:
            process = subprocess.run(command, capture_output=True, text=True, check=False)
        except OSError as error:
            raise CompilationError(
                f"cannot run the C compiler {self.compiler!r} ({error}); install gcc or clang, "
                "or set $CC to a working compiler"
            ) from error
        if process.returncode != 0:
            raise CompilationError(
                f"building the native entries failed (exit {process.returncode}); source kept "
                f"in {workdir}\n{' '.join(command)}\n{process.stderr[-4000:]}"
            )
        folder, digest = BuildCache(self._root()).publish(space, built, name, [output.name])
        return folder / output.name, digest


def _file_name() -> str:
    return f"{ENTRIES_MODULE}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def _intact_file(folder: Path) -> tuple[Path, str] | None:
    try:
        digest = (folder / COMPLETE_MARKER).read_text()
    except OSError:
        return None
    if not BuildCache.intact(folder, digest, [_file_name()]):
        return None
    return folder / _file_name(), digest


def _import(path: Path, digest: str) -> ModuleType:
    verified_bytes(path, digest, "native entries")
    loader = importlib.machinery.ExtensionFileLoader(ENTRIES_MODULE, str(path))
    spec = importlib.util.spec_from_file_location(ENTRIES_MODULE, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    if getattr(module, "abi", None) != ENTRIES_ABI:
        raise DamagedArtifactError(f"native entries {path} are not of interface {ENTRIES_ABI}")
    return module


def native_entries() -> Any:
    """The ``sf_entries.Entry`` type (``Entry(executable, parameters, fallback)``), built
    once per machine and imported once per process; ``None`` where it cannot be built (no
    C compiler, an unusable directory): a logged warning, once per process, and calls are
    checked in Python as before."""
    found = _LOADED.get("Entry", _LOADING)
    if found is not _LOADING:
        return found
    with _LOADING:
        if "Entry" not in _LOADED:
            _LOADED["Entry"] = _load()
        return _LOADED["Entry"]


def _load() -> Any:
    build = EntryBuild(
        str(toolchain_directory() / "native-entries"),
        str(configured_cache_directory() / "native-entries"),
    )
    try:
        try:
            return build.module().Entry
        except DamagedArtifactError as error:
            _log.warning("%s; checking the native entries again", error)
            return build.module().Entry
    except (CompilationError, DamagedArtifactError, OSError, ImportError) as error:
        _log.warning(
            "no native fast entries (%s): every program call is checked in Python, which "
            "costs microseconds more; to have them, fix what the message names (a missing C "
            "compiler: install one or set $CC; a directory: STENCILFORGE_TOOLCHAIN_DIR)",
            error,
        )
        return None
