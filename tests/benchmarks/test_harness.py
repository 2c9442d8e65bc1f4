"""The benchmark harness: the ``--quick`` smoke run CI relies on, and ``--compare``.

One ``python -m benchmarks --quick`` subprocess (module-scoped, a few seconds) backs the JSON
checks; the other tests call the harness's pieces in-process on the small grid.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import attrs
import numpy as np
import pytest

import backends
from backends import EmbeddedBackend
from backends.embedded import EmbeddedLoading
from benchmarks import harness, measure, timing, workloads
from benchmarks.__main__ import main
from benchmarks.comparison import compare, load_rows
from benchmarks.machine import copy_kernel, last_level_cache_bytes
from benchmarks.measure import (
    measure_backend,
    prepare_backend,
    prepare_reference,
    time_together,
)
from benchmarks.results import FAILED, OK, Row, with_derived
from benchmarks.selection import NOT_TIMED_BY_DEFAULT, select_backends

TIMED_FIELDS = ("median", "minimum", "maximum")


def _row(backend: str, median: float, status: str = OK, size: str = "small") -> Row:
    return Row("laplacian", size, (16, 16, 8), backend, "stencilforge", status, 32768,
               median=median, minimum=median, maximum=median, samples=1)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    """A ``--quick`` run compared against a made-up earlier run where everything took 2 s,
    started from a directory other than the project's (the harness is installed)."""
    directory = tmp_path_factory.mktemp("bench")
    old = directory / "old.json"
    old_rows = [_row("embedded_numpy", 2.0, size=size).to_dict() for size in ("small", "large")]
    old.write_text(json.dumps({"rows": old_rows}))
    output = directory / "out"
    # Without the peers: CI's own `python -m benchmarks --quick` runs them; these tests check
    # the rows of the backends.
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--no-peers", "--output", str(output),
         "--compare", str(old)],
        cwd=directory, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((output / "results.json").read_text()), output


@pytest.fixture(scope="module")
def fresh_backends() -> list[str]:
    """The backends a run without --backends times in a fresh process (this one may have
    registered more, as tests do): the available ones but those not timed by default."""
    result = subprocess.run(
        [sys.executable, "-c", "import backends; print(*backends.available_backends())"],
        capture_output=True, text=True, check=True,
    )
    return [name for name in result.stdout.split() if name not in NOT_TIMED_BY_DEFAULT]


@pytest.mark.slow  # the quick run takes two minutes on two cores
def test_quick_run_covers_every_available_backend_workload_and_size(quick_run, fresh_backends):
    data, _ = quick_run
    found = {(r["backend"], r["workload"], r["size"]) for r in data["rows"]}
    expected_backends = [*fresh_backends, "numpy"]
    for backend in expected_backends:
        for workload in workloads.WORKLOADS:
            for size in workloads.SIZES:
                assert (backend, workload, size) in found


@pytest.mark.slow  # the quick run takes two minutes on two cores
def test_quick_run_verifies_every_row_and_reports_positive_times(quick_run):
    data, _ = quick_run
    for row in data["rows"]:
        assert row["status"] == OK, row
        assert all(row[name] > 0 for name in TIMED_FIELDS), row
        assert row["minimum"] <= row["median"] <= row["maximum"]
        assert row["bytes_per_call"] > 0
        assert row["copy_fraction"] > 0
        assert row["ratio_to_numpy"] > 0


@pytest.mark.slow  # the quick run takes two minutes on two cores
def test_quick_run_times_rows_beyond_the_cache_beside_the_copy_kernel(quick_run):
    cache_bytes = last_level_cache_bytes()
    rows = [row for row in quick_run[0]["rows"] if row["median"]]
    for row in rows:
        if row["bytes_per_call"] > cache_bytes:
            assert row["copy_bandwidth"] > 0 and row["best_copy_bandwidth"] > 0, row
            assert row["best_copy_bandwidth"] >= row["copy_bandwidth"]
            assert row["copy_fraction"] == pytest.approx(
                row["bytes_per_call"] / row["median"] / row["copy_bandwidth"]
            )
        else:
            assert row["copy_bandwidth"] is None, row
    assert any(row["copy_bandwidth"] for row in rows)  # the large grid exceeds the cache


