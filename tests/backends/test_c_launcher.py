"""The c_cpu launcher: programs are plain C, one extension per machine calls them.

What users rely on: a program's build parses no Python or NumPy header; the launcher is built
once, published atomically and checked before it is imported (a damaged one is rebuilt, an
altered one never imported); a shared object that is not a program of the launcher's
interface is refused; the launcher's identity is part of the loading step's.
"""

from __future__ import annotations

import ctypes
import logging
import subprocess
from pathlib import Path

import attrs
import numpy as np
import pytest
from c_programs import stencils
from c_programs.support import CompilerWrapper

import allocators
from backends import CompiledBackend
from backends.build_cache import COMPLETE_MARKER
from backends.c import CCompilation, CLoading, Launcher, c_cpu_pipeline
from backends.c.launch_abi import DESCRIPTOR_SYMBOL, LAUNCH_ABI
from backends.c.launcher import _import
from backends.clike.source import C_SOURCE
from pipeline import CompiledArtifact, ProgramSource
from pipeline.errors import DamagedArtifactError
from pipeline.fingerprint import fingerprint


def _backend(cache: Path, compiler: CompilerWrapper, launcher: Path) -> CompiledBackend:
    compilation = CCompilation(str(cache / "c"), compiler=str(compiler.path))
    pipeline = c_cpu_pipeline(cache, compilation=compilation)
    pipeline = attrs.evolve(
        pipeline, loading=CLoading(Launcher(str(launcher), compiler=str(compiler.path)))
    )
    return CompiledBackend("c_cpu_launcher_test", allocators.NumPyBufferAllocator(), pipeline)


def test_a_program_is_plain_c_built_without_python_headers(tmp_path):
    compiler = CompilerWrapper(tmp_path / "cc")
    backend = _backend(tmp_path / "cache", compiler, tmp_path / "launcher")
    inp = np.random.default_rng(3).uniform(-1, 1, (9, 8, 4))
    out = np.zeros_like(inp)
    program = stencils.lap.with_backend(backend)

    program(inp, out)

    expected = np.zeros_like(inp)
    stencils.lap_reference(inp, expected)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    source = program.lower(inp, out).source.text
    assert "#include <Python.h>" not in source and "numpy/" not in source
    (build,) = compiler.lines("compile")
    assert "-I" not in build  # no include directory: neither Python's nor NumPy's
    (launcher_build,) = compiler.lines("launcher")
    assert "Python.h" not in launcher_build  # (the launcher is the one that includes them)
    built = next((tmp_path / "cache" / "c" / "builds").glob("sf_lap*.so"))
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", str(built)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert DESCRIPTOR_SYMBOL in symbols and not [s for s in symbols if s.startswith("PyInit")]


def test_the_launcher_is_built_once_for_every_program_and_cache(tmp_path):
    compiler = CompilerWrapper(tmp_path / "cc")
    inp = np.ones((6, 6, 3))
    for cache in ("one", "two"):
        backend = _backend(tmp_path / cache, compiler, tmp_path / "launcher")
        stencils.lap.with_backend(backend)(inp, np.zeros_like(inp))
    assert len(compiler.lines("compile")) == 2
    assert len(compiler.lines("launcher")) == 1
    (published,) = (tmp_path / "launcher" / "builds").iterdir()
    assert (published / COMPLETE_MARKER).is_file()


def test_a_damaged_or_incomplete_launcher_is_built_again(tmp_path, caplog):
    launcher = Launcher(str(tmp_path / "launcher"))
    path, digest = launcher.published()
    good = path.read_bytes()

    path.write_bytes(good[: len(good) // 2])  # truncated, as by a full disk
    with caplog.at_level(logging.WARNING, logger="backends.c.launcher"):
        again, digest_again = launcher.published()
    assert "damaged" in caplog.text
    assert again == path and digest_again == digest and path.read_bytes() == good

    (path.parent / COMPLETE_MARKER).unlink()  # a folder no publication completed
    assert launcher.published()[0].read_bytes() == good


def test_an_altered_launcher_is_never_imported(tmp_path):
    launcher = Launcher(str(tmp_path / "launcher"))
    path, digest = launcher.published()
    with pytest.raises(DamagedArtifactError, match="does not match its recorded hash"):
        _import(path, "0" * 64)
    assert _import(path, digest).abi == LAUNCH_ABI


def _shared_object(tmp_path: Path, text: str) -> CompiledArtifact:
    compilation = CCompilation(str(tmp_path / "cache" / "c"))
    source = ProgramSource(C_SOURCE, text, "sf_not_a_program")
    return compilation(source)


def test_a_shared_object_that_is_not_a_program_of_this_launcher_is_refused(tmp_path):
    loading = CLoading(Launcher(str(tmp_path / "launcher")))
    plain = _shared_object(tmp_path, "int sf_something(void) { return 1; }\n")
    with pytest.raises(DamagedArtifactError, match="exports no sf_program_descriptor"):
        loading(plain)
    # A descriptor of another interface version: the launcher never calls into it.
    foreign = _shared_object(
        tmp_path,
        f"const struct {{ unsigned abi; }} {DESCRIPTOR_SYMBOL} = {{ {LAUNCH_ABI + 1} }};\n",
    )
    assert ctypes.CDLL(foreign.path)  # a valid shared object, just not ours
    with pytest.raises(DamagedArtifactError, match="another launcher interface"):
        loading(foreign)


def test_the_launchers_identity_is_part_of_the_loading_steps(tmp_path):
    default = Launcher(str(tmp_path / "a"))
    elsewhere = Launcher(str(tmp_path / "b"))
    other_flags = Launcher(str(tmp_path / "a"), flags=("-O1",))
    assert fingerprint(CLoading(default)) == fingerprint(CLoading(elsewhere))
    assert fingerprint(CLoading(default)) != fingerprint(CLoading(other_flags))
    assert default.key != other_flags.key
