"""Wall-clock timing of repeated calls: ``time_calls`` and its summary, ``Timing``.

A call can be timed next to a *reference* (the copy kernel, for the bandwidth rows): one
reference call is timed right before every sample, so that the two are measured in the same
moments of a machine whose speed drifts (a VM with busy neighbours), and their ratio is
stable where two measurements taken minutes apart are not.
"""

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
    #: the reference call, timed once right before each sample (``None``: none was given)
    reference: Timing | None = None

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
    reference: Callable[[], object] | None = None,
) -> Timing:
    """Time ``repeat`` samples of ``call`` with ``time.perf_counter``; each sample is the mean
    of a batch of back-to-back calls lasting at least ``MIN_SAMPLE_SECONDS`` (one call when a
    call is that long already), as ``timeit`` does.

    ``synchronize(result)`` runs after every call inside the timed region, so that
    asynchronous devices (GPUs, JAX) are measured to completion, not to submission.
    ``reference``, when given, is called and timed on its own right before each sample; its
    summary is the result's ``reference``.
    """
    batch = _batch_size(call, synchronize)
    seconds, reference_seconds = [], []
    for _ in range(max(repeat, 1)):
        if reference is not None:
            reference_seconds.append(_duration(reference))
        start = time.perf_counter()
        for _ in range(batch):
            synchronize(call())
        seconds.append((time.perf_counter() - start) / batch)
    timing = Timing.of(seconds)
    if reference_seconds:
        timing = attrs.evolve(timing, reference=Timing.of(reference_seconds))
    return timing


def _duration(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _batch_size(call: Callable[[], object], synchronize: Callable[[object], None]) -> int:
    """How many back-to-back calls make a sample of at least ``MIN_SAMPLE_SECONDS``."""
    first = _duration(lambda: synchronize(call()))
    if first <= 0:
        return 1000
    batch = max(1, math.ceil(MIN_SAMPLE_SECONDS / first))
    if batch > 1:
        # The first call may have paid for warm-up: calibrate on a second batch.
        def calibration() -> None:
            for _ in range(batch):
                synchronize(call())

        per_call = _duration(calibration) / batch
        batch = max(1, math.ceil(MIN_SAMPLE_SECONDS / per_call)) if per_call > 0 else batch
    return batch
