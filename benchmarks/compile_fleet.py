"""Compile many distinct programs at once: ``python -m benchmarks.compile_fleet``.

Generates ``--programs`` distinct c_cpu programs (varied stencils and constants) and compiles
them on three runners: serially in this process, on a process pool of ``--workers``, and on a
Dask ``LocalCluster`` of ``--workers`` (when ``distributed`` is installed). The runners take
turns, ``--repeats`` times (the order rotates), and the medians are printed: on a machine
that other work shares, the turns spread its load over every runner alike.

Each turn starts from a cold cache of its own and has two timed parts:

- the machine set-up: one other program, whose build also makes what is built once per
  machine and cache (the launcher, the support object, the tuning measurement's choice);
- the programs: ``--programs`` new programs on that set-up machine, the runner's own scaling.

The workers are started and have imported stencilforge before anything is timed (a standing
pool's steady state); Dask workers' first import is timed apart and printed.

Builds are counted by a ``$CC`` wrapper that logs what each build makes, and each is named:
a program, the launcher, the support object or the tuning measurement.

Then a simulated fleet: ``--fleet`` Dask workers share one cold cache and are given every
program twice; each program must build once, and the other builds are listed.

Last, the bound that the serial run's profile allows (the caller's part of each program
against the workers' part), and how much of a core the serial turn had (the load).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import multiprocessing
import os
import re
import shutil
import stat
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import attrs
import numpy as np

import allocators
from backends import CompiledBackend
from backends.c import CCompilation, c_cpu_pipeline, compile_time_args
from pipeline import StageEvent, compile_many, subscribe

_TEMPLATE = '''
from pipeline.dsl import Dimension, Field, field_operator, float64, program, where

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")
IJK = Field[[I, J, K], float64]


@field_operator
def stencil_{index}(f: IJK, g: IJK) -> IJK:
    t = {a} * f(I + {di}) - {b} * g(J - {dj}) + f(K + {dk})
    return where(t > {c}, t * g, {a} - t)


@program
def program_{index}(f: IJK, g: IJK, out: IJK):
    stencil_{index}(f, g, out=out[:-3, 3:, :-3])
'''

# Logs the output of every build: a link (not the units compiled alone with -c), or the
# support object (a build of its own, made with -c).
_COUNTING_CC = """#!/bin/sh
out=""; alone=""; previous=""
for argument in "$@"; do
  [ "$previous" = "-o" ] && out="$argument"
  [ "$argument" = "-c" ] && alone=1
  previous="$argument"
done
case "$out" in
  "") ;;
  *sf_support*) echo "$out" >> "{log}" ;;
  *) [ -z "$alone" ] && echo "$out" >> "{log}" ;;
esac
exec {compiler} "$@"
"""

#: What each kind of build is, for the report.
BUILD_KINDS = {
    "program": "a program's module",
    "launcher": "the launcher extension, one per machine, interpreter and compiler",
    "support object": "the C helpers' object, one per cache, compiler and flags",
    "tuning measurement": "the variants' measuring executable, one per machine and cache "
    "(its choice record serves every later program)",
}

#: The timing loads no program other than these; each repeat's caches start cold.
_SHAPE = (12, 12, 8)


def generate_programs(directory: Path, count: int, first: int = 0) -> list[Any]:
    """``count`` distinct programs (numbered from ``first``), each in a module of its own
    under ``directory``."""
    programs = []
    for index in range(first, first + count):
        text = _TEMPLATE.format(
            index=index, a=1.0 + index * 0.01, b=0.5 + index % 7, c=index % 5 - 2,
            di=1 + index % 3, dj=1 + (index // 3) % 3, dk=1 + (index // 9) % 3,
        )
        path = directory / f"fleet_{index}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        programs.append(getattr(module, f"program_{index}"))
    return programs


def counting_compiler(directory: Path) -> tuple[Path, Path]:
    """A ``$CC`` that appends the output path of every build to a log (see ``build_kind``),
    and that log."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "builds.log"
    log.touch()
    real = shutil.which(os.environ.get("CC") or "cc") or "cc"
    wrapper = directory / "cc"
    wrapper.write_text(_COUNTING_CC.format(log=log, compiler=real))
    wrapper.chmod(stat.S_IRWXU)
    return wrapper, log


