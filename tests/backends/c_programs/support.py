"""Helpers shared by the ``c_cpu`` tests: a logging ``$CC`` wrapper and worker processes."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

#: ``tests/backends``: what a worker process needs on its ``PYTHONPATH``.
TESTS_BACKENDS = Path(__file__).resolve().parent.parent

_WRAPPER = """\
#!/bin/sh
# A C compiler that logs every invocation, for the c_cpu tests. Translation units compiled
# on their own (-c) are logged as "unit" (the support object, once per cache and flags, as
# "support"); the link of a variant measurement's executable as "measure"; the build of the
# launcher (once per launcher directory) as "launcher", the native entries (backends.entries)
# as "entries"; builds of a program (the link, or one command that compiles and links) as
# "compile"; everything else (--version, target queries)
# as "probe". Around a build it creates compile-started / compile-finished next to itself and
# sleeps $SF_TEST_CC_BEFORE / $SF_TEST_CC_AFTER seconds, so a test can kill its caller
# mid-build.
here=$(dirname "$0")
case " $* " in
  *"/sf_support.c "*)
    echo "support $$ $*" >> "$here/cc.log"
    sleep "${{SF_TEST_CC_BEFORE:-0}}"
    exec {compiler} "$@" ;;
  *" -c "*)
    echo "unit $$ $*" >> "$here/cc.log"
    exec {compiler} "$@" ;;
  *"/measure "*)
    echo "measure $$ $*" >> "$here/cc.log"
    exec {compiler} "$@" ;;
  *"/sf_launcher.c "*)
    echo "launcher $$ $*" >> "$here/cc.log"
    exec {compiler} "$@" ;;
  *"/sf_entries.c "*)
    echo "entries $$ $*" >> "$here/cc.log"
    exec {compiler} "$@" ;;
  *" -o "*)
    echo "compile $$ $*" >> "$here/cc.log"
    : > "$here/compile-started"
    sleep "${{SF_TEST_CC_BEFORE:-0}}"
    {compiler} "$@" || exit $?
    : > "$here/compile-finished"
    sleep "${{SF_TEST_CC_AFTER:-0}}"
    exit 0 ;;
  *)
    echo "probe $$ $*" >> "$here/cc.log"
    exec {compiler} "$@" ;;
esac
"""


class CompilerWrapper:
    """A ``$CC`` in ``directory`` that logs to ``directory/cc.log`` and calls the real compiler."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        real = shutil.which(os.environ.get("CC") or "cc")
        if real is None:
            raise RuntimeError("no C compiler ($CC or cc) on PATH")
        self.directory = directory
        self.path = directory / "cc-wrapper"
        self.path.write_text(_WRAPPER.format(compiler=real))
        self.path.chmod(stat.S_IRWXU)
        self.log = directory / "cc.log"
        self.log.touch()

    def lines(self, kind: str) -> list[str]:
        """Logged invocations of ``kind`` (``"compile"``, ``"unit"``, ``"support"``,
        ``"measure"``, ``"launcher"``, ``"entries"`` or ``"probe"``)."""
        return [line for line in self.log.read_text().splitlines() if line.startswith(kind + " ")]

    @property
    def compiles(self) -> int:
        """How many module builds (links, or single-command builds) were started so far."""
        return len(self.lines("compile"))

    def marker(self, name: str) -> Path:
        """``compile-started`` or ``compile-finished``."""
        return self.directory / name


def worker_environment(cache: Path, compiler: CompilerWrapper, **extra: str) -> dict[str, str]:
    """The environment of a worker: its cache, the wrapper as ``$CC``, ``c_programs``
    importable, c_cpu's variants predicted and never measured (``STENCILFORGE_TUNING=off``,
    as in this process: its backends and the worker's then key translations alike), unless
    ``extra`` says otherwise."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STENCILFORGE_", "SF_TEST_"))}
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(TESTS_BACKENDS) + (os.pathsep + path if path else "")
    env["STENCILFORGE_CACHE_DIR"] = str(cache)
    env["CC"] = str(compiler.path)
    env["OMP_NUM_THREADS"] = "1"
    env["STENCILFORGE_TUNING"] = "off"
    env.update(extra)
    return env


def run_script(
    script: str, cache: Path, compiler: CompilerWrapper, *arguments: str, **extra: str
) -> str:
    """Run ``python -c script *arguments`` as a worker would (``worker_environment``) and
    return what it printed; a non-zero exit fails the calling test with its stderr's tail."""
    done = subprocess.run(
        [sys.executable, "-c", script, *arguments],
        env=worker_environment(cache, compiler, **extra),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


def start_worker(
    cache: Path, compiler: CompilerWrapper, *arguments: str, **extra: str
) -> subprocess.Popen[str]:
    """Start ``python -m c_programs.worker`` in its own session (so its children can be killed)."""
    return subprocess.Popen(
        [sys.executable, "-m", "c_programs.worker", *arguments],
        env=worker_environment(cache, compiler, **extra),
        cwd=compiler.directory,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish_worker(process: subprocess.Popen[str], timeout: float = 120.0) -> dict[str, Any]:
    """Wait for a worker; return its report, with its ``returncode`` and ``stderr`` added."""
    stdout, stderr = process.communicate(timeout=timeout)
    lines = stdout.strip().splitlines()
    report: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    report["returncode"] = process.returncode
    report["stderr"] = stderr
    return report


def run_worker(
    cache: Path, compiler: CompilerWrapper, *arguments: str, **extra: str
) -> dict[str, Any]:
    """Run a worker to the end and return its report."""
    return finish_worker(start_worker(cache, compiler, *arguments, **extra))


def kill_worker(process: subprocess.Popen[str]) -> int:
    """``kill -9`` the worker, then what it started (the compiler, which still holds its
    pipes), and reap it. Returns the exit status (``-9`` when the kill landed)."""
    for kill in (os.kill, os.killpg):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=60)
    return process.returncode


class GeneratedModules:
    """Imports generated DSL source as real modules (the frontend reads a definition's source
    from its file), once per distinct source."""

    def __init__(self, directory: Path, prefix: str) -> None:
        self.directory = directory
        self.prefix = prefix
        self._modules: dict[str, Any] = {}

    def load(self, source: str) -> Any:
        """The module whose text is ``source``, written under ``directory`` and imported."""
        if source not in self._modules:
            name = f"{self.prefix}_{hashlib.sha1(source.encode()).hexdigest()[:16]}"
            path = self.directory / f"{name}.py"
            path.write_text(source)
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            self._modules[source] = module
        return self._modules[source]
