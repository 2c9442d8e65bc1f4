"""``time_calls``: batches for microsecond calls, one call per sample for long ones."""

from __future__ import annotations

import time

import pytest

from benchmarks.timing import MIN_SAMPLE_SECONDS, Timing, time_calls


def test_short_calls_are_timed_in_batches_and_reported_per_call():
    calls = []
    timing = time_calls(lambda: calls.append(1), repeat=5)
    assert timing.samples == 5
    # Warm-up, calibration batch, then five batches of more than one call each.
    assert len(calls) > 1 + 5 * 2
    assert timing.minimum <= timing.median <= timing.maximum
    assert timing.median < MIN_SAMPLE_SECONDS  # per call, not per batch


def test_long_calls_are_timed_one_by_one():
    calls = []

    def sleep() -> None:
        calls.append(1)
        time.sleep(MIN_SAMPLE_SECONDS * 2)

    timing = time_calls(sleep, repeat=3)
    assert len(calls) == 1 + 3
    assert timing.minimum >= MIN_SAMPLE_SECONDS * 2


def test_synchronize_runs_after_every_call():
    results = []
    time_calls(lambda: len(results), repeat=2, synchronize=results.append)
    assert results == list(range(len(results)))


def test_a_timing_needs_samples():
    with pytest.raises(ValueError, match="at least one"):
        Timing.of([])



def test_a_reference_is_timed_once_right_before_each_sample():
    events = []

    def reference() -> None:
        events.append("reference")
        time.sleep(MIN_SAMPLE_SECONDS * 3)

    def call() -> None:
        events.append("call")
        time.sleep(MIN_SAMPLE_SECONDS * 2)

    timing = time_calls(call, repeat=3, reference=reference)
    assert events == ["call"] + ["reference", "call"] * 3  # warm-up, then interleaved
    assert timing.reference is not None and timing.reference.samples == 3
    assert timing.reference.minimum >= MIN_SAMPLE_SECONDS * 3
    assert timing.minimum >= MIN_SAMPLE_SECONDS * 2
    assert time_calls(call, repeat=1).reference is None
