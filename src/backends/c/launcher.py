"""The launcher: the one CPython extension of the c_cpu backend, built once per machine.

Programs are plain C (``backends.c.bindings``); what calls them from Python is this
extension (``backends.c.launcher_source``), compiled once per compiler identity, flags,
interpreter, NumPy version and machine. It is a toolchain-only product, so it is kept beside
the build cache, in the toolchain directory (``STENCILFORGE_TOOLCHAIN_DIR``, shared by every
cache directory), under ``c-launcher/``; where that directory cannot be created, in the build
cache under ``launcher/``:

- ``builds/sf_launcher.<key>/`` holds ``sf_launcher<EXT_SUFFIX>`` and a ``COMPLETE`` marker
  with its SHA-256; the folder is published with one atomic ``os.replace``
  (``BuildCache.publish``), so a build killed at any moment leaves only a stale work
  directory in ``tmp/``;
- before it is imported, the file is hashed and compared with the marker; a damaged or
  altered launcher is removed with a logged warning and built again.

``Launcher.module()`` returns the imported launcher; each process imports a launcher once
(the per-process registry ``_LOADED``, keyed by the launcher's key).
"""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path
from types import ModuleType

import attrs

from backends.c import launch_abi, launcher_source
from backends.c.launcher_source import LAUNCHER_C, LAUNCHER_MODULE
from backends.extensions import Extension, ExtensionBuild, extension_fingerprint, imported
from pipeline.errors import DamagedArtifactError
from pipeline.fingerprint import fingerprint

__all__ = ["LAUNCHER_FLAGS", "Launcher"]

_log = logging.getLogger(__name__)

#: The launcher's flags: no ``-march=native``, since its work is argument checks, not loops.
LAUNCHER_FLAGS = ("-O3",)

#: What is built: the one extension of the c_cpu backend.
LAUNCHER = Extension(LAUNCHER_MODULE, LAUNCHER_C, launch_abi.LAUNCH_ABI, "c_cpu launcher")

_LOADED: dict[str, ModuleType] = {}
_LOADING = threading.Lock()


@attrs.frozen
class Launcher(ExtensionBuild):
    """Where the launcher is kept and how it is built: an ``ExtensionBuild`` (``directory``
    is ``<toolchain>/c-launcher``, ``fallback_directory`` ``<cache>/launcher``) whose flags
    default to ``LAUNCHER_FLAGS``."""

    flags: tuple[str, ...] = attrs.field(default=LAUNCHER_FLAGS, converter=tuple)

    def __fingerprint__(self) -> object:
        # Everything the built extension depends on; not where it is kept.
        return extension_fingerprint(
            self.compiler,
            self.flags,
            self.compiler_identity,
            code=(sys.modules[__name__], launcher_source, launch_abi),
        )

    @property
    def key(self) -> str:
        """The launcher's identity: a digest of everything its build depends on."""
        return fingerprint(self)[:24]

    @property
    def name(self) -> str:
        """The published folder's name."""
        return f"{LAUNCHER_MODULE}.{self.key}"

    def module(self) -> ModuleType:
        """The launcher, imported once per process: built and published first if the cache
        has none, rebuilt if the published one is damaged.

        Raises:
            CompilationError: the compiler failed.
            DamagedArtifactError: the launcher was altered between its check and its import,
                twice.
        """
        key = self.key
        loaded = _LOADED.get(key)
        if loaded is not None:
            return loaded
        with _LOADING:
            loaded = _LOADED.get(key)
            if loaded is None:
                try:
                    loaded = _import(*self.published())
                except DamagedArtifactError as error:
                    # Another process may have replaced it between our check and our import
                    # (two builds racing to publish): check and import once more.
                    _log.warning("%s; checking the launcher again", error)
                    loaded = _import(*self.published())
                _LOADED[key] = loaded
            return loaded

    def published(self) -> tuple[Path, str]:
        """The path of an intact published launcher and its SHA-256 (built if missing, rebuilt
        with a logged warning if damaged).

        Raises:
            CompilationError: the compiler could not run when the launcher was made, or
                failed.
        """
        return self.intact_build(LAUNCHER, self.key)


def _import(path: Path, digest: str) -> ModuleType:
    """Import the launcher at ``path`` after checking its bytes against ``digest``.

    Raises:
        DamagedArtifactError: the file is missing, its bytes differ, or it is of another
            interface.
    """
    return imported(LAUNCHER, path, digest)