def build_kind(output: str) -> str:
    """Which of ``BUILD_KINDS`` the build of ``output`` (a path the counting compiler
    logged) is; ``"other: <name>"`` for one of none."""
    name = Path(output).name
    if name.startswith("sf_launcher"):
        return "launcher"
    if name.startswith("sf_support"):
        return "support object"
    if name == "measure":
        return "tuning measurement"
    if name.startswith("sf_") and name.endswith(".so"):
        return "program"
    return f"other: {name}"


def program_of(output: str) -> str:
    """The program a program build was for (its module name without the content hash)."""
    return re.sub(r"_[0-9a-f]{16}$", "", Path(output).name.removesuffix(".so"))


@attrs.frozen
class Builds:
    """The builds one timed part made, by kind, and the programs built more than once."""

    kinds: Counter[str]
    repeated: tuple[str, ...]

    @classmethod
    def of(cls, lines: list[str]) -> Builds:
        kinds = Counter(build_kind(line) for line in lines)
        per_program = Counter(program_of(line) for line in lines if build_kind(line) == "program")
        return cls(kinds, tuple(sorted(p for p, n in per_program.items() if n > 1)))

    def each_program_once(self, programs: int) -> bool:
        """Whether ``programs`` program builds were made, none of them twice."""
        return self.kinds["program"] == programs and not self.repeated

    def others_once_per_machine(self) -> bool:
        """Whether every other build is a once-per-machine kind, made once."""
        return all(
            n == 1 and kind in BUILD_KINDS for kind, n in self.kinds.items() if kind != "program"
        )

    def describe(self) -> str:
        parts = [f"{n} {kind}" + ("s" if n > 1 else "") for kind, n in sorted(self.kinds.items())]
        again = f"; built more than once: {', '.join(self.repeated)}" if self.repeated else ""
        return (", ".join(parts) or "none") + again


def backend_for(cache: Path, compiler: Path) -> CompiledBackend:
    compilation = CCompilation(str(cache / "c"), compiler=str(compiler))
    # Predicted variants, never measured: what a cold build compiles (ADR 0009), without the
    # measurements a process would queue for its exit, after its turn's directories are gone.
    pipeline = c_cpu_pipeline(cache, compilation=compilation).evolve_step(
        "translation.tuning", schedule="off"
    )
    return CompiledBackend(
        "c_cpu_fleet", allocators.NumPyBufferAllocator(), pipeline,
        compile_time_args=compile_time_args,
    )


def _example() -> tuple[Any, ...]:
    return (np.zeros(_SHAPE), np.zeros(_SHAPE), np.zeros(_SHAPE))


def warm_worker() -> int:
    """A worker's first task: import what compile tasks use; its process id."""
    importlib.import_module("backends.c")
    importlib.import_module("pipeline.runners")
    time.sleep(0.05)  # held a moment, so that the pool starts every worker
    return os.getpid()


def started_pool(workers: int) -> tuple[ProcessPoolExecutor, tuple[int, ...]]:
    """A spawn process pool whose ``workers`` processes are running and warm (a spawn pool
    starts a worker when a task finds none idle, so the first tasks are submitted at once),
    and their process ids."""
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    seen: set[int] = set()
    for _ in range(10):
        seen |= {f.result() for f in [pool.submit(warm_worker) for _ in range(workers)]}
        if len(seen) >= workers:
            break
    return pool, tuple(sorted(seen))


def processor_seconds(workers: tuple[int, ...]) -> float:
    """The processor time used so far by this process, the children it waited for, and the
    worker processes ``workers`` with the children they waited for (their compilers);
    Linux's ``/proc`` (elsewhere, this process's alone)."""
    own = os.times()
    total = own.user + own.system + own.children_user + own.children_system
    tick = os.sysconf("SC_CLK_TCK")
    for pid in workers:
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        total += sum(int(field) for field in fields[11:15]) / tick  # utime stime cutime cstime
    return total


@attrs.frozen
class Turn:
    """One runner's turn: its machine set-up and its programs, timed, with their builds."""

    setup_seconds: float
    seconds: float
    setup_builds: Builds
    builds: Builds
    #: The programs' part's processor time, the caller's and the workers' (compilers included).
    processor_seconds: float


