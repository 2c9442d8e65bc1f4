"""The identity of a C or C++ compiler, and the error of one that cannot run or fails.

``compiler_identity(compiler)`` is what a build made with ``compiler`` depends on besides its
flags and source: the compiler's ``--version`` banner and the CPU ``-march=native`` resolves
to. Compilation steps ask it when they are made and keep it in their fingerprints
(``backends.c``'s C programs, ``backends.dace``'s C++ builds), so that fingerprinting a step
runs nothing (``step_fingerprint`` adds what every such fingerprint holds);
``made_again_where_unpickled`` makes such a step ask again on the machine it is sent to.
"""

from __future__ import annotations

import functools
import logging
import os
import platform
import shutil
import subprocess
import types
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from pipeline.caching import make_private, package_version
from pipeline.fingerprint import fingerprint, fingerprint_bytes, source_digest

__all__ = [
    "CompilationError",
    "compiler_identity",
    "default_compiler",
    "made_again_where_unpickled",
    "run_compiler",
    "step_fingerprint",
]

_log = logging.getLogger(__name__)


class CompilationError(RuntimeError):
    """A C or C++ compiler could not run or failed; the message has its output and where
    the source was kept."""


def _machine_signature() -> str:
    """What ``-march=native`` depends on: the CPU's model and feature flags (Linux), else
    the platform's description."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            lines = [line for line in cpuinfo if line.startswith(("model name", "flags"))][:2]
        return fingerprint_bytes("".join(lines).encode())
    except OSError:
        return platform.platform() + platform.processor()


def default_compiler() -> str:
    """``$CC`` if set, else ``cc``."""
    return os.environ.get("CC") or "cc"


@functools.cache
def compiler_identity(compiler: str, memo_directory: str | None = None) -> str:
    """The compiler's ``--version`` banner and the CPU ``-march=native`` resolves to.

    Asking the compiler costs tens of milliseconds, so with ``memo_directory`` the answer is
    remembered in a file keyed by the compiler executable (path, size, modification time)
    and the machine's CPU: a warm process then starts without running the compiler.

    Raises:
        CompilationError: the compiler cannot be run.
    """
    executable = shutil.which(compiler) or compiler
    try:
        info = os.stat(executable)
        memo_key = fingerprint(
            (os.path.realpath(executable), info.st_size, info.st_mtime_ns, _machine_signature())
        )[:32]
    except OSError:
        memo_key = None
    memo = (
        Path(memo_directory) / f"compiler-{memo_key}.txt" if memo_directory and memo_key else None
    )
    if memo is not None:
        try:
            return memo.read_text()
        except OSError:
            pass
    identity = _ask_compiler(compiler)
    if memo is not None:
        # Written in tmp/ first, where the sweep of stale builds finds what a kill leaves.
        temporary = memo.parent / "tmp" / f"{memo.name}.{os.getpid()}.tmp"
        try:
            temporary.parent.mkdir(mode=0o700, exist_ok=True)
            temporary.write_text(identity)
            make_private(temporary)
            os.replace(temporary, memo)
        except OSError as error:  # the memo saves time; without it the answer still holds
            _log.debug("not remembering the compiler's identity in %s: %s", memo, error)
    return identity


def _ask_compiler(compiler: str) -> str:
    # Both questions at once: each is a compiler start-up, on the path of a cold first call.
    try:
        version = subprocess.Popen(
            [compiler, "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        target = subprocess.Popen(
            [compiler, "-march=native", "-Q", "--help=target"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    except OSError as error:
        raise CompilationError(
            f"cannot run the C compiler {compiler!r} ({error}); install gcc or clang, or set "
            "$CC to a working compiler"
        ) from error
    banner, version_errors = version.communicate()
    march = target.communicate()[0]
    if version.returncode != 0:
        raise CompilationError(
            f"cannot run the C compiler {compiler!r} (`{compiler} --version` exited with "
            f"{version.returncode}: {version_errors.strip()[-400:]}); install gcc or clang, or "
            "set $CC to a working compiler"
        )
    arch = next(
        (line.split()[-1] for line in march.splitlines() if line.strip().startswith("-march=")), ""
    )
    return f"{banner.strip()} march={arch}"


def run_compiler(
    command: Sequence[str],
    *,
    kind: str,
    install: str,
    compiling: str,
    kept: str,
    error: type[Exception] = CompilationError,
) -> None:
    """Run the compiler ``command`` (``command[0]`` the compiler, a ``kind`` one) to its end.

    Raises:
        error: it cannot run (why, and ``install``: what to do), or it failed compiling
            ``compiling`` (its exit status, where the sources are ``kept``, the command and
            the end of its error output).
    """
    try:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as cause:
        raise error(
            f"cannot run the {kind} compiler {command[0]!r} ({cause}); {install}"
        ) from cause
    if result.returncode != 0:
        raise error(
            f"compiling {compiling} with {command[0]} failed (exit {result.returncode}); "
            f"{kept}\n{' '.join(command)}\n{result.stderr[-4000:]}"
        )


def step_fingerprint(*build: object, code: Iterable[types.ModuleType]) -> tuple[object, ...]:
    """A compilation step's ``__fingerprint__``: ``build`` (what it builds with: its compiler,
    flags and the compiler's identity), then the stencilforge version and a digest of
    ``code``, the modules whose source decides what it builds.

    Never the step's build directory: where a build lands does not change what it is, and a
    fleet's machines (their caches in different homes) share builds by this key.
    """
    return (*build, package_version(), source_digest(*code))


def made_again_where_unpickled(step: attrs.AttrsInstance) -> tuple[object, ...]:
    """``step.__reduce__`` for a compilation step that asks its compiler when it is made:
    unpickled (in a build worker), it is made again from its ``__init__`` arguments, so what
    it keeps of the compiler is that of the machine that builds."""
    arguments = {a.name: getattr(step, a.name) for a in attrs.fields(type(step)) if a.init}
    return (_made_again, (type(step), arguments))


def _made_again(cls: type[Any], arguments: dict[str, object]) -> object:
    return cls(**arguments)
