"""The roofline of a bandwidth row: its arithmetic, the in-cache grid its compute bound is
timed on, how the probe is timed next to the row, and how each sample is judged against the
bounds timed beside it.

The timed calls here advance a fake clock or are checked for what was called, not for how
long it took, so that a busy machine cannot fail the tests.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterator

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import backends
from benchmarks import measure, workloads
from benchmarks.measure import prepare_backend, prepare_reference, time_together, with_probe
from benchmarks.report import _rows_table
from benchmarks.results import OK, Row, with_derived
from benchmarks.roofline import (
    MIN_INTERIOR_ROWS,
    Roofline,
    compute_shape,
    domain_points,
    paired_fraction,
)
from benchmarks.timing import PROBE_CALLS, TimedCall, Timing, time_in_rounds

seconds = st.floats(min_value=1e-6, max_value=10.0)
LARGE = workloads.SIZES["large"]


@given(copy=seconds, compute=seconds, median=seconds)
def test_the_roofline_is_the_slower_bound_and_its_fraction_the_larger_one(
    copy, compute, median
):
    roofline = Roofline(copy, compute)
    fraction = roofline.fraction(median)
    assert fraction == pytest.approx(max(copy / median, compute / median))
    assert fraction >= copy / median and fraction >= compute / median
    assert roofline.binding == ("copy" if copy >= compute else "compute")


def test_a_time_that_is_not_positive_has_no_fraction():
    with pytest.raises(ValueError, match="positive"):
        Roofline(1.0, 2.0).fraction(0.0)


def _bandwidth_row(median: float, copy_bandwidth: float, compute_bound: float | None) -> Row:
    return Row("hdiff", "large", LARGE, "c_cpu", "stencilforge", OK, 2**26, median=median,
               minimum=median, maximum=median, samples=1, copy_bandwidth=copy_bandwidth,
               best_copy_bandwidth=copy_bandwidth, compute_bound=compute_bound)


@given(median=seconds, bandwidth=st.floats(1e8, 1e11), compute=seconds)
def test_a_bandwidth_row_reaches_at_least_its_copy_fraction_of_its_roofline(
    median, bandwidth, compute
):
    (row,) = with_derived([_bandwidth_row(median, bandwidth, compute)], 1e10)
    assert row.copy_fraction is not None and row.roofline_fraction is not None
    assert row.copy_bound == pytest.approx(2**26 / bandwidth)
    assert row.roofline_fraction == pytest.approx(max(row.copy_bound, compute) / median)
    assert row.roofline_fraction >= row.copy_fraction * (1 - 1e-12)
    if row.roofline_bound == "copy":
        assert row.roofline_fraction == pytest.approx(row.copy_fraction)
    else:
        assert row.roofline_fraction == pytest.approx(compute / median)


def test_rows_without_a_copy_beside_them_or_a_compute_bound_have_no_roofline():
    in_cache = attrs.evolve(_bandwidth_row(1.0, 1e10, 0.5), copy_bandwidth=None)
    unbounded = _bandwidth_row(1.0, 1e10, None)
    for row in with_derived([in_cache, unbounded], 1e10):
        assert row.roofline_fraction is None and row.roofline_bound is None


def test_the_roofline_fields_survive_the_json_round_trip():
    (row,) = with_derived([attrs.evolve(_bandwidth_row(1.0, 1e10, 0.5),
                                        compute_shape=(32, 256, 64),
                                        roofline_samples=((1.0, 0.4, 0.5), (1.1, 0.3, 0.6)))],
                          1e10)
    assert Row.from_dict(json.loads(json.dumps(row.to_dict()))) == row


samples = st.lists(st.tuples(seconds, seconds, seconds), min_size=1, max_size=21)


@given(samples=samples)
def test_each_sample_is_judged_against_the_bounds_timed_beside_it(samples):
    fraction, binding = paired_fraction(samples)
    copy = statistics.median(c / s for s, c, _ in samples)
    compute = statistics.median(p / s for s, _, p in samples)
    assert fraction == pytest.approx(max(copy, compute))
    assert binding == ("copy" if copy >= compute else "compute")


def test_a_drift_that_slows_row_and_bounds_alike_leaves_the_paired_fraction_steady():
    # Half the samples in a slow moment (everything 1.6x slower): the medians of row and
    # bound fall in different modes, the pairs do not.
    quick = [(1.0, 0.5, 0.9)] * 5 + [(1.6, 0.8, 1.44)] * 6
    slow_bounds = [(1.0, 0.5, 0.9)] * 6 + [(1.6, 0.8, 1.44)] * 5
    assert paired_fraction(quick)[0] == pytest.approx(0.9)
    assert paired_fraction(slow_bounds)[0] == pytest.approx(0.9)


def test_a_row_with_samples_takes_its_roofline_fraction_from_them():
    row = attrs.evolve(_bandwidth_row(2.0, 2**26 / 0.5, 0.9),
                       roofline_samples=((1.0, 0.5, 0.9), (2.0, 0.5, 1.9), (1.0, 0.5, 0.7)))
    (derived,) = with_derived([row], 1e10)
    assert derived.roofline_fraction == pytest.approx(0.9)
    assert derived.roofline_bound == "compute"
    assert derived.copy_bound == pytest.approx(0.5) and derived.compute_bound == 0.9


def test_the_table_flags_a_row_that_beat_its_roofline():
    beaten, below = with_derived([
        attrs.evolve(_bandwidth_row(1.0, 2**26 / 0.5, 1.5), backend="beaten"),
        attrs.evolve(_bandwidth_row(1.0, 2**26 / 0.5, 0.9), backend="below"),
    ], 1e10)
    lines = {line.split()[3]: line for line in _rows_table([beaten, below])[2:]}
    assert "150% (compute) !" in lines["beaten"]
    assert "90% (compute)" in lines["below"] and "!" not in lines["below"]


def test_a_paired_fraction_needs_positive_samples():
    with pytest.raises(ValueError, match="at least one"):
        paired_fraction([])
    with pytest.raises(ValueError, match="positive"):
        paired_fraction([(0.0, 1.0, 1.0)])


@pytest.mark.parametrize("name", list(workloads.WORKLOADS))
@pytest.mark.parametrize("cache_bytes", [2**20, 32 * 2**20, 2**30])
def test_the_in_cache_grid_cuts_only_the_first_axis_to_a_quarter_of_the_cache(name, cache_bytes):
    workload = workloads.WORKLOADS[name]
    shape = compute_shape(workload, LARGE, cache_bytes)
    assert shape[1:] == LARGE[1:]
    assert 2 * workload.halo + MIN_INTERIOR_ROWS <= shape[0] <= LARGE[0] or shape == LARGE
    at_least = shape[0] == 2 * workload.halo + MIN_INTERIOR_ROWS
    assert workload.bytes_per_call(shape) <= cache_bytes // 4 or at_least or shape == LARGE
    one_more = (shape[0] + 1, *shape[1:])
    assert shape == LARGE or workload.bytes_per_call(one_more) > cache_bytes // 4 or at_least


def test_the_domain_points_are_those_the_program_writes():
    hdiff = workloads.WORKLOADS["hdiff"]
    vadv = workloads.WORKLOADS["vertical_advection"]
    assert domain_points(hdiff, (32, 256, 64)) == 28 * 252 * 64
    assert domain_points(vadv, (10, 256, 64)) == 8 * 254 * 62


def test_a_probe_is_warmed_then_timed_right_after_each_sample_of_its_row():
    log: list[str] = []
    now = [0.0]

    def logged(name: str) -> Callable[[], None]:
        def call() -> None:
            log.append(name)
            now[0] += 1.0  # long calls: one call a sample

        return call

    probe = TimedCall(logged("probe"))
    calls = [TimedCall(logged("row"), probe=probe), TimedCall(logged("other"))]
    time_in_rounds(calls, 3, reference=logged("copy"), clock=lambda: now[0])
    # After the calibration calls, every sample of the row is one copy, the row, one warm
    # probe call and the timed probe calls: the three within the same few milliseconds.
    text = " ".join(log[log.index("copy"):])
    moment = " ".join(["copy", "row", *["probe"] * (1 + PROBE_CALLS)])
    assert text.count(moment) == 3
    assert log.count("copy") == 6  # one per sample of each call, none for the probe
    assert text.replace(moment, "").split() == ["copy", "other"] * 3


def _clocked(clock: list[float], steps: Iterator[float]) -> Callable[[], None]:
    def call() -> None:
        clock[0] += next(steps)

    return call


def test_each_moment_pairs_a_sample_with_the_copy_before_and_the_best_probe_after():
    now = [0.0]
    # Calibration: row, then each sample: copy, row, warm probe, PROBE_CALLS probes.
    row_steps = iter([1.0, 1.0, 3.0])
    copy_steps = iter([0.5, 0.7])
    probe_steps = iter([9.0, *[0.3, 0.2, 0.4, 0.2, 0.5][:PROBE_CALLS],
                        9.0, *[0.6, 0.6, 0.6, 0.6, 0.6][:PROBE_CALLS]])
    probe = TimedCall(_clocked(now, probe_steps))
    (timing,) = time_in_rounds([TimedCall(_clocked(now, row_steps), probe=probe)], 2,
                               reference=_clocked(now, copy_steps), clock=lambda: now[0])
    assert isinstance(timing, Timing)
    flat = [value for m in timing.moments for value in (m.seconds, m.reference, m.probe)]
    assert flat == pytest.approx([1.0, 0.5, 0.2, 3.0, 0.7, 0.6])
    assert timing.probe is not None and timing.probe.median == pytest.approx(0.4)


def test_the_probe_is_timed_with_its_row_and_scaled_to_the_rows_points(monkeypatch):
    counts: list[int] = []
    original = measure.time_in_rounds

    def recorded(calls, repeat, reference=None):
        counts.append(len(calls))
        assert [call.probe is not None for call in calls] == [True, True]
        return original(calls, repeat, reference)

    monkeypatch.setattr(measure, "time_in_rounds", recorded)
    workload = workloads.WORKLOADS["hdiff"]
    grid, probe = (24, 24, 8), (12, 24, 8)
    rows = time_together([
        with_probe(prepare_reference(workload, "small", grid),
                   prepare_reference(workload, "small", probe), workload),
        with_probe(prepare_backend(workload, "small", "e", backends.embedded_numpy, grid),
                   prepare_backend(workload, "small", "e", backends.embedded_numpy, probe),
                   workload),
    ], 2)
    assert counts == [2]
    scale = (20 * 20 * 8) / (8 * 20 * 8)
    for row in rows:
        assert row.compute_shape == probe and row.compute_median is not None
        assert row.compute_bound == pytest.approx(row.compute_median * scale)
        assert row.roofline_samples == ()  # no copy beside them: no copy bound per sample


def test_a_probe_that_failed_leaves_the_row_unbounded_and_says_why():
    workload = workloads.WORKLOADS["hdiff"]
    prepared = prepare_reference(workload, "small")
    failed = attrs.evolve(prepared.row, status="FAILED", message="result differs\nmore")
    kept = with_probe(prepared, failed, workload)
    assert isinstance(kept, measure.Contender) and kept.timed.probe is None
    assert kept.row.message == "no compute bound: result differs"


@pytest.mark.skipif(
    "c_cpu" not in backends.available_backends(), reason="c_cpu needs a C compiler"
)
@pytest.mark.parametrize("name", ["hdiff", "vertical_advection"])
def test_c_cpu_runs_the_same_code_on_the_in_cache_grid_as_on_the_large_one(name):
    workload = workloads.WORKLOADS[name]
    program = workload.program.with_backend(backends.c_cpu)

    def code(shape: tuple[int, int, int]) -> str:
        arguments = measure.backend_arguments(
            workload, workload.host_arguments(shape), backends.c_cpu
        )
        return program.lower(*arguments).as_text()

    assert code(compute_shape(workload, LARGE, 32 * 2**20)) == code(LARGE)


def test_a_probes_fields_are_the_leading_rows_of_arrays_of_its_rows_grid():
    workload = workloads.WORKLOADS["hdiff"]
    grid, probe = (24, 24, 8), (12, 24, 8)
    placed = measure.placed_host_arguments(workload, probe, grid)
    plain = workload.host_arguments(probe)
    assert placed.keys() == plain.keys()
    for name, value in plain.items():
        if isinstance(value, np.ndarray):
            assert placed[name].shape == probe and placed[name].base.shape == grid
            np.testing.assert_array_equal(placed[name], value)
        else:
            assert placed[name] == value
    assert measure.placed_host_arguments(workload, grid, grid)["inp"].base is None
