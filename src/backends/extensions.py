"""CPython extensions built once per machine from one C source: the c_cpu launcher
(``backends.c.launcher``) and every backend's native entries (``backends.entries``).

An ``Extension`` is what is built (the module's name, its C source, the interface its module
must report, its name in messages); an ``ExtensionBuild`` is where it is kept and the compiler
that builds it (``ExtensionBuild.intact_build`` takes the first two steps). The walk::

    private_root(directory, fallback)            the toolchain directory, else the cache's
    published(extension, root, key, command)     builds/<module>.<key>/ with a COMPLETE marker
      intact? -> its file and SHA-256
      missing -> BuildCache.once: one process at a time (the others wait, then find it)
                 compiles in tmp/ and publishes with one atomic os.replace
      damaged -> a logged warning, removed, built again
    imported(extension, path, digest)            bytes checked against the digest, then
                                                 imported; a module of another interface is
                                                 a DamagedArtifactError
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import attrs
import numpy as np

from backends.build_cache import COMPLETE_MARKER, BuildCache, BuildSpace, verified_bytes
from backends.clike.compiler import (
    CompilationError,
    compiler_identity,
    default_compiler,
    made_again_where_unpickled,
)
from pipeline.caching import ensure_private_directory
from pipeline.errors import DamagedArtifactError, UnsafeCacheDirectoryError
from pipeline.fingerprint import source_digest

__all__ = [
    "Extension",
    "ExtensionBuild",
    "build_environment",
    "extension_fingerprint",
    "imported",
    "private_root",
    "published",
]

_log = logging.getLogger(__name__)


@attrs.frozen
class Extension:
    """A CPython extension of one C source file.

    Attributes:
        module: the module's name (``sf_launcher``): its file is ``<module><EXT_SUFFIX>``.
        source: the C source.
        abi: what the built module's ``abi`` attribute must equal to be imported.
        what: its name in messages (``"c_cpu launcher"``).
    """

    module: str
    source: str = attrs.field(repr=False)
    abi: object
    what: str

    @property
    def file_name(self) -> str:
        """The built file's name."""
        return f"{self.module}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def _identity_of(build: ExtensionBuild) -> str | None:
    try:
        return compiler_identity(build.compiler, build.directory)
    except CompilationError:
        return None  # reported when the extension is built


@attrs.frozen
class ExtensionBuild:
    """Where an extension is kept and the compiler that builds it; what the c_cpu launcher
    and the native entries share (each adds its ``Extension``, its key and how it loads).

    Attributes:
        directory: where it is kept (``builds/`` and ``tmp/`` live inside, and the compiler's
            identity is remembered there).
        fallback_directory: where it is kept when ``directory`` cannot be created (None:
            nowhere else). A directory others can write is refused, never worked around.
        compiler: the C compiler (``$CC``, else ``cc``): any compiler of the platform's C
            ABI.
        flags: its optimization flags (``-fPIC -shared`` are always added).
        compiler_identity: what ``compiler`` says it is, asked when the build is made (so
            that fingerprinting it runs nothing); None when it cannot run, which building
            the extension reports.
    """

    directory: str
    fallback_directory: str | None = None
    compiler: str = attrs.field(factory=default_compiler)
    flags: tuple[str, ...] = attrs.field(default=("-O2",), converter=tuple)
    compiler_identity: str | None = attrs.field(
        default=attrs.Factory(_identity_of, takes_self=True), init=False, repr=False
    )

    def __reduce__(self) -> tuple[object, ...]:
        return made_again_where_unpickled(self)

    def intact_build(self, extension: Extension, key: str) -> tuple[Path, str]:
        """The path of an intact published build of ``extension`` with this compiler and
        flags, and its SHA-256 (:func:`published` under the directory, or the fallback).

        Raises:
            CompilationError: the compiler could not run when the build was made, or failed.
        """
        if self.compiler_identity is None:
            compiler_identity(self.compiler)  # raises, saying why
        root = private_root(self.directory, self.fallback_directory, extension.what)
        return published(extension, root, key, (self.compiler, *self.flags))


def build_environment() -> tuple[object, ...]:
    """What any extension's build depends on besides its compiler, flags and source: the
    interpreter's ABI and headers, NumPy's version and headers."""
    return (
        sys.implementation.cache_tag,
        sysconfig.get_config_var("EXT_SUFFIX"),
        sysconfig.get_paths()["include"],
        np.__version__,
        np.get_include(),
    )


