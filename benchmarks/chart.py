"""The PNG charts of a run: ``results.png``, and one roofline chart per workload.

``results.png`` has one panel per size: on the small grid (in the cache, where a call's time
is mostly its overhead) each row's speed against NumPy on a log axis; on the large grid each
row's fraction of its roofline (``benchmarks.roofline``), or of the copy bandwidth where a
row has no roofline. ``roofline-<workload>.png`` shows, per row of the large grid, the speed
reached and its two ceilings (``roofline_figure``).

Needs matplotlib (the ``bench`` extra). ``write_charts`` returns a note instead of raising
when it is not importable, so a run without it still writes its JSON and CSV. Bars are
grouped by workload, one colour per backend, the legend outside the plotting area.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.results import OK, Row

__all__ = ["results_figure", "roofline_figure", "write_charts"]

#: Inches of width per workload group, so that the labels have room at any number of rows.
GROUP_WIDTH = 2.2


def _pyplot() -> Any:
    matplotlib = importlib.import_module("matplotlib")
    matplotlib.use("Agg")
    return importlib.import_module("matplotlib.pyplot")


def _timed(rows: Sequence[Row]) -> list[Row]:
    return [row for row in rows if row.status == OK and row.median]


def write_charts(rows: Sequence[Row], directory: Path, title: str) -> tuple[list[Path], str | None]:
    """Write ``results.png`` and ``roofline-<workload>.png`` (for each workload with a row
    on a roofline) into ``directory``.

    Returns:
        the files written, and ``None`` or a note saying why nothing was (matplotlib
        missing, nothing timed).
    """
    try:
        plt = _pyplot()
    except ImportError:
        return [], (
            "charts skipped: matplotlib is not installed (`pip install 'stencilforge[bench]'`)"
        )
    if not _timed(rows):
        return [], "charts skipped: no timed rows"
    written = []
    figures = [(directory / "results.png", results_figure(rows, title))]
    for workload in dict.fromkeys(row.workload for row in _timed(rows)):
        figure = roofline_figure(rows, workload)
        if figure is not None:
            figures.append((directory / f"roofline-{workload}.png", figure))
    for path, figure in figures:
        figure.savefig(path, dpi=150, bbox_inches="tight")
        plt.close(figure)
        written.append(path)
    return written, None


def results_figure(rows: Sequence[Row], title: str) -> Any:
    """The figure of ``results.png`` (a matplotlib ``Figure``; the caller closes it).

    Raises:
        ImportError: matplotlib is not installed.
    """
    plt = _pyplot()
    timed = _timed(rows)
    sizes = list(dict.fromkeys(row.size for row in timed))
    workloads = list(dict.fromkeys(row.workload for row in timed))
    names = list(dict.fromkeys(row.backend for row in timed))
    figure, panels = plt.subplots(
        len(sizes), 1, figsize=(max(6.0, GROUP_WIDTH * len(workloads)), 3.6 * len(sizes)),
        squeeze=False,
    )
    by_key = {row.key: row for row in timed}
    colours = plt.get_cmap("tab10")
    for axes, size in zip(panels[:, 0], sizes, strict=True):
        of_size = [row for row in timed if row.size == size]
        in_cache = all(row.copy_bandwidth is None for row in of_size)
        on_roofline = any(row.roofline_fraction is not None for row in of_size)
        width = 0.8 / len(names)
        for index, name in enumerate(names):
            positions = [g + (index - (len(names) - 1) / 2) * width for g in range(len(workloads))]
            values = [_panel_value(by_key.get((w, size, name)), in_cache, on_roofline)
                      for w in workloads]
            axes.bar(positions, values, width, label=name, color=colours(index % 10))
        _label_panel(axes, f"{size} grid ({_grid(of_size)}", in_cache, on_roofline)
        axes.set_xticks(range(len(workloads)), workloads)
    handles, labels = panels[0, 0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 0.95), frameon=False,
                  title="backend")
    figure.suptitle(title)
    figure.tight_layout()
    return figure


def _grid(rows: Sequence[Row]) -> str:
    return "x".join(map(str, rows[0].shape))


def _panel_value(row: Row | None, in_cache: bool, on_roofline: bool) -> float:
    if row is None:
        return float("nan")  # NaN draws no bar, on a log axis too
    if in_cache:
        return _value(row.ratio_to_numpy)
    return 100 * _value(row.roofline_fraction if on_roofline else row.copy_fraction)


def _label_panel(axes: Any, grid: str, in_cache: bool, on_roofline: bool) -> None:
    """Axis and title of a panel: speed-up on a log axis for grids in the cache (the copy
    bandwidth says nothing of them), else the fraction of the roofline (or copy)."""
    if in_cache:
        axes.set_yscale("log")
        axes.axhline(1.0, color="black", linewidth=0.8)
        axes.set_ylabel("speed-up vs NumPy\n(log; >1 faster)")
        axes.set_title(f"{grid}, in cache): speed-up against NumPy's call")
        return
    axes.axhline(100.0, color="black", linewidth=0.8, linestyle="--")
    bound = "roofline" if on_roofline else "copy bandwidth"
    axes.set_ylabel(f"% of {bound}")
    axes.set_title(f"{grid}): fraction of its {bound}")


def roofline_figure(rows: Sequence[Row], workload: str) -> Any | None:
    """The roofline chart of ``workload``: for each row with a roofline, the effective
    bandwidth it reached (its bytes per call / its median) as a bar, and its two ceilings
    as marks across the bar: the copy bandwidth timed beside it and its compute bound (its
    bytes / its compute bound), both medians; the lower ceiling is its roofline, and the
    percentage above the bar its ``roofline_fraction`` (sample by sample, so it need not be
    the bar over the ceiling exactly). ``None`` when no row of the workload has a roofline.

    Raises:
        ImportError: matplotlib is not installed.
    """
    bounded = [row for row in _timed(rows)
               if row.workload == workload and row.roofline_fraction is not None]
    if not bounded:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(max(5.0, 1.5 * len(bounded) + 2.5), 4.0))
    positions = range(len(bounded))
    achieved = [_gb(row.bytes_per_call, row.median) for row in bounded]
    axes.bar(positions, achieved, 0.6, color="tab:blue", label="reached")
    for position, row, value in zip(positions, bounded, achieved, strict=True):
        copy = _gb(row.bytes_per_call, row.copy_bound)
        compute = _gb(row.bytes_per_call, row.compute_bound)
        span = [position - 0.4, position + 0.4]
        axes.plot(span, [copy, copy], color="tab:red", linewidth=2, label="copy ceiling")
        axes.plot(span, [compute, compute], color="tab:green", linewidth=2, linestyle=":",
                  label="compute ceiling")
        axes.annotate(f"{100 * _value(row.roofline_fraction):.0f}%", (position, value),
                      textcoords="offset points", xytext=(0, 3), ha="center", fontsize="small")
    axes.set_xticks(list(positions), [row.backend for row in bounded])
    axes.set_ylabel("GB/s (input + output bytes / time)")
    shape = "x".join(map(str, bounded[0].shape))
    axes.set_title(f"{workload} {shape}: reached against its roofline")
    handles, labels = axes.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    axes.legend(unique.values(), unique.keys(), loc="upper left", bbox_to_anchor=(1.01, 1.0),
                frameon=False)
    figure.tight_layout()
    return figure


def _gb(bytes_per_call: int, seconds: float | None) -> float:
    return float("nan") if not seconds else bytes_per_call / seconds / 1e9


def _value(number: float | None) -> float:
    return float("nan") if number is None else number
