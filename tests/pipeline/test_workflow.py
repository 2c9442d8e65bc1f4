"""CompilePipeline: explicit stages, stage events, partial runs, agreement at construction."""

from __future__ import annotations

import attrs
import pytest

from allocators import DeviceType
from pipeline import (
    CachedStep,
    CompilePipeline,
    SourceFormat,
    StageEvent,
    StepMismatchError,
    identity,
    subscribe,
)


def parse(text: str) -> list[str]:
    return text.split()


@attrs.frozen
class Upper:
    emits: SourceFormat = SourceFormat("c", DeviceType.CPU)

    def __call__(self, words: list[str]) -> str:
        return " ".join(w.upper() for w in words)


@attrs.frozen
class Reverse:
    accepts: SourceFormat = SourceFormat("c", DeviceType.CPU)

    def __call__(self, text: str) -> str:
        return text[::-1]


def load(text: str) -> int:
    return len(text)


def make_pipeline(**changes):
    return attrs.evolve(CompilePipeline(parse, Upper(), Reverse(), load), **changes)


def test_pipeline_runs_the_four_steps_in_order():
    assert make_pipeline()("ab cd") == len("CD BA")


def test_translate_runs_frontend_and_translation_only():
    assert make_pipeline().translate("ab cd") == "AB CD"


def test_identity_returns_its_input():
    marker = object()
    assert identity(marker) is marker


def test_stage_events_name_stage_step_artifact_and_duration():
    events: list[StageEvent] = []
    with subscribe(events.append):
        make_pipeline()("ab")
    assert [(e.stage, e.step) for e in events] == [
        ("frontend", "parse"),
        ("translation", "Upper"),
        ("compilation", "Reverse"),
        ("loading", "load"),
    ]
    assert [e.artifact for e in events] == [["ab"], "AB", "BA", 2]
    assert all(e.seconds >= 0 for e in events)


def test_unsubscribed_callbacks_receive_nothing():
    events: list[StageEvent] = []
    subscription = subscribe(events.append)
    subscription.unsubscribe()
    make_pipeline()("ab")
    assert events == []
    subscription.unsubscribe()  # idempotent


def test_pipeline_is_frozen_and_evolvable():
    pipeline = make_pipeline()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        pipeline.loading = identity  # type: ignore[misc]
    variant = attrs.evolve(pipeline, loading=identity)
    assert variant("ab") == "BA"


def test_mismatched_language_fails_at_construction_naming_both_steps_and_values():
    cuda_upper = Upper(emits=SourceFormat("cuda", DeviceType.CUDA))
    with pytest.raises(StepMismatchError) as info:
        make_pipeline(translation=cuda_upper)
    message = str(info.value)
    assert "Upper" in message and "Reverse" in message
    assert "cuda for CUDA" in message and "c for CPU" in message
    assert isinstance(info.value, ValueError)


def test_agreement_is_checked_through_cached_steps():
    cached = CachedStep.in_memory(Upper(emits=SourceFormat("sdfg", DeviceType.CPU)))
    with pytest.raises(StepMismatchError, match="sdfg for CPU"):
        make_pipeline(translation=cached)


def test_undeclared_steps_are_taken_on_trust():
    assert CompilePipeline(parse, " ".join, str.upper, len)("a b") == 3
