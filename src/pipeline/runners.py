"""Compile many programs at once, over any ``concurrent.futures.Executor``.

The data's path for each job (program, example arguments)::

    caller   program.compile_target(args, kwargs): the dispatcher, definition and executable
             arguments the call with these arguments would run (the frontend says: its
             variants, tuples flattened, ...), then
             Dispatcher.concrete -> pipeline.program (the frontend), submitted at once
               | the program (the DSL's leaves its definition here), pickled; the steps,
               | pickled once per batch and unpickled once per worker process
    worker   pipeline.translate -> pipeline.compile   (idempotent: the disk caches' single
               | ProgramSource, artifact and the       flight builds each program once)
               | stage events, pickled back
    caller   the worker's events delivered to this process's subscribers, then loading,
             installed in the program's dispatch table (the first call runs at once)

No executor compiles in the caller, one program after another. A thread pool, the standard
library's process pool (``spawn`` works: workers import only stencilforge) and Dask's
``client.get_executor()`` are all executors. The default comes from
``STENCILFORGE_BUILD_JOBS`` (``process:N``, or a Dask scheduler address), read once per call,
here; nothing is started at import.
"""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
import os
import pickle
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import attrs
import cachetools

from pipeline.config import BUILD_JOBS_VARIABLE, build_jobs
from pipeline.errors import CompileError
from pipeline.events import StageEvent, deliver, recorded
from pipeline.stages import ConcreteDefinition, NamedDefinition
from pipeline.steps import identity
from pipeline.workflow import CompilePipeline

if TYPE_CHECKING:
    from pipeline.dispatch import Dispatcher
    from pipeline.staged import Compiled

__all__ = [
    "BUILD_JOBS_VARIABLE",
    "CompileTarget",
    "Dispatched",
    "build_executor",
    "compile_in_background",
    "compile_many",
]

_log = logging.getLogger(__name__)

Pipeline = CompilePipeline[Any, Any, Any, Any, Any]
#: A job of ``compile_many``: a program and example arguments, positional (and by keyword).
Job = tuple["Dispatched", Sequence[Any]] | tuple["Dispatched", Sequence[Any], Mapping[str, Any]]


D = TypeVar("D", bound=NamedDefinition)
P = TypeVar("P")


@attrs.frozen
class CompileTarget(Generic[D, P]):
    """What a call of a program with some arguments runs, so what compiling for them builds.

    Attributes:
        dispatcher: the dispatch table the call looks in (a variant's own, for a frontend
            whose calls run variants of a program).
        definition: what the frontend reads for this call (the program's, or a variant's).
        args: the arguments as the executables take them (in parameter order: the
            frontend's conversions done, such as tuples flattened to their leaves).
    """

    dispatcher: Dispatcher[D, P]
    definition: D
    args: tuple[Any, ...]


class Dispatched(Protocol):
    """What ``compile_many`` reads of a program: any toolchain's program object whose calls
    run through a ``Dispatcher`` (the DSL's programs, field and scan operators do)."""

    @property
    def name(self) -> str: ...

    def compile_target(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> CompileTarget[Any, Any]:
        """What the call ``self(*args, **kwargs)`` would run: compiling that target installs
        what such a call finds, so that it runs at once.

        Raises:
            ArgumentError: arguments that the call would refuse before compiling anything.
            SourceError: the definition is not valid (when telling needs the frontend).
        """
        ...


@attrs.frozen
class _Built:
    """What a worker sends back: the translation's and compilation's outputs and events."""

    source: object
    artifact: object
    events: tuple[StageEvent, ...]


@attrs.frozen
class _Job:
    """One program to compile: everything the caller knows before the workers start."""

    name: str
    dispatcher: Dispatcher[Any, Any]
    concrete: ConcreteDefinition[Any]
    program: object
    # The pipeline a worker runs: the frontend and loading stay in the caller.
    pipeline: Pipeline


#: The pipelines this process received as a compile worker, by the digest of their pickle: a
#: per-process memo (bounded, least recently used first out), so that a worker unpickles a
#: pipeline (and opens its disk caches) once, not once per program. The caller never reads it.
_RECEIVED: cachetools.LRUCache[str, Pipeline] = cachetools.LRUCache(maxsize=8)
_RECEIVED_LOCK = threading.Lock()


def _forget_received() -> None:
    """A forked child starts with none: its parent's locks and open stores are not its own."""
    global _RECEIVED, _RECEIVED_LOCK  # noqa: PLW0603  (replaced, not shared, after a fork)
    _RECEIVED = cachetools.LRUCache(maxsize=8)
    _RECEIVED_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_received)


