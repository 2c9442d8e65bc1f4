"""compile_many and prog.compile(executor=...): serial, threads, a spawn process pool, Dask.

Programs are generated into a temporary directory that worker processes never see: only the
IR crosses, so user functions need not be importable there.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import warnings
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor

import attrs
import numpy as np
import pytest
from c_programs.support import CompilerWrapper, GeneratedModules
from runner_steps import CountsUnpickling, FailingFor, KillsWorkerFor, UnpicklableInWorkers

import allocators
from backends import CompiledBackend
from backends.c import CCompilation, c_cpu_pipeline
from pipeline import CompileError, StageEvent, compile_many, subscribe
from pipeline.runners import BUILD_JOBS_VARIABLE, build_executor
from pipeline.steps import identity

TEMPLATE = '''
from pipeline.dsl import Dimension, Field, field_operator, float64, program

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")
IJK = Field[[I, J, K], float64]


@field_operator
def weighted_{index}(f: IJK) -> IJK:
    return {weight} * f + f(I + 1) - f(J - {reach})


@program
def {name}(inp: IJK, out: IJK):
    weighted_{index}(inp, out=out[:-1, {reach}:, :])
'''


def reference(inp, weight, reach):
    out = np.zeros_like(inp)
    out[:-1, reach:] = weight * inp[:-1, reach:] + inp[1:, reach:] - inp[:-1, :-reach]
    return out


@pytest.fixture
def make_programs(tmp_path):
    modules = GeneratedModules(tmp_path / "user_code", "runner")
    (tmp_path / "user_code").mkdir()

    def make(count, backend, names=None):
        programs = []
        for index in range(count):
            name = names[index] if names else f"prog_{index}"
            source = TEMPLATE.format(index=index, name=name, weight=index + 0.5,
                                     reach=1 + index % 2)
            programs.append(getattr(modules.load(source), name).with_backend(backend))
        return programs

    return make


def private_backend(tmp_path, compiler, **steps):
    compilation = CCompilation(str(tmp_path / "cache" / "c"), compiler=str(compiler.path))
    pipeline = c_cpu_pipeline(tmp_path / "cache", compilation=compilation)
    return CompiledBackend("c_cpu_runner", allocators.NumPyBufferAllocator(),
                           attrs.evolve(pipeline, **steps))


def arguments():
    inp = np.random.default_rng(2).uniform(-1, 1, (7, 6, 3))
    return inp, np.zeros_like(inp)


def check_installed_and_right(programs, compiled):
    events: list[StageEvent] = []
    with subscribe(events.append):
        for index, (program, result) in enumerate(zip(programs, compiled, strict=True)):
            inp, out = arguments()
            program(inp, out)
            np.testing.assert_allclose(out, reference(inp, index + 0.5, 1 + index % 2))
            result(inp, out)
    assert events == []  # every first call ran at once: nothing was compiled on call


@pytest.mark.parametrize("kind", ["serial", "threads", "processes"])
def test_compile_many_compiles_installs_and_keeps_the_order(tmp_path, make_programs, kind):
    compiler = CompilerWrapper(tmp_path / "cc")
    programs = make_programs(5, private_backend(tmp_path, compiler))
    jobs = [(program, arguments()) for program in programs]
    if kind == "serial":
        compiled = compile_many(jobs, progress=False)
    elif kind == "threads":
        with ThreadPoolExecutor(2) as pool:
            compiled = compile_many(jobs, executor=pool, progress=False)
    else:
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(2, mp_context=spawn) as pool:
            compiled = compile_many(jobs, executor=pool, progress=False)
    assert [c.concrete.definition.name for c in compiled] == [p.name for p in programs]
    check_installed_and_right(programs, compiled)
    assert compiler.compiles == 5


def stages_by_program(events):
    """Each program's (stage, cache_hit) events in the order they arrived."""
    by_program: dict[str, list[tuple[str, bool]]] = {}
    current = None
    for event in events:
        if event.stage == "frontend":
            continue  # the frontends of every job run first, in the caller
        if event.stage == "translation":
            current = event.artifact.entry_point
        by_program.setdefault(current, []).append((event.stage, event.cache_hit))
    return by_program


def test_the_workers_stage_events_reach_the_callers_subscribers_in_order(tmp_path, make_programs):
    compiler = CompilerWrapper(tmp_path / "cc")
    backend = private_backend(tmp_path, compiler)
    spawn = multiprocessing.get_context("spawn")
    runs = []
    for _ in range(2):  # cold, then warm (the second batch's builds are in the disk cache)
        programs = make_programs(3, backend)
        events: list[StageEvent] = []
        with subscribe(events.append), ProcessPoolExecutor(2, mp_context=spawn) as pool:
            compile_many([(p, arguments()) for p in programs], executor=pool, progress=False)
        runs.append(stages_by_program(events))
    cold, warm = runs
    assert len(cold) == 3 and len(warm) == 3
    for stages in cold.values():
        assert stages == [("translation", False), ("compilation", False), ("loading", False)]
    for stages in warm.values():
        assert stages == [("translation", True), ("compilation", True), ("loading", False)]
    assert compiler.compiles == 3


