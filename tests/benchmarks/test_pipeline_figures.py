"""Pipeline figures: medians over several cold + warm subprocess pairs."""

from __future__ import annotations

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

    monkeypatch.setattr(pipeline_figures, "_probe", probe)
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

    monkeypatch.setattr(pipeline_figures, "_probe", probe)
    figures = pipeline_figures.measure_pipeline("c_cpu", "hdiff", None, repeat=3)
    assert "boom" in figures.message and figures.cold_stages == ()
