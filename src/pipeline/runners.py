"""Compile many programs at once, over any ``concurrent.futures.Executor``.

The data's path for each job (program, example arguments)::

    caller   Dispatcher.concrete -> pipeline.program (the frontend)
               | the program (the DSL's leaves its definition here) + the steps, pickled
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

import logging
import multiprocessing
import pickle
import warnings
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from pipeline.config import BUILD_JOBS_VARIABLE, build_jobs
from pipeline.errors import CompileError
from pipeline.events import StageEvent, deliver, recorded
from pipeline.stages import ConcreteDefinition
from pipeline.steps import identity
from pipeline.workflow import CompilePipeline

if TYPE_CHECKING:
    from pipeline.dispatch import Dispatcher
    from pipeline.staged import Compiled

__all__ = [
    "BUILD_JOBS_VARIABLE",
    "Dispatched",
    "build_executor",
    "compile_in_background",
    "compile_many",
]

_log = logging.getLogger(__name__)



class Dispatched(Protocol):
    """What ``compile_many`` reads of a program: any toolchain's program object that owns a
    ``Dispatcher`` (the DSL's programs and field operators do)."""

    @property
    def name(self) -> str: ...

    @property
    def definition(self) -> Any:
        """What the program's frontend reads."""
        ...

    @property
    def dispatcher(self) -> Dispatcher[Any, Any]: ...


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
    pipeline: CompilePipeline[Any, Any, Any, Any, Any]


def _translate_and_compile(
    pipeline: CompilePipeline[Any, Any, Any, Any, Any], program: object, name: str
) -> _Built:
    """The worker's task: translation then compilation, their stage events recorded for the
    caller. Failures name the stage."""
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


def _prepare(program: Dispatched, args: Sequence[Any]) -> _Job:
    dispatcher = program.dispatcher
    concrete = dispatcher.concrete(program.definition, tuple(args))
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


def _unpicklable(job: _Job) -> str | None:
    try:
        pickle.dumps((job.pipeline, job.program))
    except Exception as error:  # pickle raises many kinds; each means "not shippable"
        return f"{type(error).__name__}: {error}"
    return None


def compile_many(
    jobs: Iterable[tuple[Dispatched, Sequence[Any]]],
    *,
    executor: Executor | None = None,
    progress: bool | None = None,
) -> list[Compiled[Any, Any]]:
    """Compile every ``(program, example_args)`` and install each in its program.

    Args:
        jobs: programs with example arguments (the signature to compile for).
        executor: where translation and compilation run; ``None``: the executor that
            ``STENCILFORGE_BUILD_JOBS`` names (started and shut down for this call), else
            serially in the caller.
        progress: show a progress bar (tqdm); ``None``: only on a terminal.

    Returns:
        In the order of ``jobs``, what ``program.compile(*args)`` returns.

    Raises:
        ExceptionGroup: of ``CompileError`` (and the frontends' ``SourceError``\\ s), one per
            program that failed, naming its program and stage; the others are compiled and
            installed all the same.
    """
    jobs = list(jobs)
    errors: list[Exception] = []
    prepared: list[_Job | None] = []
    for program, args in jobs:
        try:
            prepared.append(_prepare(program, args))
        except Exception as error:  # a frontend or argument error of one program
            errors.append(error)
            prepared.append(None)
    results: list[Compiled[Any, Any] | None] = [None] * len(jobs)
    with _executor(executor) as pool, _progress(len(jobs), progress) as bar:
        futures = _submit(pool, prepared)
        for index, future in futures:
            job = prepared[index]
            assert job is not None
            try:
                results[index] = _install(job, _result(job, future))
            except Exception as error:  # collected: the batch goes on
                errors.append(error)
            bar.update(1)
    if errors:
        raise ExceptionGroup(f"{len(errors)} of {len(jobs)} program(s) failed to compile", errors)
    return [result for result in results if result is not None]


def compile_in_background(
    program: Dispatched, args: Sequence[Any], executor: Executor
) -> Future[Compiled[Any, Any]]:
    """``program.compile(*args)`` on ``executor``: a ``Future`` of the ``Compiled``, loaded and
    installed in the caller's process when the worker is done."""
    done: Future[Compiled[Any, Any]] = Future()
    try:
        job = _prepare(program, args)
    except Exception as error:  # the frontend's error, delivered as the future's
        done.set_exception(error)
        return done

    def finish(worker: Future[_Built]) -> None:
        try:
            done.set_result(_install(job, _result(job, worker)))
        except Exception as error:  # delivered to whoever waits on the future
            done.set_exception(error)

    reason = _unpicklable(job) if not isinstance(executor, ThreadPoolExecutor) else None
    if reason is not None:
        _warn_caller_compiles([job.name], reason)
        finish(_completed(job))
    else:
        worker = executor.submit(_translate_and_compile, job.pipeline, job.program, job.name)
        worker.add_done_callback(finish)
    return done


def _submit(
    pool: Executor | None, prepared: list[_Job | None]
) -> Iterator[tuple[int, Future[_Built]]]:
    """Futures of every prepared job, yielded as they complete (in the caller: in order)."""
    from concurrent.futures import as_completed  # noqa: PLC0415

    indexed = [(i, job) for i, job in enumerate(prepared) if job is not None]
    if pool is None:
        for index, job in indexed:
            yield index, _completed(job)
        return
    shippable = isinstance(pool, ThreadPoolExecutor)
    local = []
    futures: dict[Future[_Built], int] = {}
    for index, job in indexed:
        reason = None if shippable else _unpicklable(job)
        if reason is not None:
            local.append((index, job, reason))
            continue
        futures[pool.submit(_translate_and_compile, job.pipeline, job.program, job.name)] = index
    if local:
        _warn_caller_compiles([job.name for _, job, _ in local], local[0][2])
    for index, job, _ in local:
        yield index, _completed(job)
    for future in as_completed(futures):
        yield futures[future], future


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