@pytest.mark.slow  # the quick run takes two minutes on two cores
def test_quick_run_puts_every_bandwidth_row_against_its_roofline(quick_run):
    data, output = quick_run
    bandwidth = [row for row in data["rows"] if row["median"] and row["copy_bandwidth"]]
    assert bandwidth
    for row in bandwidth:
        assert len(row["compute_shape"]) == 3 and row["compute_shape"][1:] == row["shape"][1:]
        assert row["compute_shape"][0] < row["shape"][0]
        assert row["compute_median"] > 0 and row["compute_bound"] > row["compute_median"]
        assert row["copy_bound"] == pytest.approx(row["bytes_per_call"] / row["copy_bandwidth"])
        # Every sample with the copy timed before it and the probe after it; the fraction
        # judges each sample against those, the bounds shown are their medians.
        samples = row["roofline_samples"]
        assert len(samples) == row["samples"]
        assert statistics.median(s for s, _, _ in samples) == pytest.approx(row["median"])
        assert statistics.median(c for _, c, _ in samples) == pytest.approx(row["copy_bound"])
        assert statistics.median(p for _, _, p in samples) == pytest.approx(
            row["compute_bound"])
        copy = statistics.median(c / s for s, c, _ in samples)
        compute = statistics.median(p / s for s, _, p in samples)
        assert row["roofline_bound"] == ("copy" if copy >= compute else "compute")
        assert row["roofline_fraction"] == pytest.approx(max(copy, compute))
    workloads_bounded = {row["workload"] for row in bandwidth}
    assert {f"roofline-{w}.png" for w in workloads_bounded} <= {p.name for p in output.iterdir()}
    assert (output / "results.png").exists()


@pytest.mark.slow  # the quick run takes two minutes on two cores
def test_quick_run_records_the_load_it_ran_under(quick_run):
    (note,) = [note for note in quick_run[0]["notes"] if note.startswith("load average")]
    assert " at the start, " in note and " at the end" in note


def test_a_row_is_compared_with_the_copy_timed_beside_it():
    beside = _row("a", 0.5, size="large")
    beside = attrs.evolve(beside, minimum=0.25, copy_bandwidth=1e5, best_copy_bandwidth=2e5)
    alone = _row("b", 0.5, size="large")
    derived = {row.backend: row for row in with_derived([beside, alone], 1e6)}
    assert derived["a"].copy_fraction == pytest.approx(32768 / 0.5 / 1e5)
    assert derived["a"].best_copy_fraction == pytest.approx(32768 / 0.25 / 2e5)
    assert derived["b"].copy_fraction == pytest.approx(32768 / 0.5 / 1e6)


def test_the_copy_kernel_timed_beside_a_row_sets_its_copy_bandwidth():
    kernel = copy_kernel(array_bytes=2**20)
    row = measure_backend(
        workloads.WORKLOADS["laplacian"], "small", "embedded_numpy", backends.embedded_numpy,
        3, kernel,
    )
    assert row.status == OK, row.message
    assert row.copy_bandwidth is not None and row.best_copy_bandwidth is not None
    assert 0 < row.copy_bandwidth <= row.best_copy_bandwidth


@pytest.mark.slow  # the quick run takes two minutes on two cores
def test_quick_run_header_describes_machine_limit_and_options(quick_run, fresh_backends):
    header = quick_run[0]["header"]
    assert header["machine"]["cores"] >= 1
    assert header["machine"]["numpy"] == np.__version__
    assert header["copy_bandwidth"]["bytes_per_second"] > 0
    assert header["options"]["quick"] is True
    assert set(header["backends"]) == set(fresh_backends)


