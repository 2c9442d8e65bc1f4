"""The roofline of a bandwidth row: its arithmetic, the in-cache grid its compute bound is
timed on, and how the probe is timed next to the row.

The timed calls here advance a fake clock or are checked for what was called, not for how
long it took, so that a busy machine cannot fail the tests.
"""

from __future__ import annotations

import itertools

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import backends
from benchmarks import measure, workloads
from benchmarks.measure import prepare_backend, prepare_reference, time_together, with_probe
from benchmarks.results import OK, Row, with_derived
from benchmarks.roofline import MIN_INTERIOR_ROWS, Roofline, compute_shape, domain_points
from benchmarks.timing import TimedCall, time_in_rounds

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
                                        compute_shape=(32, 256, 64))], 1e10)
    assert Row.from_dict(row.to_dict()) == row


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


def test_a_call_timed_in_cache_is_warmed_instead_of_following_the_reference():
    log: list[str] = []
    calls = [TimedCall(lambda: log.append("row")),
             TimedCall(lambda: log.append("probe"), in_cache=True)]
    time_in_rounds(calls, 3, reference=lambda: log.append("copy"))
    for before, after in itertools.pairwise(log):
        if after == "row":
            assert before in ("copy", "row")  # batches follow the copy
        if before == "copy":
            assert after == "row"
    assert log.count("copy") >= 3  # one per sample of the row, none for the probe


def test_the_probe_is_timed_with_its_row_and_scaled_to_the_rows_points(monkeypatch):
    counts: list[int] = []
    original = measure.time_in_rounds

    def recorded(calls, repeat, reference=None):
        counts.append(len(calls))
        assert [call.in_cache for call in calls] == [False, False, True, True]
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
    assert counts == [4]
    scale = (20 * 20 * 8) / (8 * 20 * 8)
    for row in rows:
        assert row.compute_shape == probe and row.compute_median is not None
        assert row.compute_bound == pytest.approx(row.compute_median * scale)


def test_a_probe_that_failed_leaves_the_row_unbounded_and_says_why():
    workload = workloads.WORKLOADS["hdiff"]
    prepared = prepare_reference(workload, "small")
    failed = attrs.evolve(prepared.row, status="FAILED", message="result differs\nmore")
    kept = with_probe(prepared, failed, workload)
    assert isinstance(kept, measure.Contender) and kept.compute is None
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
