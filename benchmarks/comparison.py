"""``--compare OLD.json``: this run's medians against an earlier run's, row by row.

Rows are matched by (workload, size, backend). ``speedup`` is old median / new median, so
> 1 means this run is faster; a row present in only one of the runs is not compared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from benchmarks.results import OK, Row

__all__ = ["Comparison", "compare", "load_rows"]


@attrs.frozen
class Comparison:
    """One row's median in the old and the new run (seconds)."""

    workload: str
    size: str
    backend: str
    old_median: float
    new_median: float

    @property
    def speedup(self) -> float:
        """Old median / new median (> 1: faster now)."""
        return self.old_median / self.new_median

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary, with the speedup."""
        return {**attrs.asdict(self), "speedup": self.speedup}


def load_rows(path: Path) -> list[Row]:
    """The rows of a results JSON written by an earlier run.

    Raises:
        ValueError: the file is not JSON, or not a results file (no ``rows`` list).
        OSError: the file cannot be read.
    """
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not JSON ({error}); pass a results.json of a run") from error
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise ValueError(f"{path} has no 'rows' list; pass a results.json written by a run")
    try:
        return [Row.from_dict(row) for row in rows]
    except TypeError as error:
        raise ValueError(f"{path}: a row lacks a required field ({error})") from error


def compare(old: list[Row], new: list[Row]) -> list[Comparison]:
    """Pair the timed rows of both runs by key, in the new run's order."""
    old_medians = {row.key: row.median for row in old if row.status == OK and row.median}
    pairs = []
    for row in new:
        old_median = old_medians.get(row.key)
        if row.status == OK and row.median and old_median:
            pairs.append(Comparison(*row.key, old_median=old_median, new_median=row.median))
    return pairs
