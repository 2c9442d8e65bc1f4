"""Translation units travelling in one C source text, and building them concurrently."""

from __future__ import annotations

import ctypes
import os
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.c import CCompilation, CompilationError
from backends.c.units import join_units, split_units
from backends.clike.compiler import compiler_identity
from backends.clike.source import C_SOURCE
from pipeline.stages import ProgramSource

_NAMES = st.text("abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=12)
_TEXTS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200).map(
    lambda text: text.replace("/*", "/ *")
)


@given(st.dictionaries(_NAMES, _TEXTS, min_size=1, max_size=4))
def test_units_round_trip_through_one_text(units):
    assert split_units(join_units(units), "default") == list(units.items())


def test_a_text_without_markers_is_one_unit_under_the_default_name():
    assert split_units("int x;\n", "module") == [("module", "int x;\n")]


def test_text_before_the_first_marker_is_refused():
    text = "int stray;\n" + join_units({"a": "int a;\n"})
    with pytest.raises(ValueError, match="before the first"):
        split_units(text, "module")


def test_repeated_unit_names_are_refused():
    text = join_units({"a": "int a;\n"}) + "\n" + join_units({"a": "int b;\n"})
    with pytest.raises(ValueError, match="repeat"):
        split_units(text, "module")


def test_unit_names_must_be_words():
    with pytest.raises(ValueError, match="letters, digits"):
        join_units({"a b": "int a;\n"})


def _source(units: dict[str, str]) -> ProgramSource:
    return ProgramSource(C_SOURCE, join_units(units), "sf_units_test")


def test_an_error_in_one_unit_names_that_unit_and_keeps_the_sources(tmp_path):
    compilation = CCompilation(str(tmp_path / "cache"))
    broken = _source(
        {"good": "int good(void) { return 1; }\n", "bad": "int bad(void) { return }\n"}
    )
    with pytest.raises(CompilationError) as caught:
        compilation(broken)
    message = str(caught.value)
    assert "bad.c" in message and "error" in message
    kept = next((tmp_path / "cache" / "tmp").glob("sf_units_test-*"))
    assert (kept / "bad.c").read_text() == "int bad(void) { return }\n"
    assert not list((tmp_path / "cache" / "builds").iterdir())


def test_units_are_compiled_separately_and_linked_into_one_object(tmp_path):
    compilation = CCompilation(str(tmp_path / "cache"))
    # Each unit alone: the second calls a function only the first defines.
    units = {
        "one": "int sf_one(void) { return 41; }\n",
        "two": "int sf_one(void);\nint sf_two(void) { return sf_one() + 1; }\n",
    }
    artifact = compilation(_source(units))
    symbols = ctypes.CDLL(artifact.path)
    assert symbols.sf_two() == 42


@pytest.mark.parametrize("compiler", ["/nonexistent/stencilforge-cc", "false"])
def test_a_compiler_that_cannot_run_is_named_with_what_to_do(compiler):
    with pytest.raises(CompilationError, match="cannot run the C compiler") as caught:
        compiler_identity(compiler)
    assert compiler in str(caught.value) and "$CC" in str(caught.value)


def test_the_compilers_identity_is_remembered_where_possible(tmp_path):
    compiler_identity.cache_clear()
    memo = tmp_path / "memo"
    memo.mkdir(mode=0o700)
    previous = os.umask(0)
    try:
        identity = compiler_identity("cc", str(memo))
    finally:
        os.umask(previous)
    assert "march=" in identity
    assert [path.read_text() for path in memo.glob("compiler-*.txt")] == [identity]
    # Private whatever the umask: the memo chooses which builds this compiler's programs load.
    assert {stat.S_IMODE(p.stat().st_mode) for p in memo.glob("compiler-*.txt")} == {0o600}
    compiler_identity.cache_clear()
    # A memo directory that cannot be written to costs the memo, not the answer.
    assert compiler_identity("cc", str(tmp_path / "missing")) == identity


def test_gcc_gets_its_tuning_flags_and_other_compilers_do_not(tmp_path):
    from backends.c.compilation import GCC_TUNING, is_gcc  # noqa: PLC0415

    if is_gcc("cc"):
        assert set(GCC_TUNING) <= set(CCompilation(str(tmp_path / "gcc")).flags)
    clang = tmp_path / "fake-clang"
    clang.write_text("#!/bin/sh\necho 'Debian clang version 15.0.6'\n")
    clang.chmod(0o755)
    flags = CCompilation(str(tmp_path / "clang"), compiler=str(clang)).flags
    assert not set(GCC_TUNING) & set(flags)
    assert flags[0] == "-O3" and "-march=native" in flags
    # A compiler that cannot run gets the portable flags; the error comes when it is used.
    missing = CCompilation(str(tmp_path / "none"), compiler="/nonexistent/stencilforge-cc")
    assert not set(GCC_TUNING) & set(missing.flags)


def test_fingerprinting_a_c_compilation_creates_no_directory_and_runs_no_process(
    tmp_path, monkeypatch
):
    import subprocess  # noqa: PLC0415

    from backends.c import Launcher  # noqa: PLC0415
    from pipeline.fingerprint import fingerprint  # noqa: PLC0415

    compiler_identity.cache_clear()  # a new process: nothing remembered
    cache = tmp_path / "cache"
    compilation = CCompilation(str(cache / "c"))
    launcher = Launcher(str(tmp_path / "toolchain" / "c-launcher"), str(cache / "launcher"))

    def no_process(*args, **kwargs):
        raise AssertionError(f"a fingerprint started a process: {args}")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    monkeypatch.setattr(subprocess, "run", no_process)
    keys = {fingerprint(compilation), fingerprint(launcher)}
    assert len(keys) == 2
    assert list(tmp_path.iterdir()) == []


def test_a_c_compilation_sent_to_a_worker_asks_that_machines_compiler(tmp_path):
    import pickle  # noqa: PLC0415

    compilation = CCompilation(str(tmp_path / "c"), extra_flags=("-funroll-loops",))
    travelled = pickle.loads(pickle.dumps(compilation))
    assert travelled == compilation and "march=" in (travelled.compiler_identity or "")


def test_a_compiler_that_could_not_run_when_the_step_was_made_is_named_at_its_first_build(
    tmp_path,
):
    compilation = CCompilation(str(tmp_path / "c"), compiler="/nonexistent/stencilforge-cc")
    with pytest.raises(CompilationError, match="stencilforge-cc") as caught:
        compilation(_source({"one": "int sf_one(void) { return 1; }\n"}))
    assert "$CC" in str(caught.value)
    assert not (tmp_path / "c").exists()
