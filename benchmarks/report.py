"""Turning a ``Report`` into the terminal tables and the JSON and CSV files."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from benchmarks.harness import Report
from benchmarks.results import FAILED, OK, PEER, Row
from benchmarks.standings import Standing, standings
from benchmarks.timing import PROBE_CALLS

__all__ = ["format_report", "seconds", "to_json", "write_csv", "write_json"]


def seconds(value: float | None) -> str:
    """A duration with a readable unit (``"12.3 us"``); ``"-"`` for ``None``."""
    if value is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}x"


def _gigabytes(bytes_per_second: float | None) -> str:
    return "-" if bytes_per_second is None else f"{bytes_per_second / 1e9:.1f} GB/s"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.3g}%"


def _table(header: Sequence[str], lines: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *lines]) for i in range(len(header))]

    def render(row: Sequence[str]) -> str:
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        return "  ".join(cells).rstrip()

    return [render(header), render(["-" * w for w in widths]), *map(render, lines)]


def _grid(row: Row) -> str:
    return "x".join(map(str, row.shape))


def _mark(row: Row, standing: Standing | None) -> str:
    """``*`` on the fastest row of its workload and size; on our best backend's row, its
    ratio to the best peer (``ours 1.3x vs jax``: the peer takes 1.3 times as long)."""
    if standing is None or row.status != OK:
        return ""
    marks = ["*"] if row.backend == standing.fastest else []
    ratio = standing.ratio_to_best_peer
    if row.backend == standing.best_ours and ratio is not None:
        marks.append(f"ours {ratio:.3g}x vs {standing.best_peer}")
    return " ".join(marks)


def _of_roofline(row: Row) -> str:
    """``"87% (compute)"``: the fraction of the roofline and which bound binds; ``" !"``
    after a fraction above 1: the row beat a bound, so that bound was measured too slow."""
    if row.roofline_fraction is None:
        return "-"
    beaten = " !" if row.roofline_fraction > 1.0 else ""
    return f"{_percent(row.roofline_fraction)} ({row.roofline_bound}){beaten}"


def _rows_table(rows: Sequence[Row]) -> list[str]:
    by_point = {(s.workload, s.size): s for s in standings(rows)}
    lines = [
        [
            row.workload, row.size, _grid(row), row.backend,
            seconds(row.median), seconds(row.minimum), seconds(row.maximum),
            _ratio(row.ratio_to_numpy), _gigabytes(row.copy_bandwidth),
            _percent(row.copy_fraction), _percent(row.best_copy_fraction),
            seconds(row.copy_bound), seconds(row.compute_bound), _of_roofline(row), row.status,
            _mark(row, by_point.get((row.workload, row.size))),
        ]
        for row in rows
    ]
    header = ["workload", "size", "grid", "backend", "median", "min", "max",
              "vs NumPy", "copy beside", "of copy BW", "best of copy BW", "copy bound",
              "compute bound", "of roofline", "status", "mark"]
    return _table(header, lines)


def _standings_table(rows: Sequence[Row]) -> list[str]:
    lines = [
        [
            s.workload, s.size, s.fastest,
            f"{s.best_ours} {seconds(s.best_ours_median)}" if s.best_ours else "-",
            f"{s.best_peer} {seconds(s.best_peer_median)}" if s.best_peer else "-",
            _ratio(s.ratio_to_best_peer),
        ]
        for s in standings(rows)
    ]
    header = ["workload", "size", "fastest", "our best", "best peer", "ours vs best peer"]
    return _table(header, lines)


def _with_samples(value: float | None, samples: Sequence[float]) -> str:
    if len(samples) < 2:
        return seconds(value)
    return f"{seconds(value)} [{', '.join(seconds(sample) for sample in samples)}]"


def _stages(figures: Any) -> str:
    return ", ".join(f"{s.stage} {seconds(s.seconds)}" for s in figures) or "-"


def _pipeline_table(report: Report) -> list[str]:
    lines = [
        [
            f.backend, f.workload, _stages(f.cold_stages),
            _with_samples(f.cold_compile_seconds, f.cold_compile_samples),
            _with_samples(f.cold_first_result_seconds, f.cold_first_result_samples),
            _with_samples(f.recorded_compile_seconds, f.recorded_compile_samples),
            _with_samples(f.warm_start_seconds, f.warm_start_samples), seconds(f.call_seconds),
            seconds(f.direct_call_seconds), seconds(f.call_overhead_seconds),
            f.message or "ok",
        ]
        for f in report.pipeline
    ]
    header = ["backend", "workload", "cold compile per stage", "cold compile",
              "cold 1st result", "cold compile, choice recorded", "warm start", "call (small)",
              "executable", "dispatch", "status"]
    return _table(header, lines)


def format_report(report: Report) -> str:
    """The terminal output: machine, limit, results table, pipeline figures, comparison."""
    m, copy = report.machine, report.copy
    out = [
        f"stencilforge {m.stencilforge} benchmarks, {report.timestamp}",
        f"machine: {m.cpu}, {m.cores} cores; Python {m.python}, NumPy {m.numpy}; "
        f"compiler: {m.compiler or 'none'}",
        f"copy bandwidth (the limit): {copy.bytes_per_second / 1e9:.1f} GB/s "
        f"(read + write, {copy.array_bytes // 2**20} MiB arrays, {copy.method}"
        f"{_measurements(copy.measurements)})",
        "vs NumPy = NumPy's time / the backend's, the median of the ratios of the rounds in "
        "which the rows were timed together (>1: faster than NumPy); "
        "of copy BW = (input + output bytes / median) / copy bandwidth; best of copy BW uses "
        "the minimum (best against best, as STREAM reports the copy kernel); rows whose arrays "
        "exceed the last-level cache are timed beside the copy kernel (one copy before each "
        "sample; copy beside = its median) and compared with it, the others with the limit "
        "above",
        "roofline (rows timed beside the copy): copy bound = input + output bytes / the copy "
        "beside; compute bound = the same call on a grid in the cache (the row's grid with "
        f"fewer rows along I), timed right after each sample (the best of {PROBE_CALLS} warm "
        "calls), per point, times the row's points (medians shown); of roofline = each "
        "sample against "
        "the bounds timed beside it: the larger of the medians of copy bound / sample and "
        "compute bound / sample, and which bound that is; ! = above 100%: the row beat a "
        "bound, so that bound was measured too slow (a loaded machine, or a probe that did "
        "not get the row's thread split): not a figure to judge",
        "mark: * = the fastest row of its workload and size; ours Nx vs P = our best "
        "backend's ratio to the best peer P (P's time / ours, round by round: >1, ours is "
        "faster)",
        "",
        *_rows_table(report.rows),
    ]
    if any(row.kind == PEER for row in report.rows):
        out += ["", "Our best backend against the best peer (medians; ours vs best peer, "
                "round by round, > 1: ours is faster):", *_standings_table(report.rows)]
    failed = [row for row in report.rows if row.status == FAILED]
    if failed:
        out += ["", "FAILED rows (not timed):"]
        out += [f"  {r.workload} {r.size} {r.backend}: {(r.message or '?').splitlines()[0]}"
                for r in failed]
    if report.pipeline:
        out += ["", "Pipeline figures (small grid; cold/warm starts in fresh subprocesses, "
                "medians over the runs (samples in brackets); cold compile = definition -> "
                "loaded callable, the sum of the stages; cold 1st result adds creating the "
                "backend and the arguments; dispatch = program call - executable call):",
                *_pipeline_table(report)]
    out += ["", "CachedStep hit times (median): " + ", ".join(
        f"{name} {seconds(value)}" for name, value in report.cache_hits.items())]
    if report.comparison is not None:
        out += ["", f"compared with {report.options.compare_path} "
                "(speedup = old median / new median, >1: faster now):"]
        out += _table(
            ["workload", "size", "backend", "old", "new", "speedup"],
            [[c.workload, c.size, c.backend, seconds(c.old_median), seconds(c.new_median),
              _ratio(c.speedup)] for c in report.comparison],
        ) if report.comparison else ["  no rows in common"]
    if report.notes:
        out += ["", *(f"note: {note}" for note in report.notes)]
    return "\n".join(out)


def to_json(report: Report) -> dict[str, Any]:
    """The JSON document: header, rows, standings (``benchmarks.standings``), pipeline figures,
    cache hits, comparison, notes."""
    return {
        "header": report.header(),
        "rows": [row.to_dict() for row in report.rows],
        "pipeline": [figures.to_dict() for figures in report.pipeline],
        "standings": [standing.to_dict() for standing in standings(report.rows)],
        "cache_hits": dict(report.cache_hits),
        "comparison": (None if report.comparison is None
                       else [c.to_dict() for c in report.comparison]),
        "notes": list(report.notes),
    }


def write_json(report: Report, path: Path) -> None:
    """Write ``to_json(report)`` to ``path``."""
    path.write_text(json.dumps(to_json(report), indent=2) + "\n")


def write_csv(rows: Sequence[Row], path: Path) -> None:
    """Write one line per row, every ``Row`` field a column (shape as ``16x16x8``, the round
    medians space-separated, the roofline samples as space-separated ``seconds:copy:compute``)."""
    names = [field.name for field in attrs.fields(Row)]
    with path.open("w", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=names)
        writer.writeheader()
        for row in rows:
            medians = " ".join(f"{value:.6g}" for value in row.round_medians)
            samples = " ".join(
                ":".join(f"{value:.6g}" for value in sample) for sample in row.roofline_samples
            )
            writer.writerow({
                **row.to_dict(), "shape": _grid(row), "round_medians": medians,
                "compute_shape": "x".join(map(str, row.compute_shape)),
                "roofline_samples": samples,
            })


def _measurements(measurements: tuple[float, ...]) -> str:
    if len(measurements) < 2:
        return ""
    values = " and ".join(f"{value / 1e9:.1f}" for value in measurements)
    return f"; the best of {values} GB/s, measured before and after the rows"