@attrs.frozen
class _ShippedPipeline:
    """A worker's pipeline, pickled once by the caller for every program of a batch.

    A worker process unpickles it the first time it receives it and reuses it for every
    later program (``received``): the same steps and caches as a fresh unpickling, opened once.
    """

    digest: str
    data: bytes = attrs.field(repr=False)

    @classmethod
    def of(cls, pipeline: Pipeline) -> _ShippedPipeline:
        """``pipeline`` pickled (raises what ``pickle.dumps`` raises)."""
        data = pickle.dumps(pipeline)
        return cls(hashlib.sha256(data).hexdigest(), data)

    def received(self) -> Pipeline:
        """The pipeline, unpickled in this process at most once while it is remembered."""
        with _RECEIVED_LOCK:
            found = _RECEIVED.get(self.digest)
        if found is None:
            found = pickle.loads(self.data)
            with _RECEIVED_LOCK:
                _RECEIVED[self.digest] = found
        return found


def _translate_and_compile(
    pipeline: Pipeline | _ShippedPipeline, program: object, name: str
) -> _Built:
    """The worker's task: translation then compilation, their stage events recorded for the
    caller. Failures name the program and the stage."""
    if isinstance(pipeline, _ShippedPipeline):
        try:
            pipeline = pipeline.received()
        except Exception as error:  # unpickling runs the steps' imports: any error is possible
            raise CompileError(
                name,
                "translation",
                f"the worker could not unpickle the pipeline ({type(error).__name__}: "
                f"{error}); every module that defines a step must be importable in the workers",
            ) from error
    stage = "translation"
    try:
        with recorded() as events:
            source = pipeline.translate(program)
            stage = "compilation"
            artifact = pipeline.compile(source)
        return _Built(source, artifact, tuple(events))
    except Exception as error:  # any failure of a step is reported with its program and stage
        raise CompileError(name, stage, f"{type(error).__name__}: {error}") from error


def _frontend_runs_in_the_caller(inp: object) -> object:
    """The frontend of a worker's pipeline: never run (the caller sends the program)."""
    raise RuntimeError(f"the frontend runs in the caller, not in a worker (given {inp!r})")


def _prepare(program: Dispatched, args: Sequence[Any], kwargs: Mapping[str, Any]) -> _Job:
    target = program.compile_target(tuple(args), kwargs)
    dispatcher = target.dispatcher
    dispatcher.refuse_unless_compiled(program.name)
    concrete = dispatcher.concrete(target.definition, target.args)
    pipeline = attrs.evolve(
        dispatcher.backend.pipeline, frontend=_frontend_runs_in_the_caller, loading=identity
    )
    return _Job(program.name, dispatcher, concrete, dispatcher.program(concrete), pipeline)


def _install(job: _Job, built: _Built) -> Compiled[Any, Any]:
    from pipeline.staged import Compiled  # noqa: PLC0415  (staged imports dispatch)

    deliver(built.events)
    try:
        found = job.dispatcher.compiled(
            job.concrete, lowered=(job.program, built.source), artifact=built.artifact
        )
    except Exception as error:  # a loading failure is this program's, not the batch's
        raise CompileError(job.name, "loading", f"{type(error).__name__}: {error}") from error
    return Compiled(job.dispatcher, job.concrete, found)


def _not_picklable(value: object) -> str | None:
    """Why ``value`` cannot be pickled, or None when it can."""
    try:
        pickle.dumps(value)
    except Exception as error:  # pickle raises many kinds; each means "not shippable"
        return f"{type(error).__name__}: {error}"
    return None


def _shipped(pipeline: Pipeline) -> _ShippedPipeline | str:
    """``pipeline`` pickled for the workers, or why it cannot be."""
    try:
        return _ShippedPipeline.of(pipeline)
    except Exception as error:  # pickle raises many kinds; each means "not shippable"
        return f"{type(error).__name__}: {error}"


