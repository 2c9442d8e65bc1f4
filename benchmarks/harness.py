"""The benchmark run: every selected backend and peer, on every workload and size.

``run(options)`` measures, in order: the machine's copy bandwidth (the limit), then for each
workload and size the NumPy reference, each backend and the peers (Numba, JAX; those
installed, unless turned off), and finally the pipeline figures of the compiled backends. It
returns a ``Report``; ``benchmarks.report`` turns that into the table and the files.

At each workload and size, every row is first prepared (compiled, run once, verified against
NumPy), then all verified rows are timed together, in alternating rounds: their ratios (to
NumPy, to the best peer) compare samples taken in the same moments of the machine. Timed one
after the other, a row's neighbours in the table were minutes apart; on a 2-core VM the small
JAX rows swung 2x between runs that way.

Rows whose arrays exceed the last-level cache are bandwidth-bound: each of their samples is
timed right after one run of the copy kernel, and their fractions of the copy bandwidth are
against the copy timed in those same moments. A VM's bandwidth drifts by a third within a
run; a copy measured minutes before a row would flatter or wrong it by that much. Rows that
fit in the cache are not interleaved (the copy would evict their data before every sample);
their fractions use the run's copy bandwidth, measured before and after the rows.

Each bandwidth row also gets its roofline (``benchmarks.roofline``, ADR 0010): the same call
prepared once more on a grid that fits in the cache is timed right after each sample of the
row, in the cache, and its time per point is the row's compute bound; each sample, with the
copy before it and the probe after it, is judged against those two bounds, and
``roofline_fraction`` is how close the row comes to the slower one.
"""

from __future__ import annotations

import datetime
import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from benchmarks import peers
from benchmarks.comparison import Comparison, compare
from benchmarks.jax_setup import enable_jax_64_bit
from benchmarks.machine import (
    CopyBandwidth,
    CopyKernel,
    MachineInfo,
    better_copy_bandwidth,
    copy_kernel,
    last_level_cache_bytes,
    machine_info,
)
from benchmarks.measure import (
    Contender,
    is_compiled,
    prepare_backend,
    prepare_reference,
    time_together,
    with_probe,
)
from benchmarks.pipeline_figures import PipelineFigures, cache_hit_seconds, measure_pipeline
from benchmarks.progress import Progress
from benchmarks.results import Row, with_derived
from benchmarks.roofline import compute_shape
from benchmarks.selection import select_backends
from benchmarks.workloads import SIZES, WORKLOADS, Workload

__all__ = ["Options", "Report", "run"]

#: Timed calls per size when ``--repeat`` is not given (the first, verified call not counted).
DEFAULT_REPEAT: Mapping[str, int] = {"small": 200, "large": 20}
QUICK_REPEAT: Mapping[str, int] = {"small": 5, "large": 2}
#: Cold + warm subprocess pairs per pipeline figure (one with ``--quick``): medians of three.
PROBE_PAIRS = 3


@attrs.frozen
class Options:
    """What to run; the command-line options of ``python -m benchmarks``.

    Attributes:
        backends: backend names to run (``None``: every available one).
        workloads: workload names (``None``: all registered).
        sizes: size names from ``SIZES``.
        repeat: timed calls per measurement (``None``: per-size defaults).
        quick: a smoke run of a few seconds (tiny repeat counts, fewer pipeline probes).
        compare: rows of an earlier run to compare against, or ``None``.
        compare_path: where those rows came from (for the header).
        peers: also run the Numba and JAX versions of the workloads, those importable.
        output: directory for the JSON, CSV and PNG.
    """

    backends: tuple[str, ...] | None = None
    workloads: tuple[str, ...] | None = None
    sizes: tuple[str, ...] = tuple(SIZES)
    repeat: int | None = None
    quick: bool = False
    compare: tuple[Row, ...] | None = None
    compare_path: str | None = None
    peers: bool = True
    output: Path = Path("bench-results")

    def repeat_for(self, size: str) -> int:
        """Timed calls for a measurement at ``size``."""
        if self.repeat is not None:
            return self.repeat
        return (QUICK_REPEAT if self.quick else DEFAULT_REPEAT)[size]

    def header(self) -> dict[str, Any]:
        """The options as they go into the JSON header."""
        return {
            "backends": self.backends,
            "workloads": self.workloads,
            "sizes": self.sizes,
            "repeat": {size: self.repeat_for(size) for size in self.sizes},
            "quick": self.quick,
            "compare": self.compare_path,
            "peers": self.peers,
            "output": str(self.output),
        }


@attrs.frozen
class Report:
    """Everything one run measured."""

    timestamp: str
    machine: MachineInfo
    copy: CopyBandwidth
    options: Options
    backends: tuple[str, ...]
    rows: tuple[Row, ...]
    pipeline: tuple[PipelineFigures, ...]
    cache_hits: Mapping[str, float]
    comparison: tuple[Comparison, ...] | None
    notes: tuple[str, ...]

    def header(self) -> dict[str, Any]:
        """The JSON header: when, where, with which versions and options."""
        return {
            "timestamp": self.timestamp,
            "machine": attrs.asdict(self.machine),
            "copy_bandwidth": attrs.asdict(self.copy),
            "backends": list(self.backends),
            "options": self.options.header(),
        }


def _load_average() -> str:
    """The system's load averages as ``"0.12/0.30/0.45"``, or ``"unknown"`` where the
    platform has none."""
    try:
        return "/".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def _interleaved(kernel: CopyKernel, bytes_per_call: int, cache_bytes: int) -> CopyKernel | None:
    """The copy kernel for a row whose arrays exceed the cache, else ``None``."""
    return kernel if bytes_per_call > cache_bytes else None