def test_each_program_is_built_once_when_asked_twice(tmp_path, make_programs):
    compiler = CompilerWrapper(tmp_path / "cc")
    programs = make_programs(3, private_backend(tmp_path, compiler))
    jobs = [(p, arguments()) for p in programs] * 2
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=spawn) as pool:
        compile_many(jobs, executor=pool, progress=False)
    assert compiler.compiles == 3  # the disk caches' single flight across workers


def test_failures_are_reported_together_and_the_others_still_compile(tmp_path, make_programs):
    compiler = CompilerWrapper(tmp_path / "cc")
    base = private_backend(tmp_path, compiler)
    backend = attrs.evolve(base, pipeline=attrs.evolve(
        base.pipeline, translation=FailingFor(base.pipeline.translation, "bad")))
    programs = make_programs(4, backend, names=["good_a", "bad_b", "good_c", "bad_d"])
    with ThreadPoolExecutor(2) as pool, pytest.raises(ExceptionGroup) as info:
        compile_many([(p, arguments()) for p in programs], executor=pool, progress=False)
    failures = sorted((e.program, e.stage) for e in info.value.exceptions)
    assert failures == [("bad_b", "translation"), ("bad_d", "translation")]
    assert all(isinstance(e, CompileError) for e in info.value.exceptions)
    assert "refusing bad_b on purpose" in str(info.value.exceptions[0]) + str(
        info.value.exceptions[1])
    inp, out = arguments()
    events: list[StageEvent] = []
    with subscribe(events.append):
        programs[0](inp, out)
        programs[2](inp, out)
    assert events == []


def test_a_killed_worker_is_an_error_naming_its_programs_not_a_hang(tmp_path, make_programs):
    compiler = CompilerWrapper(tmp_path / "cc")
    base = private_backend(tmp_path, compiler)
    backend = attrs.evolve(base, pipeline=attrs.evolve(
        base.pipeline, compilation=KillsWorkerFor(base.pipeline.compilation, "doomed")))
    programs = make_programs(2, backend, names=["doomed", "fine"])
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool, pytest.raises(ExceptionGroup) as info:
        compile_many([(p, arguments()) for p in programs], executor=pool, progress=False)
    doomed = [e for e in info.value.exceptions if e.program == "doomed"]
    assert doomed and "worker process that held it died" in str(doomed[0])


def test_an_unpicklable_pipeline_compiles_in_the_caller_with_one_warning(tmp_path, make_programs):
    compiler = CompilerWrapper(tmp_path / "cc")
    base = private_backend(tmp_path, compiler)

    @attrs.frozen
    class Local:  # a class defined in a function cannot be pickled
        step: object

        def __call__(self, program):
            return self.step(program)

    backend = attrs.evolve(base, pipeline=attrs.evolve(
        base.pipeline, translation=Local(base.pipeline.translation)))
    programs = make_programs(2, backend)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool, warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        compiled = compile_many([(p, arguments()) for p in programs], executor=pool,
                                progress=False)
    messages = [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)]
    assert len(messages) == 1 and "cannot be pickled" in messages[0]
    assert "prog_0, prog_1" in messages[0]
    check_installed_and_right(programs, compiled)


def test_a_worker_unpickles_the_pipeline_once_not_once_per_program(tmp_path, make_programs):
    compiler = CompilerWrapper(tmp_path / "cc")
    base = private_backend(tmp_path, compiler)
    log = tmp_path / "unpicklings.log"
    backend = attrs.evolve(base, pipeline=attrs.evolve(
        base.pipeline, translation=CountsUnpickling(base.pipeline.translation, str(log))))
    programs = make_programs(4, backend)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        compiled = compile_many([(p, arguments()) for p in programs], executor=pool,
                                progress=False)
        more = make_programs(2, backend)  # a second batch: the worker still has it
        compile_many([(p, arguments()) for p in more], executor=pool, progress=False)
    check_installed_and_right(programs, compiled)
    assert len(log.read_text().splitlines()) == 1  # the disk caches open once per worker


def test_a_pipeline_the_workers_cannot_unpickle_is_an_error_naming_each_program(
    tmp_path, make_programs
):
    import os  # noqa: PLC0415

    compiler = CompilerWrapper(tmp_path / "cc")
    base = private_backend(tmp_path, compiler)
    backend = attrs.evolve(base, pipeline=attrs.evolve(
        base.pipeline, translation=UnpicklableInWorkers(base.pipeline.translation, os.getpid())))
    programs = make_programs(2, backend)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool, pytest.raises(ExceptionGroup) as info:
        compile_many([(p, arguments()) for p in programs], executor=pool, progress=False)
    assert sorted(e.program for e in info.value.exceptions) == ["prog_0", "prog_1"]
    for error in info.value.exceptions:
        assert isinstance(error, CompileError)
        assert "could not unpickle the pipeline" in str(error)
        assert "steps_only_the_caller_has" in str(error)


