"""The report marks, per workload and size, the fastest row and our best backend against the
best peer."""

from __future__ import annotations

import json

import attrs
import pytest

from benchmarks.report import _rows_table, _standings_table
from benchmarks.results import (
    BACKEND,
    FAILED,
    OK,
    PEER,
    REFERENCE,
    SKIPPED,
    Row,
    ratio,
    with_derived,
)
from benchmarks.standings import standings


def _row(backend: str, kind: str, median: float | None, size: str = "small",
         status: str = OK) -> Row:
    return Row("hdiff", size, (16, 16, 8), backend, kind, status, 4096, median=median,
               minimum=median, maximum=median, samples=1 if median else 0)


ROWS = [
    _row("numpy", REFERENCE, 40e-6),
    _row("c_cpu", BACKEND, 3e-6),
    _row("jax_jit", BACKEND, 50e-6),
    _row("numba", PEER, 6e-6),
    _row("xla_peer", PEER, 45e-6),
    _row("numpy", REFERENCE, 0.2, size="large"),
    _row("c_cpu", BACKEND, 0.05, size="large"),
    _row("dace_cpu", BACKEND, None, size="large", status=FAILED),
    _row("numba", PEER, 0.03, size="large"),
    _row("xla_peer", PEER, None, size="large", status=SKIPPED),
]


def test_a_standing_names_the_fastest_our_best_and_the_best_peer():
    small, large = standings(ROWS)
    assert (small.workload, small.size, small.fastest) == ("hdiff", "small", "c_cpu")
    assert (small.best_ours, small.best_peer) == ("c_cpu", "numba")
    assert small.ratio_to_best_peer == pytest.approx(2.0)
    assert (large.fastest, large.best_ours, large.best_peer) == ("numba", "c_cpu", "numba")
    assert large.ratio_to_best_peer == pytest.approx(0.6)


def test_failed_and_skipped_rows_take_no_part():
    rows = [_row("c_cpu", BACKEND, 1e-6, status=FAILED), _row("jax_jit", BACKEND, 5e-6),
            _row("xla_peer", PEER, None, status=SKIPPED)]
    (standing,) = standings(rows)
    assert (standing.fastest, standing.best_ours, standing.best_peer) == ("jax_jit", "jax_jit",
                                                                          None)
    assert standing.ratio_to_best_peer is None


def test_without_peers_there_is_no_ratio_but_still_a_fastest():
    (standing,) = standings([_row("numpy", REFERENCE, 4e-5), _row("c_cpu", BACKEND, 5e-5)])
    assert standing.fastest == "numpy"
    assert standing.ratio_to_best_peer is None


def test_the_rows_table_marks_the_fastest_and_our_ratio_on_our_best_row():
    lines = _rows_table(ROWS)
    assert lines[0].split()[-1] == "mark"
    by_backend = {(line.split()[1], line.split()[3]): line for line in lines[2:]}
    assert by_backend["small", "c_cpu"].endswith("* ours 2x vs numba")
    assert by_backend["large", "numba"].endswith("*")
    assert by_backend["large", "c_cpu"].endswith("ours 0.6x vs numba")
    for key in (("small", "jax_jit"), ("small", "xla_peer"), ("large", "dace_cpu")):
        assert "*" not in by_backend[key] and "ours" not in by_backend[key], key


def test_the_standings_table_has_one_line_per_workload_and_size():
    lines = _standings_table(ROWS)
    assert len(lines) == 2 + 2
    assert lines[2].split()[:3] == ["hdiff", "small", "c_cpu"]
    assert lines[2].endswith("2x")


def test_standings_go_into_the_json(tmp_path):
    from benchmarks.report import to_json  # noqa: PLC0415

    class _Report:  # what to_json reads of a report
        rows = tuple(ROWS)
        pipeline = ()
        cache_hits: dict[str, float] = {}  # noqa: RUF012
        comparison = None
        notes = ()

        def header(self) -> dict[str, object]:
            return {}

    data = to_json(_Report())  # type: ignore[arg-type]
    assert [s["fastest"] for s in data["standings"]] == ["c_cpu", "numba"]
    assert data["standings"][0]["ratio_to_best_peer"] == pytest.approx(2.0)


def test_rows_timed_in_the_same_rounds_are_compared_round_by_round():
    # The machine switched between 22 and 48 us for both rows; each median fell on another mode.
    modes = (22e-6, 22e-6, 48e-6, 48e-6, 22e-6)
    ours = attrs.evolve(_row("dace_cpu", BACKEND, 48e-6), round_medians=(22e-6, 48e-6, 48e-6,
                                                                         48e-6, 22e-6))
    peer = attrs.evolve(_row("xla_peer", PEER, 22e-6), round_medians=modes)
    numpy_row = attrs.evolve(_row("numpy", REFERENCE, 96e-6),
                             round_medians=tuple(2 * m for m in modes))
    (standing,) = standings([numpy_row, ours, peer])
    assert standing.best_peer_median / standing.best_ours_median < 0.5  # the medians' story
    assert standing.ratio_to_best_peer == pytest.approx(1.0)
    derived = {row.backend: row for row in with_derived([numpy_row, ours, peer], 1e9)}
    assert derived["xla_peer"].ratio_to_numpy == pytest.approx(2.0)
    assert derived["dace_cpu"].ratio_to_numpy == pytest.approx(2.0)
    # Without rounds (timed alone), the medians are compared.
    assert ratio(_row("numpy", REFERENCE, 96e-6), ours) == pytest.approx(2.0)


def test_round_medians_survive_the_json_round_trip():
    row = attrs.evolve(_row("c_cpu", BACKEND, 3e-6), round_medians=(3e-6, 4e-6))
    assert Row.from_dict(json.loads(json.dumps(row.to_dict()))) == row
