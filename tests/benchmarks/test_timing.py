"""``time_calls``: batches for microsecond calls, one call per sample for long ones.

The calls timed here advance a fake clock by set amounts instead of taking real time, so that
the figures are checked exactly and a busy machine cannot fail the tests.
"""

from __future__ import annotations

import statistics

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


class FakeClock:
    """A clock that stands still until a timed call advances it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_short_calls_are_timed_in_batches_and_reported_per_call(clock):
    calls = []

    def call() -> None:
        calls.append(1)
        clock.advance(MIN_SAMPLE_SECONDS / 19.5)

    timing = time_calls(call, repeat=5, clock=clock)
    assert timing.samples == 5
    # Warm-up, a calibration batch of 20, then five batches of 20 calls.
    assert len(calls) == 1 + 20 + 5 * 20
    # Per call, not per batch.
    assert timing.minimum == pytest.approx(MIN_SAMPLE_SECONDS / 19.5)
    assert timing.maximum == pytest.approx(MIN_SAMPLE_SECONDS / 19.5)


def test_long_calls_are_timed_one_by_one(clock):
    calls = []
    durations = iter([2.0, 2.0, 3.0, 5.0])  # warm-up, then three samples

    def call() -> None:
        calls.append(1)
        clock.advance(MIN_SAMPLE_SECONDS * next(durations))

    timing = time_calls(call, repeat=3, clock=clock)
    assert len(calls) == 1 + 3
    assert timing.samples == 3
    assert (timing.minimum, timing.median, timing.maximum) == pytest.approx(
        (MIN_SAMPLE_SECONDS * 2, MIN_SAMPLE_SECONDS * 3, MIN_SAMPLE_SECONDS * 5)
    )


def test_a_short_call_is_calibrated_on_a_second_batch_not_on_its_warm_up(clock):
    # The first call pays for warm-up (10x slower); the batch fits the calls after it.
    # (Batches are rounded up: MIN_SAMPLE_SECONDS / 3.5 and / 39.5 ask for 4 and 40.)
    calls = 0

    def call() -> None:
        nonlocal calls
        calls += 1
        clock.advance(MIN_SAMPLE_SECONDS / (3.5 if calls == 1 else 39.5))

    timing = time_calls(call, repeat=2, clock=clock)
    # Warm-up; 4 calls calibrate a batch of 40; two samples of 40 calls.
    assert calls == 1 + 4 + 2 * 40
    assert timing.median == pytest.approx(MIN_SAMPLE_SECONDS / 39.5)


def test_synchronize_runs_after_every_call():
    results = []
    time_calls(lambda: len(results), repeat=2, synchronize=results.append)
    assert results == list(range(len(results)))


def test_a_timing_needs_samples():
    with pytest.raises(ValueError, match="at least one"):
        Timing.of([])


def test_a_reference_is_timed_once_right_before_each_sample(clock):
    events = []

    def reference() -> None:
        events.append("reference")
        clock.advance(MIN_SAMPLE_SECONDS * 3)

    def call() -> None:
        events.append("call")
        clock.advance(MIN_SAMPLE_SECONDS * 2)

    timing = time_calls(call, repeat=3, reference=reference, clock=clock)
    assert events == ["call"] + ["reference", "call"] * 3  # warm-up, then interleaved
    assert timing.reference is not None and timing.reference.samples == 3
    # Each is timed on its own: the reference's time is not in the call's samples.
    assert timing.reference.median == pytest.approx(MIN_SAMPLE_SECONDS * 3)
    assert timing.median == timing.maximum == pytest.approx(MIN_SAMPLE_SECONDS * 2)
    assert time_calls(call, repeat=1, clock=clock).reference is None


def _long_call(name: str, events: list[str], clock: FakeClock) -> TimedCall:
    def call() -> None:
        events.append(name)
        clock.advance(MIN_SAMPLE_SECONDS * 1.5)

    return TimedCall(call)


def test_calls_timed_in_rounds_take_turns_in_an_order_that_changes_every_round(clock):
    events: list[str] = []
    calls = [_long_call(name, events, clock) for name in "abcd"]
    timings = time_in_rounds(calls, repeat=16, rounds=8, clock=clock)
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
    time_in_rounds(calls, repeat=16, rounds=8, clock=clock)
    assert "".join(events[72:]) == timed


def test_a_reference_is_timed_before_every_sample_of_every_call_in_rounds(clock):
    events: list[str] = []
    calls = [_long_call(name, events, clock) for name in "ab"]
    timings = time_in_rounds(
        calls, repeat=2, reference=lambda: events.append("copy"), rounds=2, clock=clock
    )
    assert events[2:].count("copy") == 4
    assert all(events[i] == "copy" for i in range(2, len(events), 2))  # before every sample
    assert all(isinstance(t, Timing) and t.reference is not None for t in timings)
    assert [t.reference.samples for t in timings if isinstance(t, Timing) and t.reference] == [2, 2]


def test_a_call_that_raises_in_a_round_is_reported_and_the_others_go_on(clock):
    events: list[str] = []
    failures = iter([False, False, True])

    def flaky() -> None:
        clock.advance(MIN_SAMPLE_SECONDS * 1.5)
        if next(failures, True):
            raise RuntimeError("device lost")

    timings = time_in_rounds(
        [TimedCall(flaky), _long_call("b", events, clock)], repeat=4, rounds=4, clock=clock
    )
    assert isinstance(timings[0], RuntimeError) and "device lost" in str(timings[0])
    assert isinstance(timings[1], Timing) and timings[1].samples == 4


def test_fewer_samples_than_rounds_mean_fewer_rounds(clock):
    events: list[str] = []
    timings = time_in_rounds([_long_call("a", events, clock)], repeat=2, rounds=10, clock=clock)
    assert isinstance(timings[0], Timing) and timings[0].samples == 2
    assert len(timings[0].rounds) == 2


def test_each_call_records_the_median_of_every_round(clock):
    # A call that is slow in rounds 2 and 3 only: its rounds show it, in round order.
    count = 0

    def moody() -> None:
        nonlocal count
        count += 1  # 1: calibration; then two samples a round
        slow = 6 <= count <= 9
        clock.advance(MIN_SAMPLE_SECONDS * (30 if slow else 1.5))

    events: list[str] = []
    timings = time_in_rounds(
        [TimedCall(moody), _long_call("b", events, clock)], repeat=10, rounds=5, clock=clock
    )
    moody_timing, steady = timings
    assert isinstance(moody_timing, Timing) and isinstance(steady, Timing)
    fast, slow = MIN_SAMPLE_SECONDS * 1.5, MIN_SAMPLE_SECONDS * 30
    assert moody_timing.rounds == pytest.approx((fast, fast, slow, slow, fast))
    assert steady.rounds == pytest.approx((fast,) * 5)
    assert time_calls(moody, 2, clock=clock).rounds == ()  # timed alone: no rounds


def test_a_paired_ratio_follows_the_rounds_where_the_medians_jump_between_modes():
    # Both calls share the machine's modes (22 and 48 us); b was 5% slower in every round.
    modes = [22e-6] * 5 + [48e-6] * 4 + [22e-6, 48e-6]
    a = modes[:5] + modes[5:9] + [48e-6, 48e-6]  # 6 of 11 rounds slow: median 48 us
    b = [m * 1.05 for m in modes]  # 5 of 11 rounds slow: median 23 us
    assert statistics.median(a) / statistics.median(b) == pytest.approx(48 / (22 * 1.05))
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