class _Batch:
    """The jobs of one ``compile_many`` call on ``pool``, each submitted as soon as its
    frontend is done, so the workers start on the first program while the caller runs the
    frontends of the next.

    Each distinct pipeline is pickled once for the whole batch (not once per program); a job
    whose pipeline or program cannot be pickled compiles in the caller.
    """

    def __init__(self, pool: Executor | None) -> None:
        self._pool = pool
        self._threads = isinstance(pool, ThreadPoolExecutor)
        # By the id of the backend's pipeline, kept alive beside what was made of it.
        self._shipped: dict[int, tuple[Pipeline, _ShippedPipeline | str]] = {}
        self._futures: dict[Future[_Built], tuple[int, _Job]] = {}
        self._here: list[tuple[int, _Job, str]] = []

    def add(self, index: int, job: _Job) -> None:
        """Submit ``job`` (in the caller: keep it for ``completed``)."""
        if self._pool is None:
            self._here.append((index, job, ""))
            return
        task: Pipeline | _ShippedPipeline | str = job.pipeline
        if not self._threads:
            task = self._shipping(job)
            if not isinstance(task, str):
                task = _not_picklable(job.program) or task
        if isinstance(task, str):
            self._here.append((index, job, task))
            return
        future = self._pool.submit(_translate_and_compile, task, job.program, job.name)
        self._futures[future] = (index, job)

    def _shipping(self, job: _Job) -> _ShippedPipeline | str:
        backend_pipeline = job.dispatcher.backend.pipeline
        found = self._shipped.get(id(backend_pipeline))
        if found is None:
            found = (backend_pipeline, _shipped(job.pipeline))
            self._shipped[id(backend_pipeline)] = found
        return found[1]

    def completed(self) -> Iterator[tuple[int, _Job, Future[_Built]]]:
        """Every job's future, as it completes: first those compiled in the caller (with one
        warning for those an executor could not take), then the workers', as they finish."""
        refused = [(job.name, reason) for _, job, reason in self._here if reason]
        if refused:
            _warn_caller_compiles([name for name, _ in refused], refused[0][1])
        for index, job, _ in self._here:
            yield index, job, _completed(job)
        from concurrent.futures import as_completed  # noqa: PLC0415

        for future in as_completed(self._futures):
            index, job = self._futures[future]
            yield index, job, future


def _unpacked(job: Job) -> tuple[Dispatched, Sequence[Any], Mapping[str, Any]]:
    """A job as ``(program, args, kwargs)``.

    Raises:
        TypeError: a job that is not ``(program, args)`` or ``(program, args, kwargs)`` (a
            tuple or a list).
    """
    if isinstance(job, tuple | list) and len(job) == 3:
        program, args, kwargs = job
        return program, args, kwargs
    if isinstance(job, tuple | list) and len(job) == 2:
        program, args = job
        return program, args, {}
    raise TypeError(
        f"compile_many takes jobs (program, args) or (program, args, kwargs), got {job!r}"
    )


def compile_many(
    jobs: Iterable[Job],
    *,
    executor: Executor | None = None,
    progress: bool | None = None,
) -> list[Compiled[Any, Any]]:
    """Compile every ``(program, example_args)`` (or ``(program, example_args, kwargs)``) and
    install each in its program.

    The example arguments are those of a call of the program (``program(*args, **kwargs)``):
    what is compiled and installed is what that call runs (``Dispatched.compile_target``),
    so a later call with such arguments runs at once. Each program's frontend runs in the
    caller and the program is submitted at once, so the
    workers translate and compile while the caller runs the next frontends; results are
    loaded in the caller as they come back.

    Args:
        jobs: programs with example arguments as their calls take them (the DSL's: tuples
            and named collections, located arrays, a value for each static parameter;
            a field or scan operator's ``out=`` and ``domain=`` among ``kwargs``).
        executor: where translation and compilation run; ``None``: the executor that
            ``STENCILFORGE_BUILD_JOBS`` names (started and shut down for this call), else
            serially in the caller.
        progress: show a progress bar (tqdm); ``None``: only on a terminal.

    Returns:
        In the order of ``jobs``, the compiled program of each call (for a program with
        static parameters: of the variant of the values given).

    Raises:
        ExceptionGroup: of ``CompileError`` (and the frontends' ``SourceError``\\ s), one per
            program that failed, naming its program and stage; the others are compiled and
            installed all the same.
    """
    jobs = list(jobs)
    errors: list[Exception] = []
    results: list[Compiled[Any, Any] | None] = [None] * len(jobs)
    with _executor(executor) as pool, _progress(len(jobs), progress) as bar:
        batch = _Batch(pool)
        for index, given in enumerate(jobs):
            try:
                batch.add(index, _prepare(*_unpacked(given)))
            except Exception as error:  # a frontend or argument error of one program
                errors.append(error)
                bar.update(1)
        for index, job, future in batch.completed():
            try:
                results[index] = _install(job, _result(job, future))
            except Exception as error:  # collected: the batch goes on
                errors.append(error)
            bar.update(1)
    if errors:
        raise ExceptionGroup(f"{len(errors)} of {len(jobs)} program(s) failed to compile", errors)
    return [result for result in results if result is not None]


