"""Wall-clock timing of repeated calls: ``time_calls`` and its summary, ``Timing``."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import attrs

__all__ = ["Timing", "time_calls"]


@attrs.frozen
class Timing:
    """The summary of ``samples`` timed calls, in seconds."""

    median: float
    minimum: float
    maximum: float
    samples: int

    @classmethod
    def of(cls, seconds: list[float]) -> Timing:
        """Summarize a non-empty list of durations.

        Raises:
            ValueError: ``seconds`` is empty.
        """
        if not seconds:
            raise ValueError("a Timing needs at least one sample")
        return cls(statistics.median(seconds), min(seconds), max(seconds), len(seconds))


def time_calls(
    call: Callable[[], object],
    repeat: int,
    synchronize: Callable[[object], None] = lambda result: None,
) -> Timing:
    """Time ``repeat`` calls of ``call`` with ``time.perf_counter`` around each.

    ``synchronize(result)`` runs inside the timed region, so that asynchronous devices (GPUs,
    JAX) are measured to completion, not to submission.
    """
    seconds = []
    for _ in range(max(repeat, 1)):
        start = time.perf_counter()
        synchronize(call())
        seconds.append(time.perf_counter() - start)
    return Timing.of(seconds)
