"""Every backend's repeat call takes a native fast path, and gives up no check on it.

``nothing`` below is a backend written from the backend guide's pattern (a translation to
Python source, a compilation, a loading step returning a plain function) whose executable
does nothing: what a call costs is the dispatcher's. Its repeat calls, positional or by
keyword, must not run the Python argument check; any call the Python check would refuse
(or that it has not seen) must run it, and be refused with its message.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import warnings
from typing import Any

import attrs
import numpy as np
import pytest
from c_programs import stencils
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import allocators
import backends
from allocators import DeviceType
from backends import CompiledBackend
from backends import entries as native
from backends.entries.source import ENTRIES_ABI
from pipeline import ProgramSource, SourceFormat
from pipeline.dsl import CompilableProgram
from pipeline.dsl.arguments import ArgumentChecker

PYTHON = SourceFormat("python", DeviceType.CPU)
SHAPE = (9, 8, 3)


@attrs.frozen
class NothingTranslation:
    emits: SourceFormat = PYTHON

    def __call__(self, program: CompilableProgram) -> ProgramSource:
        return ProgramSource(self.emits, "def run(*args):\n    pass\n", "run")


@attrs.frozen
class NothingCompilation:
    accepts: SourceFormat = PYTHON
    process_local = True  # nothing to keep on disk

    def __call__(self, source: ProgramSource) -> ProgramSource:
        return source


RUNS: list[tuple[Any, ...]] = []


def _run(*args: Any) -> None:
    RUNS.append(args)


def load_nothing(source: ProgramSource) -> Any:
    return _run


def nothing_backend() -> CompiledBackend:
    pipeline = attrs.evolve(
        backends.c_cpu.pipeline,
        translation=NothingTranslation(),
        compilation=NothingCompilation(),
        loading=load_nothing,
    )
    return CompiledBackend("nothing", allocators.NumPyBufferAllocator(), pipeline)


@attrs.define
class Checks:
    """How often the Python check ran, and the check itself, unspied."""

    original: Any
    count: int = 0

    def verdict(self, program: Any, args: tuple[Any, ...]) -> tuple[str, ...]:
        checker = ArgumentChecker(program.frontend().ir)
        return _outcome(lambda: self.original(checker, args, DeviceType.CPU, None,
                                              array_type=np.ndarray))  # fmt: skip


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Checks:
    spy = Checks(ArgumentChecker.check)

    def counted(self: ArgumentChecker, args: Any, *rest: Any, **options: Any) -> None:
        spy.count += 1
        spy.original(self, args, *rest, **options)

    monkeypatch.setattr(ArgumentChecker, "check", counted)
    RUNS.clear()
    return spy


def _outcome(call: Any) -> tuple[str, ...]:
    try:
        call()
    except (TypeError, ValueError) as error:
        return (type(error).__name__, str(error))
    return ("accepted",)


def arguments() -> tuple[np.ndarray, float, np.ndarray]:
    return np.ones(SHAPE), 0.25, np.zeros(SHAPE)


def test_repeat_calls_of_a_numpy_backend_run_no_python_check(checks):
    program = stencils.hdiff_program.with_backend(nothing_backend())
    inp, coeff, out = arguments()
    program(inp, coeff, out)
    assert checks.count == 1
    for _ in range(3):
        program(inp, coeff, out)
        program(inp, coeff=coeff, out=out)
        program(out=out, inp=inp, coeff=coeff)
    assert checks.count == 1
    assert len(RUNS) == 10 and all(run == (inp, coeff, out) for run in RUNS)


def test_ping_pong_buffers_stay_on_the_fast_path(checks):
    program = stencils.hdiff_program.with_backend(nothing_backend())
    a, coeff, b = arguments()
    for _ in range(4):
        program(a, coeff, b)
        program(b, coeff, a)
    assert checks.count == 2


def _resized(state: dict[str, Any]) -> None:
    state["inp"].resize((4, *SHAPE[1:]), refcheck=False)


def _read_only(state: dict[str, Any]) -> None:
    state["out"].setflags(write=False)


def _new_strides(state: dict[str, Any]) -> None:
    out = state["out"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        out.strides = (8, 8 * SHAPE[0], 8 * SHAPE[0] * SHAPE[1])  # Fortran order, in place


def _owner_resized(state: dict[str, Any]) -> None:
    state["owner"].resize((2,), refcheck=False)  # the view now claims memory it lacks


def _aliased(state: dict[str, Any]) -> None:
    state["out"] = state["inp"]


def _new_array(state: dict[str, Any]) -> None:
    state["inp"] = state["inp"].copy()


def _string_scalar(state: dict[str, Any]) -> None:
    state["coeff"] = "0.25"


def _int_scalar(state: dict[str, Any]) -> None:
    state["coeff"] = 1


def _other_value(state: dict[str, Any]) -> None:
    state["coeff"] = 0.5


def _reshaped(state: dict[str, Any]) -> None:
    state["inp"].shape = (SHAPE[0] * SHAPE[1], SHAPE[2])


def _retyped(state: dict[str, Any]) -> None:
    state["out"].dtype = np.int64


@pytest.mark.parametrize(
    ("change", "refused"),
    [
        (_resized, "too small along I"),
        (_read_only, "read-only"),
        (_owner_resized, "claims memory it does not have"),
        (_aliased, "shares memory"),
        (_string_scalar, "must be a real number"),
        (_reshaped, "must have 3 dimension"),
        (_retyped, "must have dtype float64"),
        (_new_strides, None),
        (_new_array, None),
        (_int_scalar, None),
        (_other_value, None),
    ],
    ids=lambda value: getattr(value, "__name__", str(value)),
)
def test_a_changed_argument_is_checked_in_python_again(checks, change, refused):
    program = stencils.hdiff_program.with_backend(nothing_backend())
    owner = np.ones(SHAPE[0] * SHAPE[1] * SHAPE[2] + 5)
    state = {"owner": owner, "inp": owner[5:].reshape(SHAPE), "coeff": 0.25, "out": None}
    state["out"] = np.zeros(SHAPE)
    if change is _resized:
        state["inp"] = np.ones(SHAPE)  # resizing needs an array that owns its memory
    program(state["inp"], state["coeff"], state["out"])
    program(state["inp"], state["coeff"], state["out"])
    assert checks.count == 1
    change(state)
    args = (state["inp"], state["coeff"], state["out"])
    expected = checks.verdict(program, args)
    before = checks.count
    for call in (lambda: program(*args), lambda: program(args[0], coeff=args[1], out=args[2])):
        assert _outcome(call) == expected
    assert checks.count > before
    if refused is None:
        assert expected == ("accepted",)
    else:
        assert refused in expected[1]


def test_keyword_calls_of_c_cpu_take_its_native_entry(checks):
    program = stencils.lap.with_backend(backends.c_cpu)
    inp, _, out = arguments()
    program(inp, out)
    assert checks.count == 0
    program(inp=inp, out=out)
    program(out=out, inp=inp)
    assert checks.count == 0
    np.testing.assert_allclose(out[1:-1, 1:-1], 0.0)


def test_without_native_entries_every_call_is_checked_in_python(checks, monkeypatch):
    monkeypatch.setattr(CompiledBackend, "native_entries", property(lambda self: None))
    program = stencils.hdiff_program.with_backend(nothing_backend())
    inp, coeff, out = arguments()
    program(inp, coeff, out)
    program(inp, coeff=coeff, out=out)
    assert checks.count == 2
    out.setflags(write=False)
    with pytest.raises(TypeError, match="read-only"):
        program(inp, coeff, out)


def test_without_a_c_compiler_there_are_no_native_entries_and_a_warning(
    monkeypatch, tmp_path, caplog
):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("STENCILFORGE_TOOLCHAIN_DIR", str(tmp_path / "toolchain"))
    with caplog.at_level(logging.WARNING, logger="backends.entries"):
        assert native._load() is None
    assert "no native fast entries" in caplog.text


MUTATIONS = [
    _resized, _read_only, _new_strides, _aliased, _new_array, _string_scalar, _int_scalar,
    _other_value, _reshaped, _retyped, lambda state: None,
    lambda state: state["out"].setflags(write=True),
    lambda state: state.update(inp=np.lib.stride_tricks.as_strided(state["inp"], (20, 8, 3))),
    lambda state: state.update(out=np.zeros((12, 8, 3))[1:10]),
    lambda state: state.update(coeff=np.float64(state["coeff"])),
    lambda state: state.update(inp=state["inp"].astype(">f8")),
    lambda state: state.update(inp=state["inp"][...]),  # a view: same memory, another object
    lambda state: state.update(out=np.ones(SHAPE)),  # maybe where a freed array was
    lambda state: state.update(out=state["out"][::-1]),  # negative strides
    lambda state: state.update(inp=np.broadcast_to(np.ones(SHAPE[2]), SHAPE)),  # stride 0
    lambda state: state.update(out=np.broadcast_to(np.ones(SHAPE[2]), SHAPE)),
]  # fmt: skip


_PROPERTY_PROGRAM = stencils.hdiff_program.with_backend(nothing_backend())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(range(len(MUTATIONS))), min_size=1, max_size=4), st.booleans())
def test_the_fast_path_decides_as_the_python_check(checks, changes, by_keyword):
    program = _PROPERTY_PROGRAM  # one program: its entry remembers earlier examples' calls
    inp, coeff, out = arguments()
    state: dict[str, Any] = {"inp": inp, "coeff": coeff, "out": out}
    program(inp, coeff, out)
    for number in changes:
        try:
            MUTATIONS[number](state)
        except ValueError:
            continue  # not possible on this array (a resize of a view, say)
        args = (state["inp"], state["coeff"], state["out"])
        expected = checks.verdict(program, args)
        before = checks.count
        if by_keyword:
            found = _outcome(lambda: program(args[0], out=args[2], coeff=args[1]))  # noqa: B023
        else:
            found = _outcome(lambda: program(*args))  # noqa: B023
        assert found == expected
        if checks.count == before:  # the fast path answered: only for an accepted call
            assert expected == ("accepted",)


def test_threads_calling_at_once_each_get_their_own_results():
    program = stencils.lap.with_backend(backends.embedded_numpy)
    failures: list[str] = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(30):
            inp, out = rng.random((6, 5, 2)), np.zeros((6, 5, 2))
            program(inp, out) if seed % 2 else program(inp=inp, out=out)
            expected = np.zeros_like(out)
            stencils.lap_reference(inp, expected)
            if not np.array_equal(out, expected):
                failures.append(f"thread {seed}")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_an_entry_binds_keywords_or_leaves_the_explanation_to_python():
    entry_type = native.native_entries()
    entry = entry_type(_run, ("a", "b"), None, None)
    a, b = np.zeros(3), np.ones(3)
    assert entry.remember(a, b)
    RUNS.clear()
    assert entry(a, b=b) is None and entry(b=b, a=a) is None and RUNS == [(a, b), (a, b)]
    for args, kwargs in [((a,), {"c": b}), ((a, b), {"b": b}), ((a,), {}), ((), {"b": b})]:
        assert entry(*args, **kwargs) is NotImplemented  # unknown, twice, missing
    assert entry.call_with((a,), {"b": b}) is None
    entry.forget()
    assert entry(a, b) is NotImplemented and len(RUNS) == 3


def test_an_entry_of_many_parameters_binds_positional_calls_only():
    entry_type = native.native_entries()
    names = tuple(f"p{i}" for i in range(300))
    values = tuple(range(300))
    entry = entry_type(_run, names, None, None)
    assert entry.remember(*values)
    assert entry(*values) is None
    assert entry(*values[:-1], p299=299) is NotImplemented  # Python binds it


def test_an_entry_that_was_never_initialized_refuses_to_run():
    entry_type = native.native_entries()
    with pytest.raises(TypeError, match="never initialized"):
        entry_type.__new__(entry_type)(1)


def test_a_damaged_extension_is_built_again_never_loaded(tmp_path, caplog):
    directory = tmp_path / "native-entries"
    # Built in another process: this one must not have the file loaded when it is damaged.
    subprocess.run(
        [sys.executable, "-c", "import sys; from backends.entries import EntryBuild; "
         "EntryBuild(sys.argv[1]).module()", str(directory)],
        check=True,
    )  # fmt: skip
    (library,) = (directory / "builds").glob("sf_entries.*/sf_entries*.so")
    library.write_bytes(b"not a shared object")
    with caplog.at_level(logging.WARNING, logger="backends.entries"):
        module = native.EntryBuild(str(directory)).module()
    assert "damaged" in caplog.text
    assert module.abi == ENTRIES_ABI and library.read_bytes() != b"not a shared object"


def test_a_toolchain_directory_others_can_write_is_never_loaded_from(
    monkeypatch, tmp_path, caplog
):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv("STENCILFORGE_TOOLCHAIN_DIR", str(shared))
    monkeypatch.setenv("STENCILFORGE_CACHE_DIR", str(shared / "cache"))
    with caplog.at_level(logging.WARNING, logger="backends.entries"):
        assert native._load() is None
    assert "no native fast entries" in caplog.text and not (shared / "native-entries").exists()
