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

import logging
import sys
import threading
from types import ModuleType
from typing import Any

import attrs

from backends.cache import configured_cache_directory, toolchain_directory
from backends.clike.compiler import CompilationError
from backends.entries import source
from backends.entries.source import ENTRIES_ABI, ENTRIES_C, ENTRIES_MODULE
from backends.extensions import Extension, ExtensionBuild, extension_fingerprint, imported
from pipeline.errors import DamagedArtifactError
from pipeline.fingerprint import fingerprint

__all__ = ["EntryBuild", "native_entries"]

_log = logging.getLogger(__name__)

#: What is built: the extension whose ``Entry`` type every backend's fast path uses.
ENTRIES = Extension(ENTRIES_MODULE, ENTRIES_C, ENTRIES_ABI, "native entries")

# Per process: the imported extension's Entry type, or None once it could not be had.
_LOADED: dict[str, Any] = {}
_LOADING = threading.Lock()


@attrs.frozen
class EntryBuild(ExtensionBuild):
    """Where ``sf_entries`` is kept and how it is built (an ``ExtensionBuild``)."""

    def __fingerprint__(self) -> object:
        return extension_fingerprint(
            self.compiler,
            self.flags,
            self.compiler_identity,
            code=(sys.modules[__name__], source),
        )

    def module(self) -> ModuleType:
        """The extension, built and published first if missing, rebuilt if damaged.

        Raises:
            CompilationError: no compiler, or it failed.
            DamagedArtifactError: the file was altered between its check and its import.
        """
        return imported(ENTRIES, *self.intact_build(ENTRIES, fingerprint(self)[:24]))


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
