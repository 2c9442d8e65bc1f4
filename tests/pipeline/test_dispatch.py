"""The dispatcher owns the compiled call, for built-in backends and one written from scratch.

``scratch`` below is what a new user writes: a translation to Python source, a compilation
to a code object, a loading step that returns a plain function, and no argument checks of its
own. The dispatcher must run the right specialization, check every argument with c_cpu's
messages, use the pipeline's own frontend everywhere, and name a step that returns the wrong
thing.
"""

from __future__ import annotations

import pickle
import threading

import attrs
import numpy as np
import pytest
from c_programs import stencils

import allocators
import backends
from allocators import DeviceType
from backends import CompiledBackend
from backends.arrayapi import EmbeddedExecutable
from pipeline import CachedStep, ProgramSource, SourceFormat, StageEvent, subscribe
from pipeline.dsl import CompilableProgram, field_operator, float64
from pipeline.dsl.frontend.step import Frontend, default_passes, frontend_in_memory
from pipeline.errors import CacheStoreError, StepOutputError
from pipeline.staged import Compiled, Lowered

PYTHON = SourceFormat("python", DeviceType.CPU)


@attrs.frozen
class PythonTranslation:
    """IR -> the source of a Python module whose ``run`` evaluates the program embedded."""

    emits: SourceFormat = PYTHON

    def __call__(self, program: CompilableProgram) -> ProgramSource:
        text = (
            f"# {program.ir.name}, specialized for {program.compile_time_args!r}\n"
            "def run(*args):\n"
            "    return EXECUTABLE(*args)\n"
        )
        return ProgramSource(self.emits, text, "run", metadata=program)


@attrs.frozen
class CodeArtifact:
    code: object
    source: ProgramSource


@attrs.frozen
class PythonCompilation:
    accepts: SourceFormat = PYTHON

    def __call__(self, source: ProgramSource) -> CodeArtifact:
        return CodeArtifact(compile(source.text, "<scratch>", "exec"), source)


@attrs.define
class CountingLoading:
    """Loads a plain function (no ``fast_entry``), counting loads per compile-time signature."""

    loads: list[object] = attrs.field(factory=list)

    def __call__(self, artifact: CodeArtifact):
        program = artifact.source.metadata
        self.loads.append(program.compile_time_args)
        namespace = {"EXECUTABLE": EmbeddedExecutable(program.definition, program.ir, np)}
        exec(artifact.code, namespace)
        return namespace["run"]


def scratch_backend(name="scratch", **steps) -> CompiledBackend:
    pipeline = attrs.evolve(
        backends.c_cpu.pipeline,
        translation=PythonTranslation(),
        compilation=PythonCompilation(),
        loading=CountingLoading(),
    )
    return CompiledBackend(name, allocators.NumPyBufferAllocator(), attrs.evolve(pipeline, **steps))


def lap_arguments(shape=(10, 9, 6)):
    inp = np.random.default_rng(3).uniform(-1.0, 1.0, shape)
    return inp, np.zeros(shape)


def expected_lap(inp):
    out = np.zeros(inp.shape)
    stencils.lap_reference(inp, out)
    return out


# --------------------------------------------------------------------------- specializations


def test_a_plain_function_executable_never_runs_for_another_signature():
    backend = scratch_backend()
    program = stencils.lap.with_backend(backend)
    inp, out = lap_arguments((10, 9, 12))
    program(inp, out)
    strided_inp, strided_out = inp[:, :, ::2], np.zeros((10, 9, 12))[:, :, ::2]
    program(strided_inp, strided_out)

    loads = backend.pipeline.loading.loads
    assert len(loads) == 2 and loads[0] != loads[1]
    np.testing.assert_allclose(strided_out, expected_lap(strided_inp))
    # And back: the first specialization again, without a third load.
    program(inp, out)
    assert len(loads) == 2


def test_c_cpu_repeat_calls_take_the_native_fast_entry():
    program = stencils.lap.with_backend(backends.c_cpu)
    inp, out = lap_arguments()
    program(inp, out)
    compiled = program.compile(inp, out)
    assert program._dispatcher.fast is compiled.executable.fast_entry
    np.testing.assert_allclose(out, expected_lap(inp))


# --------------------------------------------------------------------------- argument checks


