"""The PNG chart of a run: speed relative to NumPy and fraction of the copy bandwidth.

Needs matplotlib (the ``bench`` extra). ``write_chart`` returns a note instead of raising when
it is not importable, so a run without it still writes its JSON and CSV.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path

from benchmarks.results import OK, Row

__all__ = ["write_chart"]


def write_chart(rows: Sequence[Row], path: Path, title: str) -> str | None:
    """Draw grouped bars (one group per workload and size, one bar per backend) into ``path``.

    Returns:
        ``None`` when written, else a note saying why not (matplotlib missing, nothing timed).
    """
    try:
        matplotlib = importlib.import_module("matplotlib")
    except ImportError:
        return "chart skipped: matplotlib is not installed (`pip install 'stencilforge[bench]'`)"
    matplotlib.use("Agg")
    plt = importlib.import_module("matplotlib.pyplot")
    timed = [row for row in rows if row.status == OK and row.median]
    if not timed:
        return "chart skipped: no timed rows"
    groups = list(dict.fromkeys((row.workload, row.size) for row in timed))
    names = list(dict.fromkeys(row.backend for row in timed))
    by_key = {row.key: row for row in timed}
    width = 0.8 / len(names)
    figure, (speed, bandwidth) = plt.subplots(1, 2, figsize=(12, 4.5))
    for index, name in enumerate(names):
        positions = [g + (index - (len(names) - 1) / 2) * width for g in range(len(groups))]
        rows_of = [by_key.get((w, s, name)) for w, s in groups]
        ratios = [_value(r.ratio_to_numpy if r else None) for r in rows_of]
        fractions = [100 * _value(r.copy_fraction if r else None) for r in rows_of]
        speed.bar(positions, ratios, width, label=name)
        bandwidth.bar(positions, fractions, width, label=name)
    labels = [f"{w}\n{s}" for w, s in groups]
    speed.set_yscale("log")
    speed.axhline(1.0, color="black", linewidth=0.8)
    speed.set_ylabel("speed vs NumPy (x, log; >1 faster)")
    bandwidth.set_ylabel("% of copy bandwidth")
    for axes in (speed, bandwidth):
        axes.set_xticks(range(len(groups)), labels)
    speed.legend(fontsize="small")
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return None


def _value(number: float | None) -> float:
    # NaN draws no bar, on a log axis too.
    return float("nan") if number is None else number
