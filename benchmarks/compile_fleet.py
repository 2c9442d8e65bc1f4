"""Compile many distinct programs at once: ``python -m benchmarks.compile_fleet``.

Generates ``--programs`` distinct c_cpu programs (varied stencils and constants) and compiles
all of them with a cold cache: serially in this process, on a process pool of ``--workers``,
and on a Dask ``LocalCluster`` of ``--workers`` (when ``distributed`` is installed). Then a
simulated fleet: ``--fleet`` Dask workers share one cache directory and are given every
program twice; the compiler invocations are counted (each program must build once). Prints
each runner's seconds, its speed-up over serial, and the scheduler's overhead per program
(wall time minus the serial compile time over the workers, per program).
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

import allocators
from backends import CompiledBackend
from backends.c import CCompilation, c_cpu_pipeline, compile_time_args
from pipeline import compile_many

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

_COUNTING_CC = """#!/bin/sh
case " $* " in *" -c "*) ;; *" -o "*) echo x >> "{log}" ;; esac
exec {compiler} "$@"
"""


def generate_programs(directory: Path, count: int) -> list[Any]:
    """``count`` distinct programs, each in a module of its own under ``directory``."""
    programs = []
    for index in range(count):
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
    """A ``$CC`` that appends a line to a log for every build of a module (a link, or a
    compile-and-link; not the units compiled with ``-c``), and that log."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "builds.log"
    log.touch()
    real = shutil.which(os.environ.get("CC") or "cc") or "cc"
    wrapper = directory / "cc"
    wrapper.write_text(_COUNTING_CC.format(log=log, compiler=real))
    wrapper.chmod(stat.S_IRWXU)
    return wrapper, log


def backend_for(cache: Path, compiler: Path) -> CompiledBackend:
    compilation = CCompilation(str(cache / "c"), compiler=str(compiler))
    return CompiledBackend(
        "c_cpu_fleet", allocators.NumPyBufferAllocator(),
        c_cpu_pipeline(cache, compilation=compilation), compile_time_args=compile_time_args,
    )


def _timed(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _on_dask(workers: int, work: Callable[[Any], Any]) -> Any:
    """``work(client)`` on a fresh loopback LocalCluster of ``workers`` processes."""
    import distributed  # noqa: PLC0415  (optional: the dask extra)

    with distributed.LocalCluster(  # type: ignore[no-untyped-call]
        n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None,
    ) as cluster, distributed.Client(cluster) as client:  # type: ignore[no-untyped-call]
        return work(client)


def _fleet(client: Any, root: Path, definitions: list[Any], example: tuple[Any, ...],
           args: argparse.Namespace) -> str:
    compiler, log = counting_compiler(root / "fleet" / "cc")
    backend = backend_for(root / "fleet" / "cache", compiler)
    jobs = [(p.with_backend(backend), example) for p in definitions] * 2
    seconds = _timed(lambda: compile_many(jobs, executor=client.get_executor(), progress=False))
    builds = len(log.read_text().splitlines())
    return (
        f"fleet: {args.fleet} Dask workers, one cache, every program asked twice: "
        f"{builds} builds for {args.programs} programs in {seconds:.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compile_fleet",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--fleet", type=int, default=4, help="Dask workers sharing one cache")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="stencilforge-fleet-"))
    (root / "code").mkdir()
    definitions = generate_programs(root / "code", args.programs)
    shape = (12, 12, 8)
    example = (np.zeros(shape), np.zeros(shape), np.zeros(shape))

    def run(name: str, executor: Executor | None) -> tuple[float, int]:
        compiler, log = counting_compiler(root / name / "cc")
        backend = backend_for(root / name / "cache", compiler)
        jobs = [(p.with_backend(backend), example) for p in definitions]
        seconds = _timed(lambda: compile_many(jobs, executor=executor, progress=False))
        return seconds, len(log.read_text().splitlines())

    results: dict[str, tuple[float, int]] = {}
    results["serial"] = run("serial", None)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.workers, mp_context=spawn) as pool:
        pool.submit(int).result()  # start the workers outside the timed region
        results[f"process pool of {args.workers}"] = run("pool", pool)
    fleet_line = "Dask not installed (pip install 'stencilforge[dask]'): no Dask rows"
    if importlib.util.find_spec("distributed") is not None:
        on_dask = _on_dask(args.workers, lambda client: run("dask", client.get_executor()))
        results[f"Dask LocalCluster of {args.workers}"] = on_dask
        fleet_line = _on_dask(
            args.fleet, lambda client: _fleet(client, root, definitions, example, args)
        )
    serial = results["serial"][0]
    print(f"{args.programs} distinct programs, cold cache, {os.cpu_count()} cores")
    for name, (seconds, builds) in results.items():
        workers = 1 if name == "serial" else args.workers
        overhead = max(seconds - serial / workers, 0.0) / args.programs
        print(f"  {name:<24} {seconds:6.1f} s  {serial / seconds:4.2f}x  "
              f"overhead {overhead * 1e3:5.1f} ms/program  builds {builds}")
    print(f"  {fleet_line}")
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