def extension_fingerprint(*build: object, code: Sequence[ModuleType]) -> tuple[object, ...]:
    """An extension build's ``__fingerprint__``: ``build`` (its compiler, the compiler's
    identity, flags), :func:`build_environment`, and a digest of ``code`` (the modules its
    source and its build come from) and of this module. Not where the extension is kept."""
    return (*build, *build_environment(), source_digest(*code, sys.modules[__name__]))


def private_root(directory: str, fallback: str | None, what: str) -> Path:
    """``directory``, created private; where it cannot be created, ``fallback`` (with a
    logged warning).

    Raises:
        UnsafeCacheDirectoryError: a directory others can write (never worked around).
        OSError: neither can be created.
    """
    try:
        return ensure_private_directory(directory)
    except UnsafeCacheDirectoryError:
        raise
    except OSError as error:
        if fallback is None:
            raise
        _log.warning(
            "cannot use the toolchain directory %s (%s); the %s goes into %s",
            directory,
            error,
            what,
            fallback,
        )
        return ensure_private_directory(fallback)


def published(
    extension: Extension, root: Path, key: str, command: Sequence[str]
) -> tuple[Path, str]:
    """The path of an intact published build of ``extension`` under ``root`` (in
    ``builds/<module>.<key>/``) and its SHA-256: built with ``command`` (the compiler and its
    flags; position-independence, Python's and NumPy's headers, the source and the output
    are added) when missing, built again with a logged warning when damaged.

    Raises:
        CompilationError: the compiler cannot run or failed.
    """
    name = f"{extension.module}.{key}"
    cache = BuildCache(root)
    folder = cache.space().builds / name

    def find() -> tuple[Path, str] | None:
        found = _intact_file(extension, folder)
        if found is None and folder.exists():
            _log.warning(
                "the %s %s is damaged or incomplete: building it again", extension.what, folder
            )
            shutil.rmtree(folder, ignore_errors=True)
        return found

    def build(space: BuildSpace, workdir: Path) -> tuple[Path, str]:
        built = workdir / name
        built.mkdir(mode=0o700)
        output = built / extension.file_name
        _compile(extension, command, workdir, output)
        folder, digest = cache.publish(space, built, name, [output.name])
        return folder / output.name, digest

    return cache.once(name, find, lambda: cache.build(extension.module, build))


def imported(extension: Extension, path: Path, digest: str) -> ModuleType:
    """The module at ``path``, imported after its bytes were checked against ``digest``.

    Raises:
        DamagedArtifactError: the file is missing, its bytes differ, or it reports another
            interface than ``extension.abi``.
    """
    verified_bytes(path, digest, extension.what)
    loader = importlib.machinery.ExtensionFileLoader(extension.module, str(path))
    spec = importlib.util.spec_from_file_location(extension.module, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    if getattr(module, "abi", None) != extension.abi:
        raise DamagedArtifactError(
            f"{extension.what} {path} is not of interface {extension.abi}"
        )
    return module


def _compile(extension: Extension, command: Sequence[str], workdir: Path, output: Path) -> None:
    source = workdir / f"{extension.module}.c"
    source.write_text(extension.source)
    full = [
        *command[:1],
        "-fPIC",
        "-shared",
        *command[1:],
        f"-I{sysconfig.get_paths()['include']}",
        f"-I{np.get_include()}",
        str(source),
        "-o",
        str(output),
    ]
    try:
        process = subprocess.run(full, capture_output=True, text=True, check=False)
    except OSError as error:
        raise CompilationError(
            f"cannot run the C compiler {command[0]!r} to build the {extension.what} "
            f"({error}); install gcc or clang, or set $CC to a working compiler"
        ) from error
    if process.returncode != 0:
        raise CompilationError(
            f"building the {extension.what} failed (exit {process.returncode}); source kept "
            f"in {workdir}\n{' '.join(full)}\n{process.stderr[-4000:]}"
        )


def _intact_file(extension: Extension, folder: Path) -> tuple[Path, str] | None:
    """The extension's file in a published ``folder`` and its hash, if the folder is
    complete and the file has the bytes its marker records."""
    try:
        digest = (folder / COMPLETE_MARKER).read_text()
    except OSError:
        return None
    if not BuildCache.intact(folder, digest, [extension.file_name]):
        return None
    return folder / extension.file_name, digest