def received_count():
    from pipeline import runners  # noqa: PLC0415

    return len(runners._RECEIVED)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX's")
def test_a_forked_worker_does_not_reuse_the_parents_received_pipelines(tmp_path):
    from pipeline import runners  # noqa: PLC0415

    compiler = CompilerWrapper(tmp_path / "cc")
    backend = private_backend(tmp_path, compiler)
    # As a Dask client with processes=False does: this process receives a pipeline (a
    # worker's: without the caller's frontend and loading).
    shipped = attrs.evolve(backend.pipeline, frontend=identity, loading=identity)
    runners._ShippedPipeline.of(shipped).received()
    assert received_count() >= 1
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        assert pool.submit(received_count).result(timeout=60) == 0


class RecordingPool(ThreadPoolExecutor):
    """A thread pool that notes each submission in ``order``."""

    def __init__(self, order):
        super().__init__(1)
        self.order = order

    def submit(self, fn, /, *args, **kwargs):
        self.order.append("submit")
        return super().submit(fn, *args, **kwargs)


def test_each_program_is_submitted_as_soon_as_its_frontend_is_done(tmp_path, make_programs):
    compiler = CompilerWrapper(tmp_path / "cc")
    programs = make_programs(3, private_backend(tmp_path, compiler))
    order: list[str] = []

    def note(event):
        if event.stage == "frontend":
            order.append("frontend")

    with subscribe(note), RecordingPool(order) as pool:
        compile_many([(p, arguments()) for p in programs], executor=pool, progress=False)
    assert order == ["frontend", "submit"] * 3  # workers start before the last frontend


def test_compile_with_an_executor_returns_a_future(tmp_path, make_programs):
    compiler = CompilerWrapper(tmp_path / "cc")
    (program,) = make_programs(1, private_backend(tmp_path, compiler))
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        future = program.compile(*arguments(), executor=pool)
        assert isinstance(future, Future)
        compiled = future.result(timeout=120)
    check_installed_and_right([program], [compiled])


def test_the_build_jobs_setting_is_read_in_one_place(monkeypatch):
    assert build_executor("") is None and build_executor("serial") is None
    pool = build_executor("process:2")
    assert isinstance(pool, ProcessPoolExecutor) and pool._max_workers == 2
    pool.shutdown()
    monkeypatch.setenv(BUILD_JOBS_VARIABLE, "threads:4")
    with pytest.raises(ValueError, match="STENCILFORGE_BUILD_JOBS='threads:4'"):
        build_executor()
    with pytest.raises(ValueError, match="at least|>= 1"):
        build_executor("process:0")


def test_importing_stencilforge_starts_no_process():
    import subprocess  # noqa: PLC0415

    probe = ("import multiprocessing, pipeline, backends\n"
             "print(len(multiprocessing.active_children()))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "0"


# --------------------------------------------------------------------------- Dask


@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.requires_dask
def test_compile_many_on_a_dask_local_cluster(tmp_path, make_programs, dask_cluster):
    compiler = CompilerWrapper(tmp_path / "cc")
    programs = make_programs(4, private_backend(tmp_path, compiler))
    jobs = [(p, arguments()) for p in programs] * 2  # asked twice: still built once each
    compiled = compile_many(jobs, executor=dask_cluster.get_executor(), progress=False)
    check_installed_and_right(programs, compiled[:4])
    assert compiler.compiles == 4


@pytest.mark.requires_dask
def test_a_dask_worker_killed_mid_build_is_replaced_and_its_task_run_again(
    tmp_path, make_programs, monkeypatch
):
    import os  # noqa: PLC0415
    import signal  # noqa: PLC0415
    import threading  # noqa: PLC0415
    import time  # noqa: PLC0415

    distributed = pytest.importorskip("distributed")
    compiler = CompilerWrapper(tmp_path / "cc")
    # Workers started from here inherit it: every build waits 3 s after it starts.
    monkeypatch.setenv("SF_TEST_CC_BEFORE", "3")
    (program,) = make_programs(1, private_backend(tmp_path, compiler))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        outcome: dict[str, object] = {}

        def compile_it():
            try:
                outcome["compiled"] = compile_many([(program, arguments())],
                                                   executor=client.get_executor(),
                                                   progress=False)
            except BaseException as error:  # reported below
                outcome["error"] = error

        thread = threading.Thread(target=compile_it)
        thread.start()
        deadline = time.monotonic() + 60
        while not compiler.marker("compile-started").exists():
            assert time.monotonic() < deadline, "the build never started"
            time.sleep(0.05)
        busy = [address for address, tasks in client.processing().items() if tasks]
        (address,) = busy
        pid = client.run(os.getpid, workers=[address])[address]
        os.kill(pid, signal.SIGKILL)
        thread.join(timeout=120)
        assert not thread.is_alive(), "compile_many hung after a worker died"
    assert "error" not in outcome, outcome.get("error")
    assert compiler.compiles == 2  # the killed build, then the re-run
    check_installed_and_right([program], outcome["compiled"])