def compile_in_background(
    program: Dispatched,
    args: Sequence[Any],
    executor: Executor,
    kwargs: Mapping[str, Any] | None = None,
) -> Future[Compiled[Any, Any]]:
    """``program.compile(*args, **kwargs)`` on ``executor``: a ``Future`` of the ``Compiled``
    of what the call ``program(*args, **kwargs)`` runs, loaded and installed in the caller's
    process when the worker is done."""
    done: Future[Compiled[Any, Any]] = Future()
    try:
        job = _prepare(program, args, kwargs or {})
    except Exception as error:  # the frontend's error, delivered as the future's
        done.set_exception(error)
        return done

    def finish(worker: Future[_Built]) -> None:
        try:
            done.set_result(_install(job, _result(job, worker)))
        except Exception as error:  # delivered to whoever waits on the future
            done.set_exception(error)

    task: Pipeline | _ShippedPipeline | str = job.pipeline
    if not isinstance(executor, ThreadPoolExecutor):
        task = _shipped(job.pipeline)
        if not isinstance(task, str):
            task = _not_picklable(job.program) or task
    if isinstance(task, str):
        _warn_caller_compiles([job.name], task)
        finish(_completed(job))
    else:
        worker = executor.submit(_translate_and_compile, task, job.program, job.name)
        worker.add_done_callback(finish)
    return done


def _completed(job: _Job) -> Future[_Built]:
    """The worker's task run here, as a completed future."""
    future: Future[_Built] = Future()
    try:
        future.set_result(_translate_and_compile(job.pipeline, job.program, job.name))
    except CompileError as error:
        future.set_exception(error)
    return future


def _result(job: _Job, future: Future[_Built]) -> _Built:
    try:
        return future.result()
    except BrokenProcessPool as error:
        raise CompileError(
            job.name,
            "translation or compilation",
            f"the worker process that held it died ({error}); nothing was published for it",
        ) from error


def _warn_caller_compiles(names: list[str], reason: str) -> None:
    warnings.warn(
        f"compiling {', '.join(names)} in this process, not in the executor: the pipeline or "
        f"the program cannot be pickled ({reason})",
        RuntimeWarning,
        stacklevel=4,
    )


def build_executor(setting: str | None = None) -> Executor | None:
    """The executor ``STENCILFORGE_BUILD_JOBS`` (or ``setting``) names, or ``None`` (serial).

    ``process:N`` is a process pool of ``N`` workers started with ``spawn``; anything else
    is the address of a Dask scheduler (``tcp://host:8786``), whose ``get_executor()`` is used.

    Raises:
        ValueError: a setting of neither form, naming the variable.
        ImportError: a Dask address without the ``dask`` extra installed.
    """
    value = build_jobs() if setting is None else setting.strip()
    if not value or value == "serial":
        return None
    kind, colon, count = value.partition(":")
    if kind == "process" and colon:
        try:
            workers = int(count)
        except ValueError:
            workers = 0
        if workers < 1:
            raise ValueError(
                f"{BUILD_JOBS_VARIABLE}={value!r}: process:N needs a number of workers >= 1"
            )
        return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    if "://" in value:
        try:
            import distributed  # noqa: PLC0415  (optional: the dask extra)
        except ImportError as error:
            raise ImportError(
                f"{BUILD_JOBS_VARIABLE}={value!r} names a Dask scheduler, but `distributed` is "
                "not installed; pip install 'stencilforge[dask]'"
            ) from error
        client = distributed.Client(value)  # type: ignore[no-untyped-call]
        return client.get_executor()  # type: ignore[no-any-return, no-untyped-call]
    raise ValueError(
        f"{BUILD_JOBS_VARIABLE}={value!r}: expected 'serial', 'process:N' or a Dask scheduler "
        "address such as tcp://127.0.0.1:8786"
    )


@contextmanager
def _executor(given: Executor | None) -> Iterator[Executor | None]:
    if given is not None:
        yield given
        return
    configured = build_executor()
    if configured is None:
        yield None
        return
    try:
        yield configured
    finally:
        configured.shutdown(wait=True)


class _NoBar:
    def update(self, n: int) -> None:
        pass


@contextmanager
def _progress(total: int, enabled: bool | None) -> Iterator[Any]:
    if enabled is False or total == 0:
        yield _NoBar()
        return
    from tqdm import tqdm  # noqa: PLC0415  (only when a bar may show)

    # disable=None: tqdm shows the bar only on a terminal.
    disable = None if enabled is None else False
    with tqdm(total=total, desc="compiling", unit="program", disable=disable) as bar:
        yield bar