Shape = tuple[int, int, int]


def _prepare_point(
    workload: Workload,
    size: str,
    probe: Shape | None,
    selected: Mapping[str, object],
    peer_factories: Mapping[str, peers.PeerFactory],
    progress: Progress,
) -> list[Contender | Row]:
    """Every row of one workload and size prepared (NumPy, the backends, the peers), each
    with its compute probe on the in-cache grid ``probe`` when given (``with_probe``)."""

    def both(prepare: Callable[[Shape | None, Shape | None], Contender | Row]) -> Contender | Row:
        row = prepare(None, None)
        if probe is None or not isinstance(row, Contender):
            return row
        # The probe's fields lie in memory as the row's: the leading rows of arrays of its grid.
        return with_probe(row, prepare(probe, SIZES[size]), workload)

    prepared = [both(functools.partial(prepare_reference, workload, size))]
    for name, backend in selected.items():
        progress.step(f"{workload.name} {size} {name}")
        prepared.append(both(functools.partial(prepare_backend, workload, size, name, backend)))
    for name, factory in peer_factories.items():
        progress.step(f"{workload.name} {size} {name} (peer)")
        prepared.append(
            both(functools.partial(peers.prepare_peer, workload, size, name, factory))
        )
    return prepared


def run(options: Options, show_progress: bool = True) -> Report:
    """Measure everything ``options`` selects and return the report.

    Raises:
        ValueError: an unknown backend or workload name.
    """
    chosen = select_backends(options.backends)
    selected = {name: entry.backend for name, entry in chosen.items()}
    workload_names = options.workloads or tuple(WORKLOADS)
    unknown = [name for name in workload_names if name not in WORKLOADS]
    if unknown:
        raise ValueError(f"unknown workload(s) {unknown}; registered: {list(WORKLOADS)}")
    notes: list[str] = []
    load_before = _load_average()
    peer_factories: dict[str, peers.PeerFactory] = {}
    if options.peers:
        peer_factories, peer_notes = peers.available_peers()
        notes += peer_notes
    jax_note = enable_jax_64_bit()
    if jax_note is not None:
        notes.append(jax_note)
    compiled = [name for name, backend in selected.items() if is_compiled(backend)]
    probed = workload_names[:1] if options.quick else workload_names
    per_point = 1 + len(selected) + len(peer_factories)
    progress = Progress(
        3 + len(workload_names) * len(options.sizes) * per_point + len(compiled) * len(probed),
        enabled=show_progress,
    )

    progress.step("copy bandwidth (STREAM-style)")
    kernel = copy_kernel()
    copy = kernel.bandwidth(repeat=3 if options.quick else 10)
    if not copy.method.startswith("C "):
        notes.append(f"copy bandwidth measured with {copy.method}")
    cache_bytes = last_level_cache_bytes()
    rows: list[Row] = []
    for workload_name in workload_names:
        workload = WORKLOADS[workload_name]
        for size in options.sizes:
            repeat = options.repeat_for(size)
            beside = _interleaved(kernel, workload.bytes_per_call(SIZES[size]), cache_bytes)
            probe = None if beside is None else compute_shape(workload, SIZES[size], cache_bytes)
            prepared = _prepare_point(
                workload, size, probe, selected, peer_factories, progress
            )
            progress.step(f"{workload_name} {size}: timing {len(prepared)} rows in rounds")
            rows += time_together(prepared, repeat, beside)

    # Again after the rows, and the better of the two counts: a VM's bandwidth drifts, and
    # one measurement taken in a slow moment would flatter every backend measured later.
    progress.step("copy bandwidth again (the better of the two counts)")
    copy = better_copy_bandwidth(copy, kernel.bandwidth(repeat=3 if options.quick else 10))
    del kernel  # its two arrays are four times the last-level cache

    figures = []
    probe_pairs = 1 if options.quick else PROBE_PAIRS
    small_rows = {(r.backend, r.workload): r for r in rows if r.size == "small"}
    for name in compiled:
        for workload_name in probed:
            progress.step(
                f"pipeline figures {workload_name} {name} ({probe_pairs} x cold, "
                "recorded-choice and warm subprocesses)"
            )
            small_row = small_rows.get((name, workload_name))
            figures.append(
                measure_pipeline(
                    name, workload_name, small_row, repeat=probe_pairs,
                    reference=chosen[name].reference,
                )
            )
    if not compiled:
        notes.append(
            "no compiled backend selected or available: no per-stage compile, warm-start or "
            "call-overhead figures (c_cpu joins when it is registered and a C compiler is found)"
        )
    progress.step("CachedStep hit times")
    hits = cache_hit_seconds(200 if options.quick else 2000)
    progress.close()

    notes.append(f"load average (1, 5, 15 min) {load_before} at the start, {_load_average()} "
                 "at the end: bandwidth and roofline figures need a quiet machine")
    rows = with_derived(rows, copy.bytes_per_second)
    comparison = compare(list(options.compare), rows) if options.compare is not None else None
    return Report(
        timestamp=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        machine=machine_info(),
        copy=copy,
        options=options,
        backends=tuple(selected),
        rows=tuple(rows),
        pipeline=tuple(figures),
        cache_hits=hits,
        comparison=tuple(comparison) if comparison is not None else None,
        notes=tuple(notes),
    )
