"""The SDFG compilation step: ``ProgramSource`` (SDFG JSON) -> ``CompiledArtifact``.

DaCe builds the SDFG (code generation, CMake, the C++ compiler) in a fresh temporary folder
inside our build cache; the finished folder (the program library and DaCe's stub library) is
published with one atomic ``os.replace`` into ``builds/`` under a name derived from everything
that determines it, after a completion marker with the content hash was written into it. A
build killed at any moment leaves at most a stale temporary folder (swept later), never a
published folder that loads wrong.

DaCe's build folder is inside our cache directory. DaCe's machine-wide build cache
(precompiled runtime header, CMake configure results, recorded build commands: built from
the toolchain alone, keyed by DaCe on compiler, flags and CPU) lives in the
``toolchain_directory``, private to the user, shared by every cache directory: a cold build
of a program in a new cache directory replays the recorded commands with the precompiled
header instead of configuring CMake and compiling the DaCe runtime headers again. Where the
toolchain directory cannot be created (a read-only home), it falls back to ``shared/`` in the
build directory. DaCe 2.0 would otherwise keep it under ``/dev/shm``. What DaCe and CMake
write there is made private after each build (0600, 0700 for directories and executables,
whatever the umask), as the published build folder is when it is published.

A CPU frame that names nothing of DaCe's runtime (``light_frame``; hdiff, laplacian and most
of the corpus with the default recipe) is compiled without ``<dace/dace.h>`` and without the
precompiled header, which costs more to load than such a unit takes to parse.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from allocators import DeviceType
from backends.build_cache import COMPLETE_MARKER, BuildCache, BuildSpace, content_hash
from backends.clike.compiler import (
    CompilationError,
    compiler_identity,
    made_again_where_unpickled,
    step_fingerprint,
)
from backends.dace.translation import DACE_CONFIG_LOCK, SDFG_CPU, SDFG_CUDA, _dace_version
from pipeline.caching import ensure_private_directory, make_private
from pipeline.errors import UnsafeCacheDirectoryError
from pipeline.fingerprint import fingerprint
from pipeline.stages import CompiledArtifact, ProgramSource, SourceFormat

__all__ = [
    "COMPLETE_MARKER",
    "SDFGCompilation",
    "SDFGCompilationError",
    "artifact_files",
    "artifact_hash",
    "sdfg_artifact_is_intact",
]

_log = logging.getLogger(__name__)
_BUILD_CACHE_VARIABLE = "DACE_BUILD_CACHE_DIR"
# DaCe's configuration and the build-cache variable are process-wide: builds take turns.
_config_lock = DACE_CONFIG_LOCK


class SDFGCompilationError(RuntimeError):
    """DaCe failed to build an SDFG; the message says where its build folder was kept."""


def _default_cpu_args() -> str:
    # DaCe's default flags add -freciprocal-math and -fno-signed-zeros, which change results
    # against NumPy; -ffp-contract=off keeps fused multiply-adds out, as in c_cpu. Inside an
    # OpenMP-outlined loop gcc no longer sees the arguments' __restrict__, so it vectorizes
    # only behind run-time alias checks, one per distinct read of a fused stencil (13 in
    # hdiff), and gives up beyond 10 by default: the fused loop then runs scalar, 5x slower.
    # -fno-trapping-math: with OpenMP, gcc 12 moves a subtraction into a branch of a
    # ``where`` (flux limiting in hdiff) and then refuses to if-convert the loop, since that
    # operation "could trap": the loop stays scalar, ``omp simd`` or not (hdiff 2.6-3x
    # slower, every recipe). It changes no value: IEEE results, signed zeros, NaN and
    # rounding are kept; only FP exception flags, which nothing here reads, may differ.
    return (
        "-march=native -fno-math-errno -ffp-contract=off -fno-trapping-math "
        "--param=vect-max-version-for-alias-checks=64 "
        "-Wno-unused-parameter -Wno-unused-label -Wno-unused-variable"
    )


def _cxx() -> str:
    """The C++ compiler DaCe's CMake build uses: ``$CXX``, else ``c++``."""
    return os.environ.get("CXX") or "c++"


@functools.cache
def links_with_gold(compiler: str) -> bool:
    """Whether ``compiler`` links a C++ shared library with gold (``-fuse-ld=gold``).

    gold being installed is not enough: a compiler of another toolchain can hand gold a
    ``libstdc++`` it cannot open, as on a lent GPU machine's image, where every dace_cpu
    build failed in its link. One probe link (about 40 ms) per compiler and process, made
    only where ``ld.gold`` is on the PATH.
    """
    if shutil.which("ld.gold") is None:
        return False
    with tempfile.TemporaryDirectory(prefix="stencilforge-gold-") as folder:
        source = Path(folder) / "probe.cpp"
        source.write_text("int sf_probe() { return 0; }\n")
        command = [compiler, "-shared", "-fPIC", "-fuse-ld=gold", str(source), "-o",
                   str(Path(folder) / "probe.so")]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=60,
                                    check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
    if result.returncode != 0:
        _log.info("not linking with gold: %s could not link with it (%s)", compiler,
                  result.stderr.strip()[-300:])
    return result.returncode == 0