@pytest.mark.slow  # the quick run takes two minutes on two cores
def test_quick_run_reports_the_cold_compile_as_the_sum_of_the_cold_stages(quick_run):
    figures = [f for f in quick_run[0]["pipeline"] if f["cold_stages"]]
    for f in figures:
        total = sum(stage["seconds"] for stage in f["cold_stages"])
        assert f["cold_compile_seconds"] == pytest.approx(total)
        assert 0 < f["cold_compile_seconds"] <= f["cold_first_result_seconds"]
    if "c_cpu" in backends.available_backends():
        assert any(f["backend"] == "c_cpu" for f in figures)


@pytest.mark.slow  # the quick run takes two minutes on two cores
def test_quick_run_writes_csv_next_to_json(quick_run):
    data, output = quick_run
    lines = (output / "results.csv").read_text().splitlines()
    assert len(lines) == 1 + len(data["rows"])


@pytest.mark.slow  # the quick run takes two minutes on two cores
def test_quick_run_compares_with_the_earlier_run(quick_run):
    comparison = quick_run[0]["comparison"]
    assert {(c["backend"], c["size"]) for c in comparison} == {
        ("embedded_numpy", "small"), ("embedded_numpy", "large")
    }
    for c in comparison:
        assert c["speedup"] == pytest.approx(2.0 / c["new_median"])


def test_compare_pairs_rows_by_key_and_divides_old_by_new():
    old = [_row("a", 2.0), _row("b", 1.0), _row("gone", 1.0), _row("c", 1.0, status=FAILED)]
    new = [_row("a", 1.0), _row("b", 4.0), _row("c", 1.0), _row("new", 1.0)]
    result = {c.backend: c.speedup for c in compare(old, new)}
    assert result == {"a": 2.0, "b": 0.25}


def test_compare_rejects_a_file_that_is_not_a_results_file(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"something": 1}))
    with pytest.raises(ValueError, match="rows"):
        load_rows(path)


def test_compare_reads_back_what_a_run_wrote(tmp_path):
    rows = [_row("a", 2.0), _row("b", 3.0)]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"rows": [r.to_dict() for r in rows]}))
    assert load_rows(path) == rows


def test_unknown_backend_is_an_error_naming_the_available_ones(capsys):
    assert main(["--backends", "no_such_backend", "--output", "unused"]) == 2
    assert "embedded_numpy" in capsys.readouterr().err


def _spoiling_loading(program):
    """Runs the definition, then spoils one output value: a backend with a bug."""
    run = EmbeddedLoading(np)(program)

    def spoiled(*call_args):
        result = run(*call_args)
        call_args[-1][5, 5, 0] += 1.0
        return result

    return spoiled


def _pretend_compilation(program):
    """Not the identity, so the pipeline counts as compiling and ``prog.compile`` runs it."""
    return program


def _variant(name, **steps):
    embedded = EmbeddedBackend(name, np)
    return attrs.evolve(embedded, pipeline=attrs.evolve(embedded.pipeline, **steps))


def test_a_backend_with_a_wrong_result_is_failed_and_not_timed():
    backend = _variant("wrong", loading=_spoiling_loading)
    row = measure_backend(workloads.WORKLOADS["laplacian"], "small", "wrong", backend, 3)
    assert row.status == FAILED
    assert "differs from NumPy" in row.message
    assert row.median is None


def test_a_compiled_backend_is_compiled_first_and_its_direct_call_timed():
    backend = _variant("pretend", compilation=_pretend_compilation)
    row = measure_backend(workloads.WORKLOADS["hdiff"], "small", "pretend", backend, 3)
    assert row.status == OK, row.message
    assert row.compile_seconds is not None and row.compile_seconds > 0
    assert row.direct_call_seconds is not None and row.direct_call_seconds > 0