BAD_CALLS = {
    "rank-2 output": lambda inp, out: (inp, out[:, :, 0]),
    "input too small": lambda inp, out: (inp[:4], out),
    "int64 input": lambda inp, out: (inp.astype(np.int64), out),
    "missing argument": lambda inp, out: (inp,),
    "list instead of an array": lambda inp, out: (inp.tolist(), out),
    "read-only output": lambda inp, out: (inp, np.broadcast_to(out, out.shape)),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_a_backend_without_checks_of_its_own_gets_c_cpu_errors_word_for_word(case):
    inp, out = lap_arguments()
    args = BAD_CALLS[case](inp, out)
    messages = {}
    for backend in (backends.c_cpu, scratch_backend()):
        with pytest.raises((TypeError, ValueError)) as info:
            stencils.lap.with_backend(backend)(*args)
        messages[backend.name] = (type(info.value), str(info.value))
    assert messages["scratch"] == messages["c_cpu"]
    assert np.all(out == 0)


# --------------------------------------------------------------------------- the frontend


@attrs.define
class CountingPasses:
    calls: list[str] = attrs.field(factory=list)

    def __call__(self, definition):
        self.calls.append(definition.name)
        return default_passes(definition)


def test_the_pipelines_frontend_runs_once_per_definition_and_serves_checks_and_keywords():
    counting = CountingPasses()
    backend = scratch_backend(frontend=Frontend(CachedStep.in_memory(counting)))
    program = stencils.lap.with_backend(backend)
    inp, out = lap_arguments((10, 9, 12))

    program(inp, out)
    program(inp[:, :, ::2], np.zeros((10, 9, 6)))  # a second signature
    program(inp=inp, out=out)  # keywords are bound with the same frontend's parameters
    with pytest.raises(TypeError, match="argument 'inp'"):
        program(inp.astype(np.int32), out)  # and the checks use its IR
    assert program.frontend().ir.name == "lap"
    assert program.lower(inp, out).ir.name == "lap"

    assert counting.calls == ["lap"]


def test_c_cpu_parses_a_definition_once_whatever_the_signatures():
    counting = CountingPasses()
    pipeline = attrs.evolve(backends.c_cpu.pipeline, frontend=frontend_in_memory(counting))
    backend = attrs.evolve(backends.c_cpu, name="c_cpu_counted", pipeline=pipeline)
    program = stencils.lap.with_backend(backend)
    inp, out = lap_arguments((10, 9, 12))
    program(inp, out)
    program(inp[:, :, ::2], np.zeros((10, 9, 12))[:, :, ::2])
    np.testing.assert_allclose(out, expected_lap(inp))
    assert counting.calls == ["lap"]


# --------------------------------------------------------------------------- step outputs


def test_a_loading_step_that_returns_no_callable_fails_at_load_naming_the_step():
    def load_nothing(artifact):
        return artifact

    program = stencils.lap.with_backend(scratch_backend(loading=load_nothing))
    inp, out = lap_arguments()
    named = r"loading step .*load_nothing returned .*CodeArtifact"
    with pytest.raises(StepOutputError, match=named):
        program(inp, out)
    # Nothing was installed: the next call fails the same way, not at a cached "fast entry".
    with pytest.raises(StepOutputError, match=named):
        program(inp, out)


def test_a_frontend_that_returns_no_compilable_program_is_named():
    program = stencils.lap.with_backend(scratch_backend(frontend=lambda d: d.definition.name))
    inp, out = lap_arguments()
    with pytest.raises(StepOutputError, match=r"frontend step .*returned builtins\.str.*CompilableProgram"):
        program(inp, out)


@attrs.frozen
class LockedTranslation(PythonTranslation):
    """A translation whose source carries a lock in its metadata: it cannot be pickled."""

    def __call__(self, program: CompilableProgram) -> ProgramSource:
        source = super().__call__(program)
        return attrs.evolve(source, metadata=(program, threading.Lock()))


def test_a_disk_cached_result_that_cannot_be_pickled_names_the_step_and_the_cache(tmp_path):
    translation = CachedStep.on_disk(LockedTranslation(), directory=tmp_path / "translations")
    program = stencils.lap.with_backend(scratch_backend(translation=translation))
    inp, out = lap_arguments()
    with pytest.raises(CacheStoreError) as info:
        program(inp, out)
    message = str(info.value)
    assert "LockedTranslation" in message and str(tmp_path / "translations") in message
    assert "cannot be pickled" in message
    assert isinstance(info.value.__cause__, (pickle.PicklingError, TypeError, AttributeError))


# --------------------------------------------------------------------------- staged objects


@pytest.mark.parametrize(
    "backend_name",
    ["c_cpu", pytest.param("dace_cpu", marks=pytest.mark.requires_dace), "scratch"],
)
def test_lower_then_compile_gives_the_stages_and_a_callable_program(backend_name):
    backend = scratch_backend() if backend_name == "scratch" else getattr(backends, backend_name)
    program = stencils.lap.with_backend(backend)
    inp, out = lap_arguments()

    lowered = program.lower(inp, out)
    assert isinstance(lowered, Lowered)
    assert lowered.ir.name == "lap" and "laplacian" in str(lowered.ir)
    assert isinstance(lowered.source, ProgramSource)
    assert lowered.as_text() == lowered.source.text
    assert len(repr(lowered.source).splitlines()) == 1 and len(repr(lowered.source)) < 200

    compiled = lowered.compile()
    assert isinstance(compiled, Compiled)
    assert compiled.artifact is not None and len(repr(compiled.artifact)) < 300
    assert "\n" not in repr(compiled.executable)
    compiled(inp, out)
    np.testing.assert_allclose(out, expected_lap(inp))
    with pytest.raises(TypeError, match="must have dtype float64"):
        compiled(inp.astype(np.float32), out)
    with pytest.raises(TypeError, match="was compiled for"):
        compiled(inp[:, :, ::2], np.zeros(out.shape)[:, :, ::2])

    # compile() installed it: the program's first call compiles nothing more.
    events: list[StageEvent] = []
    with subscribe(events.append):
        program(inp, out)
    assert events == []


@field_operator
def weighted_pair(pair: tuple[stencils.IJK, stencils.IJK], weight: float64) -> stencils.IJK:
    first, second = pair
    return first + weight * second


def test_keyword_calls_of_a_compiled_program_run_no_stage():
    program = stencils.lap.with_backend(backends.c_cpu)
    inp, out = lap_arguments()
    program.compile(inp, out)

    events: list[StageEvent] = []
    with subscribe(events.append):
        program(inp, out=out)
        program(out=out, inp=inp)
    assert events == []
    np.testing.assert_allclose(out, expected_lap(inp))


def test_direct_keyword_calls_of_a_field_operator_bind_tuples_without_the_frontend():
    operator = weighted_pair.with_backend(backends.c_cpu)
    first, second = lap_arguments()[0], np.ones((10, 9, 6))
    out = np.zeros((10, 9, 6))
    operator(weight=2.0, pair=(first, second), out=out)
    out[...] = 0.0

    events: list[StageEvent] = []
    with subscribe(events.append):
        operator(weight=2.0, pair=(first, second), out=out)
    assert events == []
    np.testing.assert_allclose(out, first + 2.0 * second)


def test_stage_events_say_which_cached_steps_answered(tmp_path):
    from backends.c import c_cpu_pipeline  # noqa: PLC0415

    backend = CompiledBackend(
        "c_cpu_private", allocators.NumPyBufferAllocator(), c_cpu_pipeline(tmp_path)
    )
    inp, out = lap_arguments()
    runs = []
    for _ in range(2):
        events: list[StageEvent] = []
        with subscribe(events.append):
            stencils.lap.with_backend(backend)(inp, out)  # a new program: a new table
        runs.append({e.stage: e.cache_hit for e in events})
    assert runs[0]["translation"] is False and runs[0]["compilation"] is False
    assert runs[1] == {"frontend": True, "translation": True, "compilation": True,
                       "loading": False}


def test_embedded_programs_walk_the_pipeline_with_stage_events_and_are_not_compiled():
    program = stencils.lap.with_backend(backends.embedded_numpy)
    inp, out = lap_arguments()
    events: list[StageEvent] = []
    with subscribe(events.append):
        program(inp, out)
    assert [e.stage for e in events] == ["frontend", "translation", "compilation", "loading"]
    assert isinstance(events[-1].artifact, EmbeddedExecutable)
    np.testing.assert_allclose(out, expected_lap(inp))
    assert "laplacian" in program.lower(inp, out).as_text()
    with pytest.raises(RuntimeError, match="embedded programs are not compiled"):
        program.compile(inp, out)