def _identity_of(compilation: SDFGCompilation) -> str | None:
    try:
        return compiler_identity(_cxx(), compilation.build_directory)
    except CompilationError:
        return None  # a compiler that cannot run is reported when the step is used


def _chosen_linker_args(compilation: SDFGCompilation) -> str:
    if compilation.linker_args is not None:
        return compilation.linker_args
    # gold links a library in half the time of the default linker (bfd): 0.05 against
    # 0.1 s here, twice a CPU build (the program's library and DaCe's stub).
    gold = compilation.device_type == DeviceType.CPU and links_with_gold(_cxx())
    return "-fuse-ld=gold" if gold else ""


@attrs.frozen
class SDFGCompilation:
    """Build an SDFG with DaCe into the build cache.

    Attributes:
        build_directory: our part of the build cache (``builds/``, ``tmp/`` and DaCe's
            machine-wide ``shared/`` build cache live inside).
        device_type: CPU, or CUDA for SDFGs made by the GPU translation.
        build_type: CMake build type (DaCe's sole source of the optimization level).
        cpu_args: C++ compiler flags on top of the build type (DaCe's CMake build adds what a
            loadable library needs, whatever these say).
        extra_cpu_args: added after ``cpu_args``, to tune the defaults rather than replace them.
        linker_args: flags of the link of the libraries (DaCe's ``compiler.linker.args``);
            None: the gold linker for CPU builds where it links, else none.
        toolchain_directory: where DaCe's machine-wide build cache lives (None: ``shared/``
            in ``build_directory``); advisory, so not part of the fingerprint.
        compiler_identity: what the C++ compiler (``$CXX``, else ``c++``) says it is
            (``backends.clike.compiler.compiler_identity``), asked when the step is made (an
            ``attrs.evolve`` or an unpickling asks again), so that fingerprinting the step
            runs nothing; None when the compiler cannot run, which the first build reports.
        chosen_linker_args: ``linker_args``, or where it is None what the probe of gold
            chose when the step was made.
        dace_version: the installed DaCe's version, read when the step is made.
    """

    build_directory: str
    toolchain_directory: str | None = None
    device_type: DeviceType = DeviceType.CPU
    build_type: str = "Release"
    cpu_args: str = attrs.field(factory=_default_cpu_args)
    extra_cpu_args: str = ""
    linker_args: str | None = None
    compiler_identity: str | None = attrs.field(
        default=attrs.Factory(_identity_of, takes_self=True), init=False, repr=False
    )
    chosen_linker_args: str = attrs.field(
        default=attrs.Factory(_chosen_linker_args, takes_self=True), init=False, repr=False
    )
    dace_version: str = attrs.field(factory=_dace_version, init=False, repr=False)

    @property
    def accepts(self) -> SourceFormat:
        """``sdfg`` for the compilation's device type."""
        return SDFG_CPU if self.device_type == DeviceType.CPU else SDFG_CUDA

    def __reduce__(self) -> tuple[object, ...]:
        return made_again_where_unpickled(self)

    def __fingerprint__(self) -> object:
        return step_fingerprint(
            self.device_type.name,
            self.build_type,
            self.cpu_args,
            self.extra_cpu_args,
            self.chosen_linker_args,
            self.compiler_identity,
            self.dace_version,
            code=(sys.modules[__name__],),
        )

    def __call__(self, source: ProgramSource, /) -> CompiledArtifact:
        """Build ``source`` with DaCe (or find its build) and publish it; its artifact.

        Raises:
            CompilationError: the C++ compiler could not run when the step was made.
            SDFGCompilationError: DaCe's build failed (its build folder is kept).
        """
        if self.compiler_identity is None:
            compiler_identity(_cxx())  # raises, saying why
            raise CompilationError(
                f"the C++ compiler {_cxx()!r} could not run when this compilation step was "
                "made; make the step again (attrs.evolve) now that it runs"
            )
        # The same BuildCache as c_cpu's: the same refusals, read-only and full-disk fallbacks.
        root = Path(self.build_directory)
        key = fingerprint((self, source.text))[:24]
        name = f"{source.entry_point}.{key}"
        files = tuple(f.name for f in artifact_files(Path(name), source.entry_point))

        def build(space: BuildSpace, workdir: Path) -> CompiledArtifact:
            existing = _published(space.builds / name, source)
            if existing is not None:
                return existing  # built by another process whose cache entry we do not see
            shared = self._toolchain(root) if space.kept else workdir
            folder = workdir / source.entry_point
            self._build(source, folder, shared)
            _keep_only(folder, set(files))
            target, content_hash = builds.publish(space, folder, name, files)
            library, _ = artifact_files(target, source.entry_point)
            return CompiledArtifact(str(library), content_hash, source.entry_point, source)

        builds = BuildCache(root)
        return builds.build(source.entry_point, build)

    def _toolchain(self, root: Path) -> Path:
        """The private directory for DaCe's build cache (created if needed)."""
        if self.toolchain_directory is not None:
            try:
                return ensure_private_directory(self.toolchain_directory)
            except UnsafeCacheDirectoryError:
                raise  # a directory others can write is refused, never worked around
            except OSError as error:
                _log.warning(
                    "cannot use the toolchain directory %s (%s); DaCe's build cache goes "
                    "into the build directory",
                    self.toolchain_directory,
                    error,
                )
        return ensure_private_directory(root / "shared")

    def _build(self, source: ProgramSource, folder: Path, shared: Path) -> None:
        import dace  # noqa: PLC0415  (optional package)
        from dace.config import Config, temporary_config  # noqa: PLC0415

        sdfg = dace.SDFG.from_json(json.loads(source.text))
        sdfg.build_folder = str(folder)
        with _config_lock, temporary_config(), _environment(_BUILD_CACHE_VARIABLE, str(shared)):
            Config.set("compiler", "build_folder_mode", value="production")
            Config.set("compiler", "use_cache", value=False)
            Config.set("compiler", "build_type", value=self.build_type)
            Config.set(
                "compiler", "cpu", "args", value=f"{self.cpu_args} {self.extra_cpu_args}".strip()
            )
            Config.set("compiler", "linker", "args", value=self.chosen_linker_args)
            Config.set("default_build_folder", value=str(folder.parent))
            try:
                if self.device_type == DeviceType.CPU:
                    _build_cpu(dace, sdfg, folder)
                else:
                    sdfg.compile(validate=False, return_program_handle=False)
            except Exception as error:
                raise SDFGCompilationError(
                    f"DaCe could not build {source.entry_point} ({type(error).__name__}: "
                    f"{error}); its build folder is kept in {folder}"
                ) from error
            finally:
                # DaCe and CMake write with the process's umask; what they keep in the
                # toolchain (precompiled header, recorded commands) chooses loaded code.
                make_private(shared)


