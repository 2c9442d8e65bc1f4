"""Pipeline figures: medians over several cold + warm subprocess pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import pipeline_figures


def _result(compile_seconds: float, first: float) -> dict:
    stages = [
        {"stage": "frontend", "step": "f", "seconds": 0.001},
        {"stage": "compilation", "step": "c", "seconds": compile_seconds - 0.001},
    ]
    return {"stages": stages, "first_result_seconds": first, "verified": True, "message": ""}


def test_the_figures_are_medians_and_every_sample_is_kept(monkeypatch):
    # Three pairs; each cold run finds an empty directory of its own.
    answers = iter([
        _result(0.5, 0.6), _result(0.0, 0.05),
        _result(0.9, 1.0), _result(0.0, 0.07),
        _result(0.4, 0.45), _result(0.0, 0.06),
    ])
    directories = []

    def probe(backend, workload, cache_dir, timeout):
        directories.append(cache_dir)
        return next(answers)

    monkeypatch.setattr(pipeline_figures, "run_probe", probe)
    figures = pipeline_figures.measure_pipeline("c_cpu", "hdiff", None, repeat=3)
    assert figures.message == ""
    assert figures.cold_compile_samples == pytest.approx((0.5, 0.9, 0.4))
    assert figures.cold_compile_seconds == pytest.approx(0.5)  # the median run's stages
    assert figures.cold_first_result_seconds == pytest.approx(0.6)
    assert figures.warm_start_seconds == pytest.approx(0.06)
    assert figures.warm_start_samples == pytest.approx((0.05, 0.07, 0.06))
    # Cold and warm share a directory; each pair has its own.
    assert directories[0] == directories[1] and directories[2] == directories[3]
    assert len({directories[0], directories[2], directories[4]}) == 3


def test_a_failing_probe_becomes_the_message(monkeypatch):
    def probe(backend, workload, cache_dir, timeout):
        raise RuntimeError("probe of hdiff@c_cpu failed: boom")

    monkeypatch.setattr(pipeline_figures, "run_probe", probe)
    figures = pipeline_figures.measure_pipeline("c_cpu", "hdiff", None, repeat=3)
    assert "boom" in figures.message and figures.cold_stages == ()


def test_a_cold_run_that_recorded_choices_is_followed_by_a_cold_run_with_them_alone(monkeypatch):
    # Each sequence: cold (records a choice), recorded (a new directory holding only the
    # records), warm (the recorded run's directory).
    answers = iter([
        _result(0.9, 1.0), _result(0.2, 0.3), _result(0.0, 0.05),
        _result(0.8, 0.9), _result(0.3, 0.4), _result(0.0, 0.06),
        _result(1.0, 1.1), _result(0.25, 0.35), _result(0.0, 0.07),
    ])
    seen = []

    def probe(backend, workload, cache_dir, timeout):
        directory = Path(cache_dir)
        seen.append((directory, sorted(p.name for p in directory.iterdir())))
        if not (directory / "choices").exists():
            (directory / "choices").mkdir()
            (directory / "choices" / "record").write_text("measured")
            (directory / "translations").mkdir()
        return next(answers)

    monkeypatch.setattr(pipeline_figures, "run_probe", probe)
    figures = pipeline_figures.measure_pipeline("c_cpu", "hdiff", None, repeat=3)

    assert figures.message == ""
    assert figures.cold_compile_samples == pytest.approx((0.9, 0.8, 1.0))
    assert figures.recorded_compile_samples == pytest.approx((0.2, 0.3, 0.25))
    assert figures.recorded_compile_seconds == pytest.approx(0.25)
    assert figures.recorded_first_result_seconds == pytest.approx(0.35)
    assert figures.warm_start_seconds == pytest.approx(0.06)
    cold, recorded, warm = seen[:3]
    assert cold[1] == [] and recorded[1] == ["choices"]  # the records alone
    assert recorded[0] != cold[0] and warm[0] == recorded[0]