def test_the_console_script_measures_a_backend_named_as_module_attribute(tmp_path):
    script = Path(sys.executable).with_name("stencilforge-bench")
    examples = Path(__file__).resolve().parents[2] / "examples"
    env = {**os.environ, "PYTHONPATH": str(examples)}
    done = subprocess.run(
        [str(script), "--quick", "--workloads", "laplacian", "--sizes", "small",
         "--backends", "numpy_source_backend:numpy_source", "--output", str(tmp_path / "out")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    rows = {(r["backend"], r["status"]) for r in data["rows"]}
    assert ("numpy_source", OK) in rows
    (figures,) = data["pipeline"]
    assert figures["backend"] == "numpy_source" and not figures["message"], figures


def test_a_backend_reference_that_finds_nothing_is_a_clear_error():
    with pytest.raises(ValueError, match="no_such_module.*importable from the current directory"):
        select_backends(("no_such_module:thing",))
    with pytest.raises(ValueError, match="not a CompiledBackend or EmbeddedBackend"):
        select_backends(("numpy:sum",))


def test_a_run_without_backends_leaves_out_the_emulation_unless_it_is_named():
    assert "cuda_emulated" in backends.available_backends()
    assert "cuda_emulated" not in select_backends(None)
    assert "c_cpu" in select_backends(None)
    assert list(select_backends(("cuda_emulated",))) == ["cuda_emulated"]


def test_the_peers_run_by_default_and_no_peers_leaves_them_out():
    from benchmarks.__main__ import parse_options  # noqa: PLC0415

    assert parse_options([]).peers is True
    assert parse_options(["--no-peers"]).peers is False
    assert parse_options(["--quick", "--peers"]).peers is True


def test_the_rows_of_one_workload_and_size_are_timed_together_in_rounds(monkeypatch, tmp_path):
    batches: list[int] = []

    def recorded(calls, repeat, reference=None, rounds=timing.ROUNDS):
        batches.append(len(calls))
        return timing.time_in_rounds(calls, repeat, reference, rounds)

    monkeypatch.setattr(measure, "time_in_rounds", recorded)
    report = harness.run(
        harness.Options(backends=("embedded_numpy",), workloads=("laplacian", "hdiff"),
                        sizes=("small",), quick=True, peers=False, output=tmp_path),
        show_progress=False,
    )
    # One timing per workload and size, of NumPy and the backend together.
    assert batches == [2, 2]
    assert [(r.workload, r.backend, r.status) for r in report.rows] == [
        ("laplacian", "numpy", OK), ("laplacian", "embedded_numpy", OK),
        ("hdiff", "numpy", OK), ("hdiff", "embedded_numpy", OK),
    ]


def test_a_failed_row_is_kept_in_place_and_the_others_are_still_timed():
    workload = workloads.WORKLOADS["laplacian"]
    prepared = [
        prepare_reference(workload, "small"),
        prepare_backend(workload, "small", "wrong", _variant("wrong", loading=_spoiling_loading)),
        prepare_backend(workload, "small", "embedded_numpy", backends.embedded_numpy),
    ]
    rows = time_together(prepared, 3)
    assert [(r.backend, r.status) for r in rows] == [
        ("numpy", OK), ("wrong", FAILED), ("embedded_numpy", OK)
    ]
    assert rows[0].samples == rows[2].samples == 3 and rows[1].median is None


def test_the_direct_executable_call_is_timed_in_the_same_rounds(monkeypatch):
    counts: list[int] = []

    def recorded(calls, repeat, reference=None, rounds=timing.ROUNDS):
        counts.append(len(calls))
        return timing.time_in_rounds(calls, repeat, reference, rounds)

    monkeypatch.setattr(measure, "time_in_rounds", recorded)
    backend = _variant("pretend", compilation=_pretend_compilation)
    workload = workloads.WORKLOADS["hdiff"]
    rows = time_together(
        [prepare_reference(workload, "small"), prepare_backend(workload, "small", "p", backend)],
        4,
    )
    assert counts == [3]  # NumPy, the program call and its executable, together
    assert rows[1].direct_call_seconds is not None and rows[1].direct_call_seconds > 0
    assert rows[0].direct_call_seconds is None