#: What a unit that needs nothing of DaCe's runtime includes instead of ``<dace/dace.h>``:
#: the two macros of it that DaCe's CPU frames use (as ``dace/types.h`` defines them for
#: gcc and clang), and C's own ``<math.h>`` and ``<stdlib.h>`` where the unit includes them
#: (libstdc++'s C++ wrappers of those pull in ``<cmath>``: 0.3 s of parsing, three times
#: what hdiff's own code takes).
_LIGHT_PRELUDE = """\
#define _GLIBCXX_INCLUDE_NEXT_C_HEADERS
#include <stdint.h>
#define DACE_EXPORTED extern "C"
#define DACE_ALIGN(N) __attribute__((aligned(N)))
"""
_LIGHT_MACROS = frozenset({"DACE_EXPORTED", "DACE_ALIGN"})
_RUNTIME_INCLUDE = "#include <dace/dace.h>\n"
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")

#: Names of DaCe's runtime (2.0) that generated code may use unqualified: its global
#: functions (``dace/math.h``, ``dace/pyinterop.h``: sympy's built-ins, ``using std::abs``),
#: its namespaces and its ``__dace_`` functions. Several have a C namesake (``abs``) or a
#: C++ overload (``min``) that would compile without the runtime and mean something else,
#: so a unit naming any of them keeps the runtime header. Whatever else of the runtime a
#: unit names fails to compile without it, and the unit is built again with it.
_RUNTIME_NAMES = frozenset(
    {
        "dace", "std", "abs", "min", "max", "Min", "Max", "Abs", "IfExpr", "frexp", "iround",
        "int_ceil", "int_floor", "ceiling", "sgn", "bitwise_and", "bitwise_or", "bitwise_xor",
        "bitwise_invert", "right_shift", "left_shift", "ROUND", "range", "pyobject", "half",
        "__dace_init_cuda", "__dace_smem_err", "__dace__reduction_lambda",
    }
)


