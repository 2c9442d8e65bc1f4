"""Wall-clock timing of repeated calls: ``time_calls`` and its summary, ``Timing``.

A call can be timed next to a *reference* (the copy kernel, for the bandwidth rows): one
reference call is timed right before every sample, so that the two are measured in the same
moments of a machine whose speed drifts (a VM with busy neighbours), and their ratio is
stable where two measurements taken minutes apart are not.

Calls that are compared with each other (a backend, the NumPy reference and the peers on one
workload and size) are timed together by ``time_in_rounds``: a few samples of each in turn,
round after round, in a shuffled order, so that a slow moment of the machine falls on all of
them alike instead of on whichever happened to run then. The order changes every round because
a call's predecessor matters: OpenMP worker threads spin for milliseconds after a parallel
call returns, taking a core from whatever runs next. Rotated by one, the order gave each call
the same predecessor in every round, and on a 2-core machine the row timed after a parallel
backend was 1.5x slower than the same row timed after a serial one.

Two calls timed in the same rounds are compared round by round (``paired_ratio``): the median
of the ratios of their medians in each round. Where the machine switches between speeds that
every call shares (a VM's small JAX calls take 22, 48 or 77 us for stretches of rounds), each
call's median over the run falls on whichever mode held half its samples, and two calls whose
rounds agree to within 10% could show a ratio of 2.

A call can also carry a *probe* (``TimedCall.probe``: the same loop on a grid in the cache,
whose time bounds the call's from below): after each sample, the probe is called once untimed
(its data back in the cache) and then timed ``PROBE_CALLS`` times, the best of which counts.
Each sample is then a ``Moment``: the reference before it, the call, the probe after it, all
within a few milliseconds, so that a bound is judged against the sample measured beside it
(ADR 0010).
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Sequence

import attrs

__all__ = [
    "Clock",
    "Moment",
    "TimedCall",
    "Timing",
    "paired_ratio",
    "time_calls",
    "time_in_rounds",
]


@attrs.frozen
class Moment:
    """One sample of a call and what was timed in its moment, in seconds.

    Attributes:
        seconds: the sample (a batch's mean call).
        reference: the reference call timed right before it (``None``: none was given).
        probe: the best of the probe's calls timed right after it (``None``: no probe).
    """

    seconds: float
    reference: float | None = None
    probe: float | None = None


@attrs.frozen
class Timing:
    """The summary of ``samples`` timed calls, in seconds."""

    median: float
    minimum: float
    maximum: float
    samples: int
    #: the reference call, timed once right before each sample (``None``: none was given)
    reference: Timing | None = None
    #: per round of ``time_in_rounds``, the median of the samples taken in it (empty: the call
    #: was timed alone, by ``time_calls``)
    rounds: tuple[float, ...] = ()
    #: the call's probe, summarized over the samples (``None``: the call has none)
    probe: Timing | None = None
    #: every sample with what was timed beside it, in order (empty: nothing was)
    moments: tuple[Moment, ...] = ()

    @classmethod
    def of(cls, seconds: list[float]) -> Timing:
        """Summarize a non-empty list of durations.

        Raises:
            ValueError: ``seconds`` is empty.
        """
        if not seconds:
            raise ValueError("a Timing needs at least one sample")
        return cls(statistics.median(seconds), min(seconds), max(seconds), len(seconds))


#: What the timers read: seconds from an arbitrary start, never going back. The default,
#: ``time.perf_counter``, is what a benchmark wants; a test passes a clock that the calls it
#: times advance by set amounts, so that it can check the figures exactly on a busy machine.
Clock = Callable[[], float]


#: Calls shorter than this are timed in batches: around a single microsecond-scale call,
#: the timer's own cost and a cold branch predictor would be part of the figure.
MIN_SAMPLE_SECONDS = 200e-6


def time_calls(
    call: Callable[[], object],
    repeat: int,
    synchronize: Callable[[object], None] = lambda result: None,
    reference: Callable[[], object] | None = None,
    clock: Clock = time.perf_counter,
) -> Timing:
    """Time ``repeat`` samples of ``call`` with ``clock``; each sample is the mean
    of a batch of back-to-back calls lasting at least ``MIN_SAMPLE_SECONDS`` (one call when a
    call is that long already), as ``timeit`` does.

    ``synchronize(result)`` runs after every call inside the timed region, so that
    asynchronous devices (GPUs, JAX) are measured to completion, not to submission.
    ``reference``, when given, is called and timed on its own right before each sample; its
    summary is the result's ``reference``. ``clock`` reads seconds (see ``Clock``).
    """
    batch = _batch_size(call, synchronize, clock)
    seconds, reference_seconds = [], []
    for _ in range(max(repeat, 1)):
        if reference is not None:
            reference_seconds.append(_duration(reference, clock))
        seconds.append(_batch_seconds(TimedCall(call, synchronize), batch, clock))
    return _summary(seconds, reference_seconds)


@attrs.frozen
class TimedCall:
    """A call to time and what waits for its result (see ``time_calls``).

    ``probe``: in ``time_in_rounds``, a call timed right after each sample of this one, warmed
    first by one untimed call (its data in the cache), the best of ``PROBE_CALLS`` calls
    counting: the same loop on a grid that fits in the cache, whose time bounds this call's.
    """

    call: Callable[[], object]
    synchronize: Callable[[object], None] = lambda result: None
    probe: TimedCall | None = None


#: Timed calls of a probe after each sample; the best counts. A probe's noise only slows it
#: (a descheduled thread, an interrupt), and a short parallel call suffers more from one
#: than the long call it bounds: a slow probe would flatter that call, a fast one cannot.
PROBE_CALLS = 5


#: Rounds of ``time_in_rounds`` when a call's ``repeat`` allows as many.
ROUNDS = 10


def time_in_rounds(
    calls: Sequence[TimedCall],
    repeat: int,
    reference: Callable[[], object] | None = None,
    rounds: int = ROUNDS,
    clock: Clock = time.perf_counter,
) -> list[Timing | Exception]:
    """Time ``repeat`` samples of each of ``calls``, in ``rounds`` rounds (fewer when
    ``repeat`` is smaller): each round takes its share of every call's samples, one call
    after another, in an order shuffled anew each round (seeded by the round's number, so
    that runs are alike: see the module's docstring for why). Samples are batched as in
    ``time_calls`` (each call's batch size calibrated once, before the first round),
    ``reference`` is timed right before every sample and a call's ``probe`` right after it
    (``Moment``), all of it read on ``clock``.

    Returns, in the order of ``calls``, each call's timing, or the exception it raised: a
    call that raises is timed no further, and the others go on.
    """
    repeat = max(repeat, 1)
    rounds = max(1, min(rounds, repeat))
    results: list[Timing | Exception | None] = [None] * len(calls)
    batches: list[int] = []
    for index, timed in enumerate(calls):
        try:
            batches.append(_batch_size(timed.call, timed.synchronize, clock))
        except Exception as error:  # reported in the call's place
            batches.append(0)
            results[index] = error
    moments: list[list[Moment]] = [[] for _ in calls]
    round_medians: list[list[float]] = [[] for _ in calls]
    for turn in range(rounds):
        # Round ``turn`` brings every call up to its share of ``repeat`` samples so far.
        target = repeat * (turn + 1) // rounds
        for index in _round_order(len(calls), turn):
            start = len(moments[index])
            try:
                while results[index] is None and len(moments[index]) < target:
                    moments[index].append(
                        _moment(calls[index], batches[index], reference, clock)
                    )
            except Exception as error:  # reported in the call's place
                results[index] = error
            if results[index] is None and len(moments[index]) > start:
                taken = moments[index][start:]
                round_medians[index].append(statistics.median(m.seconds for m in taken))
    return [
        result
        if result is not None
        else attrs.evolve(_summary_of(samples), rounds=tuple(medians))
        for result, samples, medians in zip(results, moments, round_medians, strict=True)
    ]


def _moment(
    timed: TimedCall, batch: int, reference: Callable[[], object] | None, clock: Clock
) -> Moment:
    """One sample of ``timed``: the reference before it, the probe after it (if any)."""
    before = _duration(reference, clock) if reference is not None else None
    seconds = _batch_seconds(timed, batch, clock)
    after = _probe_seconds(timed.probe, clock) if timed.probe is not None else None
    return Moment(seconds, before, after)


def _probe_seconds(probe: TimedCall, clock: Clock) -> float:
    """The best of ``PROBE_CALLS`` timed calls of ``probe``, after one untimed call."""
    probe.synchronize(probe.call())
    return min(
        _duration(lambda: probe.synchronize(probe.call()), clock) for _ in range(PROBE_CALLS)
    )


def _summary_of(moments: list[Moment]) -> Timing:
    """The timing of ``moments``: the samples' summary, the reference's and the probe's;
    the moments themselves when anything was timed beside the samples."""
    references = [m.reference for m in moments if m.reference is not None]
    probes = [m.probe for m in moments if m.probe is not None]
    timing = _summary([m.seconds for m in moments], references)
    if not references and not probes:
        return timing
    return attrs.evolve(
        timing, probe=Timing.of(probes) if probes else None, moments=tuple(moments)
    )


def paired_ratio(numerator: Sequence[float], denominator: Sequence[float]) -> float | None:
    """The median over rounds of ``numerator[i] / denominator[i]``: two calls' ``rounds``
    compared round by round (see the module's docstring); ``None`` unless both were timed in
    the same rounds (as many of them, none empty)."""
    if not numerator or len(numerator) != len(denominator) or not all(denominator):
        return None
    return statistics.median(n / d for n, d in zip(numerator, denominator, strict=True))


def _round_order(count: int, turn: int) -> list[int]:
    order = list(range(count))
    random.Random(turn).shuffle(order)
    return order


def _summary(seconds: list[float], reference_seconds: list[float]) -> Timing:
    timing = Timing.of(seconds)
    if reference_seconds:
        timing = attrs.evolve(timing, reference=Timing.of(reference_seconds))
    return timing


def _batch_seconds(timed: TimedCall, batch: int, clock: Clock) -> float:
    """The mean time of one call in a batch of ``batch`` back-to-back calls."""
    call, synchronize = timed.call, timed.synchronize
    start = clock()
    for _ in range(batch):
        synchronize(call())
    return (clock() - start) / batch


def _duration(call: Callable[[], object], clock: Clock) -> float:
    start = clock()
    call()
    return clock() - start


def _batch_size(
    call: Callable[[], object], synchronize: Callable[[object], None], clock: Clock
) -> int:
    """How many back-to-back calls make a sample of at least ``MIN_SAMPLE_SECONDS``."""
    first = _duration(lambda: synchronize(call()), clock)
    if first <= 0:
        return 1000
    batch = max(1, math.ceil(MIN_SAMPLE_SECONDS / first))
    if batch > 1:
        # The first call may have paid for warm-up: calibrate on a second batch.
        def calibration() -> None:
            for _ in range(batch):
                synchronize(call())

        per_call = _duration(calibration, clock) / batch
        batch = max(1, math.ceil(MIN_SAMPLE_SECONDS / per_call)) if per_call > 0 else batch
    return batch
