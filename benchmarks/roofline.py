"""The roofline of a bandwidth row: the lesser of two speeds measured in the same run.

A row whose arrays exceed the last-level cache is bound by the copy bandwidth timed beside it
(``copy_bound``: the bytes a call must move over that bandwidth) or by its own loop's
arithmetic (``compute_bound``), whichever is slower. The compute bound is the same program on
the same backend timed on a grid that fits in the cache (``compute_shape``), per point of the
domain it writes, scaled to the row's domain (ADR 0010 says why this way). ``Roofline`` holds
the two and the fraction of the slower one that a measured time reaches; ``paired_fraction``
judges each sample of a row against the bounds timed beside it (ADR 0010).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from benchmarks.workloads import Workload

__all__ = [
    "MIN_INTERIOR_ROWS",
    "Roofline",
    "compute_shape",
    "domain_points",
    "paired_fraction",
]

#: The in-cache grid keeps at least this many rows of the domain along its first axis: a
#: loop that sweeps that axis pays its start (the halo rows of its buffers) once per call.
MIN_INTERIOR_ROWS = 8


def domain_points(workload: Workload, shape: tuple[int, ...]) -> int:
    """How many points of ``out`` the workload writes on a grid of ``shape``."""
    return math.prod(
        len(range(*part.indices(extent)))
        for part, extent in zip(workload.domain, shape, strict=True)
    )


def compute_shape(
    workload: Workload, shape: tuple[int, int, int], cache_bytes: int
) -> tuple[int, int, int]:
    """The grid the compute bound of a row on ``shape`` is timed on.

    Only the first (outermost) axis is cut, to the most rows whose arrays fill at most a
    quarter of ``cache_bytes`` (STREAM's factor of four, the other way round), and no fewer
    than the halo and ``MIN_INTERIOR_ROWS``: the contiguous last axis keeps its extent, so
    that a backend that specializes its code on it (c_cpu) runs the same code, and the second
    axis keeps its extent, so that the tiles shared among threads (c_cpu cuts that axis into
    tiles; scans share the columns) and hence the balance between them are those of the row.

    Returns:
        the cut shape; ``shape`` itself when cutting would not make it smaller.
    """
    rows, *rest = shape
    per_row = workload.bytes_per_call(shape) // rows
    fitting = cache_bytes // 4 // max(per_row, 1)
    least = 2 * workload.halo + MIN_INTERIOR_ROWS
    return (min(rows, max(fitting, least)), rest[0], rest[1])


@attrs.frozen
class Roofline:
    """The two bounds of a bandwidth row, in seconds per call.

    Attributes:
        copy_bound: the row's bytes per call over the copy bandwidth timed beside it.
        compute_bound: the row's loop timed in cache, per point, times the row's points.
    """

    copy_bound: float
    compute_bound: float

    @property
    def seconds(self) -> float:
        """The slower bound: the least time a call can take by this model."""
        return max(self.copy_bound, self.compute_bound)

    @property
    def binding(self) -> str:
        """Which bound is the slower one: ``"copy"`` or ``"compute"``."""
        return "copy" if self.copy_bound >= self.compute_bound else "compute"

    def fraction(self, seconds: float) -> float:
        """The fraction of the roofline a call of ``seconds`` reaches (1.0: at the bound;
        the larger of the copy fraction and the compute fraction).

        Raises:
            ValueError: ``seconds`` is not positive.
        """
        if seconds <= 0:
            raise ValueError(f"a measured time must be positive, got {seconds!r}")
        return self.seconds / seconds


#: One sample of a bandwidth row: (its seconds, the copy bound, the compute bound), the bounds
#: from the copy timed right before it and the probe timed right after it.
Sample = tuple[float, float, float]


def paired_fraction(samples: Sequence[Sample]) -> tuple[float, str]:
    """The fraction of its roofline a row reaches, each sample against the bounds timed
    beside it: for each bound, the median over samples of ``bound / seconds``; the larger
    of the two medians, and which bound it is (``"copy"`` or ``"compute"``). The larger is
    taken after the medians, not per sample: the larger of two noisy bounds in each sample
    would lean towards whichever bound happened to be slow, and flatter the row.

    Raises:
        ValueError: no samples, or a sample whose time is not positive.
    """
    if not samples:
        raise ValueError("a paired fraction needs at least one sample")
    if any(seconds <= 0 for seconds, _, _ in samples):
        raise ValueError(f"a measured time must be positive, got {samples!r}")
    copy = statistics.median(bound / seconds for seconds, bound, _ in samples)
    compute = statistics.median(bound / seconds for seconds, _, bound in samples)
    return (copy, "copy") if copy >= compute else (compute, "compute")