def light_frame(code: str) -> str | None:
    """``code`` (a CPU frame DaCe generated) with ``#include <dace/dace.h>`` replaced by
    ``_LIGHT_PRELUDE``, or None where the code may need DaCe's runtime: it names one of
    ``_RUNTIME_NAMES``, a ``DACE_`` macro the prelude does not define, or a ``_dace_`` name.

    A unit that uses nothing of a header compiles to the same object with or without it;
    the compiler then parses no C++ runtime headers and loads no precompiled header (ADR
    0008, fifth amendment).
    """
    if _RUNTIME_INCLUDE not in code:
        return None
    for name in set(_IDENTIFIER.findall(code.replace(_RUNTIME_INCLUDE, "", 1))):
        runtime_macro = name.startswith(("DACE_", "__DACE_")) and name not in _LIGHT_MACROS
        if name in _RUNTIME_NAMES or runtime_macro or name.startswith("_dace_"):
            return None
    return code.replace(_RUNTIME_INCLUDE, _LIGHT_PRELUDE, 1)


def _build_cpu(dace: Any, sdfg: Any, folder: Path) -> None:
    """What DaCe's ``SDFG.compile`` does for a CPU SDFG in a new build folder (generate the
    code, write the program folder, build it with DaCe's CMake project or recorded commands),
    with two differences: a frame that needs nothing of DaCe's runtime is built without its
    header and without DaCe's precompiled header (``light_frame``), and DaCe's compressed copy
    of the SDFG is not written (the artifact carries the SDFG)."""
    from dace.codegen import codegen  # noqa: PLC0415
    from dace.config import Config  # noqa: PLC0415

    # DaCe's control-flow raising (loops and branches from the state machine) took half of
    # code generation; the translation's states need none of it: the branches over the
    # stencils' modes are emitted as conditional jumps instead.
    Config.set("optimizer", "detect_control_flow", value=False)
    sdfg.fill_scope_connectors()
    objects = codegen.generate_code(sdfg, validate=False)
    linked = [code for code in objects if code.linkable]
    light = light_frame(linked[0].clean_code) if len(linked) == 1 else None
    if light is None:
        _build_program_folder(sdfg, objects, folder, precompiled_header=True)
        return
    frame = linked[0].code
    linked[0].code = light
    try:
        _build_program_folder(sdfg, objects, folder, precompiled_header=False)
    except Exception as error:  # any failure: the build with the header says what it was
        _log.warning(
            "%s did not build without DaCe's runtime header (%s: %s); building it with the "
            "header",
            sdfg.name,
            type(error).__name__,
            (str(error).splitlines() or [""])[0],
        )
        linked[0].code = frame
        shutil.rmtree(folder, ignore_errors=True)
        _build_program_folder(sdfg, objects, folder, precompiled_header=True)


def _build_program_folder(
    sdfg: Any, objects: list[Any], folder: Path, *, precompiled_header: bool
) -> None:
    from dace.codegen import compiler  # noqa: PLC0415
    from dace.config import Config  # noqa: PLC0415

    Config.set("compiler", "precompiled_header", value=precompiled_header)
    compiler.generate_program_folder(None, objects, str(folder), folder_mode="production")
    # The frame includes it; DaCe writes the SDFG's hash into it, which nothing we build reads.
    (folder / "include").mkdir(exist_ok=True)
    (folder / "include" / "hash.h").write_text(f"/* {sdfg.name} */\n")
    compiler.configure_and_compile(str(folder), sdfg.name, folder_mode="production")


def artifact_files(folder: Path, entry_point: str) -> tuple[Path, Path]:
    """The program library and DaCe's stub library of a build folder (production mode)."""
    return folder / f"lib{entry_point}.so", folder / f"libdacestub_{entry_point}.so"


def artifact_hash(library: Path, stub: Path) -> str:
    """The content hash of a build: SHA-256 of the library and of the stub, joined."""
    return content_hash([library, stub])


def sdfg_artifact_is_intact(artifact: CompiledArtifact) -> bool:
    """Whether the published build still has its completion marker and the bytes recorded
    at publish time (the ``validate`` of the cached compilation step)."""
    folder = Path(artifact.path).parent
    files = [f.name for f in artifact_files(folder, artifact.entry_point)]
    return BuildCache.intact(folder, artifact.content_hash, files)


def _published(target: Path, source: ProgramSource) -> CompiledArtifact | None:
    """The artifact of an intact published build at ``target``, or None."""
    library, stub = artifact_files(target, source.entry_point)
    try:
        marker = (target / COMPLETE_MARKER).read_text()
    except OSError:
        return None
    if not BuildCache.intact(target, marker, [library.name, stub.name]):
        return None
    return CompiledArtifact(str(library), marker, source.entry_point, source)


def _keep_only(folder: Path, names: set[str]) -> None:
    """Drop what a production build folder has besides the libraries (mode files, tags)."""
    for entry in folder.iterdir():
        if entry.name in names:
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


@contextlib.contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous
