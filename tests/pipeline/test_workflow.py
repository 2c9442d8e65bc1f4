"""CompilePipeline: explicit stages, stage events, partial runs, agreement at construction.

The pipeline knows none of its stages' types: most tests here run the DSL's stage types
through toy steps, and the first runs four plain functions on ints."""

from __future__ import annotations

import attrs
import pytest

from allocators import DeviceType
from pipeline import (
    CachedStep,
    CompilePipeline,
    ProgramSource,
    SourceFormat,
    StageEvent,
    StepMismatchError,
    identity,
    subscribe,
)
from pipeline.dsl import CompilableProgram, ProgramDefinition
from pipeline.dsl.frontend.step import Frontend
from pipeline.dsl.ir.nodes import ProgramIR
from pipeline.errors import StepOutputError
from pipeline.stages import CompileTimeArgs, ConcreteDefinition


def ab_cd():
    """A function to make definitions of (the steps below only read its name)."""


def definition(function=ab_cd) -> ProgramDefinition:
    return ProgramDefinition(function, "program")


def concrete(**args) -> ConcreteDefinition:
    return ConcreteDefinition(definition(), CompileTimeArgs(tuple(args.items())))


def parse(inp: ConcreteDefinition) -> CompilableProgram:
    ir = ProgramIR(inp.definition.name, (), ())
    return CompilableProgram(inp.definition, ir, inp.compile_time_args)


def test_a_pipeline_of_four_plain_functions_on_ints_runs():
    def plus_one(x: int) -> int:
        return x + 1

    def double(x: int) -> int:
        return 2 * x

    def minus_three(x: int) -> int:
        return x - 3

    def loader(x: int):
        return lambda: x

    pipeline = CompilePipeline(plus_one, double, minus_three, loader)
    assert pipeline(1)() == 1
    events: list[StageEvent] = []
    with subscribe(events.append):
        assert pipeline.translate(pipeline.program(5)) == 12
    assert [(e.stage, e.artifact) for e in events] == [("frontend", 6), ("translation", 12)]


@attrs.frozen
class Upper:
    emits: SourceFormat = SourceFormat("c", DeviceType.CPU)

    def __call__(self, program: CompilableProgram) -> ProgramSource:
        suffix = "".join(f" {name}={value}" for name, value in program.compile_time_args.items)
        return ProgramSource(self.emits, program.ir.name.upper() + suffix, "entry")


@attrs.frozen
class Reverse:
    accepts: SourceFormat = SourceFormat("c", DeviceType.CPU)

    def __call__(self, source: ProgramSource) -> str:
        return source.text[::-1]


@attrs.frozen
class Loaded:
    text: str

    def __call__(self) -> int:
        return len(self.text)


def load(text: str) -> Loaded:
    return Loaded(text)


def make_pipeline(**changes):
    return attrs.evolve(CompilePipeline(parse, Upper(), Reverse(), load), **changes)


def test_pipeline_runs_the_four_steps_in_order():
    assert make_pipeline()(concrete()) == Loaded("DC_BA")


def test_the_compile_time_arguments_reach_the_translation_beside_the_ir():
    pipeline = make_pipeline()
    program = pipeline.program(concrete(unroll=4))
    assert program.ir.name == "ab_cd"
    assert program.compile_time_args == CompileTimeArgs((("unroll", 4),))
    assert pipeline.translate(program).text == "AB_CD unroll=4"


def test_the_dsl_frontend_reads_the_definition_alone_and_its_cache_runs_it_once():
    seen = []

    def passes(definition):
        seen.append(definition)
        return ProgramIR(definition.name, (), ())

    pipeline = make_pipeline(frontend=Frontend(CachedStep.in_memory(passes)))
    one = ProgramDefinition(ab_cd, "program")
    events: list[StageEvent] = []
    with subscribe(events.append):
        pipeline(ConcreteDefinition(one, CompileTimeArgs((("unroll", 1),))))
        pipeline(ConcreteDefinition(one, CompileTimeArgs((("unroll", 2),))))
    assert seen == [one]
    assert [e.cache_hit for e in events if e.stage == "frontend"] == [False, True]


def test_identity_returns_its_input():
    marker = object()
    assert identity(marker) is marker


def test_stage_events_name_stage_step_artifact_and_duration():
    events: list[StageEvent] = []
    with subscribe(events.append):
        make_pipeline()(concrete())
    assert [(e.stage, e.step) for e in events] == [
        ("frontend", "parse"),
        ("translation", "Upper"),
        ("compilation", "Reverse"),
        ("loading", "load"),
    ]
    assert [type(e.artifact) for e in events] == [CompilableProgram, ProgramSource, str, Loaded]
    assert events[2].artifact == "DC_BA"
    assert all(e.seconds >= 0 for e in events)
    assert not any(e.cache_hit for e in events)


def test_stage_events_say_when_a_cached_step_answered_from_its_cache():
    pipeline = make_pipeline(translation=CachedStep.in_memory(Upper()))
    events: list[StageEvent] = []
    with subscribe(events.append):
        pipeline(concrete())
        pipeline(concrete())
    hits = [(e.stage, e.cache_hit) for e in events if e.stage == "translation"]
    assert hits == [("translation", False), ("translation", True)]


def test_unsubscribed_callbacks_receive_nothing():
    events: list[StageEvent] = []
    subscription = subscribe(events.append)
    subscription.unsubscribe()
    make_pipeline()(concrete())
    assert events == []
    subscription.unsubscribe()  # idempotent


def test_pipeline_is_frozen_and_evolvable():
    pipeline = make_pipeline()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        pipeline.loading = identity  # type: ignore[misc]
    variant = attrs.evolve(pipeline, compilation=lambda source: source.text.lower())
    assert variant(concrete()) == Loaded("ab_cd")


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
    def translation(program):
        return program.ir.name

    assert CompilePipeline(parse, translation, str.upper, Loaded)(concrete()) == Loaded("AB_CD")


def test_a_loading_step_that_returns_no_callable_is_named_at_load():
    named = r"loading step len returned builtins\.int 5.*callable"
    with pytest.raises(StepOutputError, match=named):
        make_pipeline(loading=len)(concrete())


def test_a_translation_must_return_the_source_format_it_declares():
    @attrs.frozen
    class Liar:
        emits: SourceFormat = SourceFormat("c", DeviceType.CPU)

        def __call__(self, program):
            return ProgramSource(SourceFormat("cuda", DeviceType.CUDA), "", "entry")

    with pytest.raises(StepOutputError, match=r"translation step .*Liar returned .*c for CPU"):
        make_pipeline(translation=Liar(), compilation=lambda s: s.text)(concrete())

    @attrs.frozen
    class Text:
        emits: SourceFormat = SourceFormat("c", DeviceType.CPU)

        def __call__(self, program):
            return "text"

    with pytest.raises(StepOutputError, match=r"translation step .*Text returned builtins\.str"):
        make_pipeline(translation=Text())(concrete())


