"""The records a run produces: one ``Row`` per (workload, size, backend), flat for CSV.

``status`` is ``"ok"`` (verified against NumPy, then timed), ``"FAILED"`` (an error or a wrong
result; ``message`` says which; never timed) or ``"skipped"`` (not measurable here, e.g. a peer
without an implementation of that workload).
"""

from __future__ import annotations

from typing import Any

import attrs

from benchmarks.roofline import Roofline, paired_fraction
from benchmarks.timing import Timing, paired_ratio

__all__ = ["FAILED", "OK", "SKIPPED", "Row", "ratio", "with_derived", "with_roofline"]

OK, FAILED, SKIPPED = "ok", "FAILED", "skipped"

#: ``kind`` of a row: the NumPy reference, a stencilforge backend, or a peer (Numba, JAX).
REFERENCE, BACKEND, PEER = "numpy", "stencilforge", "peer"


@attrs.frozen
class Row:
    """One measurement. Times are seconds; ratios are plain numbers.

    Attributes:
        ratio_to_numpy: NumPy's time / this row's (> 1: faster than NumPy), as ``ratio``
            takes it.
        copy_bandwidth: bytes per second of the copy kernel's median, timed once before each
            sample of this row (rows whose arrays exceed the last-level cache); ``None``: the
            run's copy bandwidth applies.
        best_copy_bandwidth: the same for the copy kernel's best repetition.
        copy_fraction: (bytes_per_call / median) / copy bandwidth (1.0 = at the machine's
            limit): against the row's own ``copy_bandwidth`` when it has one, else the run's.
        best_copy_fraction: (bytes_per_call / minimum) / the best copy bandwidth: best against
            best, the STREAM convention.
        compile_seconds: ``prog.compile(...)`` on a compiled backend (``None`` when embedded).
        first_call_seconds: the first call (compiles on compiled backends unless done before).
        direct_call_seconds: median of the loaded executable called directly (small grid,
            compiled backends): the difference to ``median`` is argument checks and dispatch.
        round_medians: the median of each round's samples, when the row was timed in rounds
            with the others of its workload and size (``timing.time_in_rounds``).
        compute_shape: the in-cache grid this row's compute bound was timed on
            (``roofline.compute_shape``; empty: none, the row fits in the cache).
        compute_median: the median call on ``compute_shape``, timed in the row's rounds.
        compute_bound: ``compute_median`` per point of the domain, times the row's points.
        copy_bound: ``bytes_per_call`` over the copy bandwidth timed beside the row.
        roofline_bound: which bound binds (``"copy"`` or ``"compute"``).
        roofline_fraction: "of roofline" (1.0: at the bound). With ``roofline_samples``, each
            sample against the bounds timed beside it (``roofline.paired_fraction``: the
            larger of the medians of copy bound / sample and compute bound / sample); else
            (a row recorded without them) the slower bound / ``median``.
        roofline_samples: per sample of a row timed beside the copy with a compute probe,
            ``(seconds, copy bound, compute bound)``: the copy timed right before the sample,
            the probe right after it.
    """

    workload: str
    size: str
    shape: tuple[int, ...]
    backend: str
    kind: str
    status: str
    bytes_per_call: int
    message: str = ""
    median: float | None = None
    minimum: float | None = None
    maximum: float | None = None
    samples: int = 0
    compile_seconds: float | None = None
    first_call_seconds: float | None = None
    direct_call_seconds: float | None = None
    ratio_to_numpy: float | None = None
    copy_bandwidth: float | None = None
    best_copy_bandwidth: float | None = None
    copy_fraction: float | None = None
    best_copy_fraction: float | None = None
    round_medians: tuple[float, ...] = ()
    compute_shape: tuple[int, ...] = ()
    compute_median: float | None = None
    compute_bound: float | None = None
    copy_bound: float | None = None
    roofline_bound: str | None = None
    roofline_fraction: float | None = None
    roofline_samples: tuple[tuple[float, float, float], ...] = ()

    @property
    def key(self) -> tuple[str, str, str]:
        """What identifies a row across runs: (workload, size, backend)."""
        return (self.workload, self.size, self.backend)

    def timed(self, timing: Timing, reference_bytes: int | None = None) -> Row:
        """This row with the timing's median, min, max and sample count; with the copy
        bandwidth of its ``reference`` too when ``reference_bytes`` says what one moves."""
        row = attrs.evolve(
            self,
            median=timing.median,
            minimum=timing.minimum,
            maximum=timing.maximum,
            samples=timing.samples,
            round_medians=timing.rounds,
        )
        if timing.reference is None or reference_bytes is None:
            return row
        return attrs.evolve(
            row,
            copy_bandwidth=reference_bytes / timing.reference.median,
            best_copy_bandwidth=reference_bytes / timing.reference.minimum,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (``shape`` as a list)."""
        data = attrs.asdict(self)
        data["shape"] = list(self.shape)
        data["compute_shape"] = list(self.compute_shape)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Row:
        """The inverse of ``to_dict``, ignoring keys this version does not know."""
        known = {field.name for field in attrs.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["shape"] = tuple(values.get("shape", ()))
        values["round_medians"] = tuple(values.get("round_medians", ()))
        values["compute_shape"] = tuple(values.get("compute_shape", ()))
        values["roofline_samples"] = tuple(
            (float(seconds), float(copy), float(compute))
            for seconds, copy, compute in values.get("roofline_samples", ())
        )
        return cls(**values)


def ratio(slower: Row, faster: Row) -> float | None:
    """How many times ``faster``'s time ``slower`` takes (``None`` unless both were timed):
    round by round when the two were timed in the same rounds (``timing.paired_ratio``: the
    median of the rounds' ratios), else the ratio of their medians."""
    if not slower.median or not faster.median:
        return None
    paired = paired_ratio(slower.round_medians, faster.round_medians)
    return paired if paired is not None else slower.median / faster.median


def with_derived(rows: list[Row], copy_bytes_per_second: float) -> list[Row]:
    """Fill ``ratio_to_numpy``, the copy fractions and the roofline of every timed row.

    The NumPy row of the same (workload, size) is the ratio's numerator (``ratio``); rows
    without one (or untimed rows) keep ``None``. A row timed next to the copy kernel is
    compared with its own copy bandwidth, any other with ``copy_bytes_per_second`` (the run's).
    A row timed next to the copy kernel with a compute bound also gets its roofline
    (``with_roofline``).
    """
    numpy_row = {
        (row.workload, row.size): row
        for row in rows
        if row.kind == REFERENCE and row.median
    }
    derived = []
    for row in rows:
        if not row.median:
            derived.append(row)
            continue
        reference = numpy_row.get((row.workload, row.size))
        copy = row.copy_bandwidth or copy_bytes_per_second
        best_copy = row.best_copy_bandwidth or copy_bytes_per_second
        derived.append(
            attrs.evolve(
                row,
                ratio_to_numpy=ratio(reference, row) if reference else None,
                copy_fraction=row.bytes_per_call / row.median / copy,
                best_copy_fraction=(
                    row.bytes_per_call / row.minimum / best_copy if row.minimum else None
                ),
            )
        )
    return [with_roofline(row) for row in derived]


def with_roofline(row: Row) -> Row:
    """``row`` with ``copy_bound``, ``roofline_bound`` and ``roofline_fraction`` when it was
    timed beside the copy kernel and has a ``compute_bound``; else ``row`` unchanged. The
    fraction pairs each sample with its bounds when the row has ``roofline_samples``."""
    if not row.median or row.copy_bandwidth is None or row.compute_bound is None:
        return row
    roofline = Roofline(row.bytes_per_call / row.copy_bandwidth, row.compute_bound)
    fraction, binding = (
        paired_fraction(row.roofline_samples)
        if row.roofline_samples
        else (roofline.fraction(row.median), roofline.binding)
    )
    return attrs.evolve(
        row, copy_bound=roofline.copy_bound, roofline_bound=binding, roofline_fraction=fraction
    )