@attrs.frozen
class Runner:
    """A row of the report: a name, the workers it has, and its executor (None: serial)."""

    name: str
    workers: int
    executor: Callable[[], Executor | None]
    pids: tuple[int, ...] = ()


def take_turn(runner: Runner, root: Path, setup: Any, programs: list[Any],
              events: list[StageEvent] | None = None) -> Turn:
    """Compile ``setup`` then ``programs`` on ``runner`` with a cold cache under ``root``.
    ``events``: where the programs' stage events go (when given)."""
    compiler, log = counting_compiler(root / "cc")
    backend = backend_for(root / "cache", compiler)
    example = _example()
    start = time.perf_counter()
    compile_many([(setup.with_backend(backend), example)], executor=runner.executor(),
                 progress=False)
    setup_seconds = time.perf_counter() - start
    setup_lines = log.read_text().splitlines()
    jobs = [(p.with_backend(backend), example) for p in programs]
    with contextlib.ExitStack() as stack:
        if events is not None:
            stack.enter_context(subscribe(events.append))
        processor = processor_seconds(runner.pids)
        start = time.perf_counter()
        compile_many(jobs, executor=runner.executor(), progress=False)
        seconds = time.perf_counter() - start
        processor = processor_seconds(runner.pids) - processor
    lines = log.read_text().splitlines()[len(setup_lines):]
    return Turn(setup_seconds, seconds, Builds.of(setup_lines), Builds.of(lines), processor)


@attrs.frozen
class Profile:
    """Where the serial run's time went, per program: the caller's part (frontend, loading,
    the runner's own) and the workers' part (translation, compilation)."""

    programs: int
    seconds: float
    processor_seconds: float
    stages: dict[str, float]

    @property
    def workers_part(self) -> float:
        return self.stages.get("translation", 0.0) + self.stages.get("compilation", 0.0)

    @property
    def callers_part(self) -> float:
        return self.seconds - self.workers_part

    def describe(self, workers: int, setup_seconds: float) -> list[str]:
        """The profile and the speed-ups it allows ``workers`` workers (that many cores or
        more), on new programs and with the machine set-up (``setup_seconds``, serial by
        nature: one build measures, the others wait for its choice) in the timed region."""
        per = 1e3 / self.programs
        stages = ", ".join(f"{name} {s * per:.1f}" for name, s in self.stages.items())
        runner = self.seconds - sum(self.stages.values())
        amdahl = self.seconds / (self.callers_part + self.workers_part / workers)
        cold = (setup_seconds + self.seconds) / (
            setup_seconds + self.callers_part + self.workers_part / workers
        )
        return [
            f"serial profile, ms per program: {stages}, the runner's own {runner * per:.1f}; "
            f"the caller's part {self.callers_part * per:.1f}, the workers' part "
            f"{self.workers_part * per:.1f}; the serial turn had "
            f"{self.processor_seconds / self.seconds:.2f} of a core (quiet: about 1)",
            f"bound for {workers} workers (Amdahl: the caller's part serial, the workers' "
            f"divided among them, no transfer cost): {amdahl:.2f}x on new programs, "
            f"{cold:.2f}x with the machine set-up ({setup_seconds:.2f} s) timed too",
        ]


def profiled_serial_turn(runner: Runner, root: Path, setup: Any,
                         programs: list[Any]) -> tuple[Turn, Profile]:
    """``take_turn`` of the serial runner, with the programs' stage seconds and the processor
    time (this process and the compilers it ran) of the whole turn."""
    events: list[StageEvent] = []
    turn = take_turn(runner, root, setup, programs, events)
    stages: dict[str, float] = {}
    for event in events:
        stages[event.stage] = stages.get(event.stage, 0.0) + event.seconds
    return turn, Profile(len(programs), turn.seconds, turn.processor_seconds, stages)


@contextlib.contextmanager
def dask_client(workers: int) -> Iterator[tuple[Any, float, tuple[int, ...]]]:
    """A client of a fresh loopback LocalCluster of ``workers`` processes, the seconds its
    workers took to import stencilforge (done before anything is timed), and their process
    ids."""
    import distributed  # noqa: PLC0415  (optional: the dask extra)

    with distributed.LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None,
    ) as cluster, distributed.Client(cluster) as client:  # type: ignore[no-untyped-call]
        start = time.perf_counter()
        pids = client.run(warm_worker)
        yield client, time.perf_counter() - start, tuple(sorted(pids.values()))


