"""Wall-clock timing of repeated calls: ``time_calls`` and its summary, ``Timing``."""

from __future__ import annotations

import math
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


#: Calls shorter than this are timed in batches: around a single microsecond-scale call,
#: the timer's own cost and a cold branch predictor would be part of the figure.
MIN_SAMPLE_SECONDS = 200e-6


def time_calls(
    call: Callable[[], object],
    repeat: int,
    synchronize: Callable[[object], None] = lambda result: None,
) -> Timing:
    """Time ``repeat`` samples of ``call`` with ``time.perf_counter``; each sample is the mean
    of a batch of back-to-back calls lasting at least ``MIN_SAMPLE_SECONDS`` (one call when a
    call is that long already), as ``timeit`` does.

    ``synchronize(result)`` runs after every call inside the timed region, so that
    asynchronous devices (GPUs, JAX) are measured to completion, not to submission.
    """
    start = time.perf_counter()
    synchronize(call())
    first = time.perf_counter() - start
    batch = max(1, math.ceil(MIN_SAMPLE_SECONDS / first)) if first > 0 else 1000
    if batch > 1:
        # The first call may have paid for warm-up: calibrate on a second batch.
        start = time.perf_counter()
        for _ in range(batch):
            synchronize(call())
        per_call = (time.perf_counter() - start) / batch
        batch = max(1, math.ceil(MIN_SAMPLE_SECONDS / per_call)) if per_call > 0 else batch
    seconds = []
    for _ in range(max(repeat, 1)):
        start = time.perf_counter()
        for _ in range(batch):
            synchronize(call())
        seconds.append((time.perf_counter() - start) / batch)
    return Timing.of(seconds)
