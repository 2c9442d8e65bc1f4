"""``time_calls``: batches for microsecond calls, one call per sample for long ones."""

from __future__ import annotations

import statistics
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.timing import (
    MIN_SAMPLE_SECONDS,
    TimedCall,
    Timing,
    paired_ratio,
    time_calls,
    time_in_rounds,
)


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


def _long_call(name: str, events: list[str]) -> TimedCall:
    def call() -> None:
        events.append(name)
        time.sleep(MIN_SAMPLE_SECONDS * 1.5)

    return TimedCall(call)


def test_calls_timed_in_rounds_take_turns_in_an_order_that_changes_every_round():
    events: list[str] = []
    calls = [_long_call(name, events) for name in "abcd"]
    timings = time_in_rounds(calls, repeat=16, rounds=8)
    assert [t.samples for t in timings if isinstance(t, Timing)] == [16] * 4
    assert events[:4] == ["a", "b", "c", "d"]  # one calibration call each
    rounds = ["".join(events[4 + 8 * turn : 12 + 8 * turn]) for turn in range(8)]
    # Each round gives every call two samples in a row, in that round's order.
    for order in rounds:
        assert sorted(order) == sorted("aabbccdd")
        assert all(order[2 * k] == order[2 * k + 1] for k in range(4))
    # The orders differ, so no call always follows the same neighbour (a parallel backend's
    # spinning threads would slow down only the row timed after it).
    assert len(set(rounds)) > 1
    timed = "".join(rounds)
    for name in "abcd":
        predecessors = {timed[i - 1] for i in range(1, len(timed)) if timed[i] == name}
        assert len(predecessors - {name}) >= 2, (name, timed)
    # Seeded by the round's number: a second run takes the same turns.
    time_in_rounds(calls, repeat=16, rounds=8)
    assert "".join(events[72:]) == timed


def test_a_reference_is_timed_before_every_sample_of_every_call_in_rounds():
    events: list[str] = []
    calls = [_long_call(name, events) for name in "ab"]
    timings = time_in_rounds(calls, repeat=2, reference=lambda: events.append("copy"), rounds=2)
    assert events[2:].count("copy") == 4
    assert all(events[i] == "copy" for i in range(2, len(events), 2))  # before every sample
    assert all(isinstance(t, Timing) and t.reference is not None for t in timings)
    assert [t.reference.samples for t in timings if isinstance(t, Timing) and t.reference] == [2, 2]


def test_a_call_that_raises_in_a_round_is_reported_and_the_others_go_on():
    events: list[str] = []
    failures = iter([False, False, True])

    def flaky() -> None:
        time.sleep(MIN_SAMPLE_SECONDS * 1.5)
        if next(failures, True):
            raise RuntimeError("device lost")

    timings = time_in_rounds([TimedCall(flaky), _long_call("b", events)], repeat=4, rounds=4)
    assert isinstance(timings[0], RuntimeError) and "device lost" in str(timings[0])
    assert isinstance(timings[1], Timing) and timings[1].samples == 4


def test_fewer_samples_than_rounds_mean_fewer_rounds():
    events: list[str] = []
    timings = time_in_rounds([_long_call("a", events)], repeat=2, rounds=10)
    assert isinstance(timings[0], Timing) and timings[0].samples == 2


def test_each_call_records_the_median_of_every_round():
    # A call that is slow in rounds 2 and 3 only: its rounds show it, in round order.
    count = 0

    def moody() -> None:
        nonlocal count
        count += 1  # 1: calibration; then two samples a round
        slow = 6 <= count <= 9
        time.sleep(MIN_SAMPLE_SECONDS * (30 if slow else 1.5))

    events: list[str] = []
    timings = time_in_rounds([TimedCall(moody), _long_call("b", events)], repeat=10, rounds=5)
    moody_timing, steady = timings
    assert isinstance(moody_timing, Timing) and isinstance(steady, Timing)
    assert len(moody_timing.rounds) == len(steady.rounds) == 5
    fast = max(moody_timing.rounds[i] for i in (0, 1, 4))
    assert min(moody_timing.rounds[2:4]) > 5 * fast
    assert time_calls(moody, 2).rounds == ()  # timed alone: no rounds


def test_a_paired_ratio_follows_the_rounds_where_the_medians_jump_between_modes():
    # Both calls share the machine's modes (22 and 48 us); b was 5% slower in every round.
    modes = [22e-6] * 5 + [48e-6] * 4 + [22e-6, 48e-6]
    a = modes[:5] + modes[5:9] + [48e-6, 48e-6]  # 6 of 11 rounds slow: median 48 us
    b = [m * 1.05 for m in modes]  # 5 of 11 rounds slow: median 23 us
    assert statistics.median(a) / statistics.median(b) > 1.9
    assert paired_ratio(a, b) == pytest.approx(1 / 1.05)


def test_a_paired_ratio_needs_the_same_rounds():
    assert paired_ratio([], []) is None
    assert paired_ratio([1.0, 2.0], [1.0]) is None
    assert paired_ratio([1.0], [0.0]) is None


@given(
    st.lists(st.floats(1e-7, 1.0), min_size=1, max_size=30),
    st.floats(0.01, 100.0),
)
def test_a_paired_ratio_of_a_scaled_copy_is_the_scale(rounds, scale):
    assert paired_ratio([r * scale for r in rounds], rounds) == pytest.approx(scale)