def fleet_line(client: Any, root: Path, programs: list[Any], fleet: int) -> str:
    """Every program twice on ``client`` with one cold cache: the builds, each named."""
    compiler, log = counting_compiler(root / "cc")
    backend = backend_for(root / "cache", compiler)
    jobs = [(p.with_backend(backend), _example()) for p in programs] * 2
    start = time.perf_counter()
    compile_many(jobs, executor=client.get_executor(), progress=False)
    seconds = time.perf_counter() - start
    lines = log.read_text().splitlines()
    builds = Builds.of(lines)
    once = builds.each_program_once(len(programs))
    per_machine = builds.others_once_per_machine()
    return (
        f"fleet: {fleet} Dask workers, one cold cache, every program asked twice: "
        f"{len(lines)} builds for {len(programs)} programs in {seconds:.1f} s "
        f"({builds.kinds['program'] / len(programs):.2f} per program): {builds.describe()}; "
        + ("each program once" if once else "NOT each program once")
        + ("; the others one each, of the once-per-machine kinds (this fleet is one machine)"
           if per_machine else "; NOT only once-per-machine builds besides")
    )


def _median_ratio(numerators: list[float], denominators: list[float]) -> float:
    """The median of the turn-by-turn ratios (turn ``r`` of one runner against turn ``r`` of
    another: they ran next to each other, under the same load)."""
    return statistics.median(n / d for n, d in zip(numerators, denominators, strict=True))


def _builds_column(turns: list[Turn], programs: int) -> str:
    made = sum(turn.builds.kinds["program"] for turn in turns) / (len(turns) * programs)
    extra: Counter[str] = Counter()
    for turn in turns:
        extra.update({k: n for k, n in turn.builds.kinds.items() if k != "program"})
    again = sorted({p for turn in turns for p in turn.builds.repeated})
    text = f"{made:.2f}/program"
    if extra:
        text += " + " + ", ".join(f"{n / len(turns):g} {k}" for k, n in sorted(extra.items()))
    return text + (f" (again: {', '.join(again)})" if again else "")


def report(runners: list[Runner], turns: dict[str, list[Turn]], programs: int) -> list[str]:
    """Two tables of medians. New programs on a set-up machine: seconds, speed-up over
    serial, overhead (seconds over the serial time shared among the workers), processor
    time per program (caller, workers and compilers) and the speed-up a quiet machine would
    give (the workers' share of the serial processor time: ``workers * serial / runner``),
    builds per program. A cold machine: the set-up, and the set-up and programs together."""
    serial = turns[runners[0].name]
    serial_seconds = statistics.median(t.seconds for t in serial)
    serial_processor = statistics.median(t.processor_seconds for t in serial)
    lines = ["  new programs on a set-up machine:",
             f"  {'runner':<24} {'wall':>8} {'speed-up':>8} {'overhead':>13} "
             f"{'processor':>13} {'quiet est.':>10}  builds"]
    for runner in runners:
        mine = turns[runner.name]
        seconds = statistics.median(t.seconds for t in mine)
        ratio = _median_ratio([t.seconds for t in serial], [t.seconds for t in mine])
        overhead = max(seconds - serial_seconds / runner.workers, 0.0) / programs
        processor = statistics.median(t.processor_seconds for t in mine)
        # Without /proc the workers' processor time is not seen: no estimate.
        seen = not runner.pids or Path("/proc/self/stat").exists()
        quiet = f"{runner.workers * serial_processor / processor:9.2f}x" if seen else "      n/a"
        lines.append(
            f"  {runner.name:<24} {seconds:6.2f} s {ratio:7.2f}x {overhead * 1e3:5.1f} ms/prog "
            f"{processor / programs * 1e3:5.1f} ms/prog {quiet}  "
            f"{_builds_column(mine, programs)}"
        )
    lines += ["  a cold machine (each turn's set-up, one other program, then the programs):",
              f"  {'runner':<24} {'set-up':>8} {'total':>8} {'speed-up':>8}"]
    for runner in runners:
        mine = turns[runner.name]
        cold = [t.setup_seconds + t.seconds for t in mine]
        cold_ratio = _median_ratio([t.setup_seconds + t.seconds for t in serial], cold)
        lines.append(
            f"  {runner.name:<24} {statistics.median(t.setup_seconds for t in mine):6.2f} s "
            f"{statistics.median(cold):6.2f} s {cold_ratio:7.2f}x"
        )
    setup = Counter[str]()
    for turn in serial:
        setup.update(turn.setup_builds.kinds)
    kinds = sorted(setup, key=lambda kind: (kind != "program", kind))
    lines.append(
        "  builds of each turn's machine set-up: "
        + ", ".join(f"{setup[k] / len(serial):g} {k}" for k in kinds)
    )
    lines.extend(f"    {k}: {BUILD_KINDS[k]}" for k in kinds if k in BUILD_KINDS)
    return lines


def _run(args: argparse.Namespace, root: Path, programs: list[Any], setup: Any) -> list[str]:
    """The runners' table, the machine's load and the bound, as lines."""
    cores = os.cpu_count() or 1
    lines: list[str] = []
    with contextlib.ExitStack() as stack:
        pool, pool_pids = started_pool(args.workers)
        stack.enter_context(pool)
        runners = [Runner("serial", 1, lambda: None),
                   Runner(f"process pool of {args.workers}", args.workers, lambda: pool,
                          pool_pids)]
        if importlib.util.find_spec("distributed") is not None:
            client, imports, dask_pids = stack.enter_context(dask_client(args.workers))
            runners.append(Runner(f"Dask LocalCluster of {args.workers}", args.workers,
                                  client.get_executor, dask_pids))
            lines.append(f"  (the Dask workers' first import of stencilforge, before timing: "
                         f"{imports:.2f} s)")
        load = os.getloadavg()[0]
        turns: dict[str, list[Turn]] = {runner.name: [] for runner in runners}
        profiles: list[Profile] = []
        for repeat in range(args.repeats):
            first = repeat % len(runners)
            for number, runner in enumerate(runners[first:] + runners[:first]):
                where = root / f"turn-{repeat}-{number}"
                if runner.executor() is None:
                    turn, profile = profiled_serial_turn(runner, where, setup, programs)
                    profiles.append(profile)
                else:
                    turn = take_turn(runner, where, setup, programs)
                turns[runner.name].append(turn)
        after = os.getloadavg()[0]
    busy = max(load, after) > 0.25 * cores
    head = [
        f"{args.programs} distinct programs on {cores} cores, {args.repeats} turns per runner "
        f"taken in rotation, medians; workers started and warm before timing",
        f"  load average (1 min): {load:.2f} before, {after:.2f} after"
        + (": BUSY, other work shared the cores; judge the figures against the bound below"
           if busy else ": quiet"),
    ]
    profile = sorted(profiles, key=lambda p: p.seconds)[len(profiles) // 2]
    setup_seconds = statistics.median(t.setup_seconds for t in turns["serial"])
    bound = ["  " + line for line in profile.describe(args.workers, setup_seconds)]
    return head + report(runners, turns, args.programs) + lines + bound


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compile_fleet",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=24)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--fleet", type=int, default=4, help="Dask workers sharing one cache")
    parser.add_argument("--repeats", type=int, default=3, help="turns per runner")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="stencilforge-fleet-"))
    # The launcher is built per compiler, and each turn's counting compiler is new: keep
    # those launchers with the run, not in the user's toolchain directory.
    os.environ["STENCILFORGE_TOOLCHAIN_DIR"] = str(root / "toolchain")
    try:
        (root / "code").mkdir()
        programs = generate_programs(root / "code", args.programs)
        (setup,) = generate_programs(root / "code", 1, first=args.programs)
        for line in _run(args, root, programs, setup):
            print(line, flush=True)
        if importlib.util.find_spec("distributed") is not None:
            with dask_client(args.fleet) as (client, _, _):
                print("  " + fleet_line(client, root / "fleet", programs, args.fleet))
        else:
            print("  Dask not installed (pip install 'stencilforge[dask]'): no Dask rows")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
