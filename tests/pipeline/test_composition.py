"""Composing steps: chains, named sub-steps, split tracks, and variants reached by a dotted path.

The four recipes of GT4Py's toolchain guide (HackTheToolchain), written our way: replace a
step; skip or reorder sub-steps; an alternative factory for a whole stage; a new workflow
shape (two tracks, combined).
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

import backends
from pipeline import (
    CachedStep,
    Chain,
    CompilePipeline,
    Split,
    StageEvent,
    StepSequence,
    identity,
    subscribe,
)
from pipeline.dsl import Dimension, Field, field_operator, float64, program
from pipeline.steps import Step, evolve_step, replace_step

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")
IJK = Field[[I, J, K], float64]


# --------------------------------------------------------------------------- a toolchain on ints


def plus_one(x: int) -> int:
    return x + 1


def double(x: int) -> int:
    return 2 * x


def negate(x: int) -> int:
    return -x


@attrs.frozen
class Add:
    amount: int = 10

    def __call__(self, x: int) -> int:
        return x + self.amount


@attrs.frozen
class Arithmetic(StepSequence):
    increment: Step[int, int] = plus_one
    scale: Step[int, int] = double
    shift: Step[int, int] = Add()


def loader(x: int):
    return lambda: x


def int_pipeline(**stages) -> CompilePipeline:
    defaults = {
        "frontend": identity,
        "translation": Arithmetic(),
        "compilation": negate,
        "loading": loader,
    }
    return CompilePipeline(**{**defaults, **stages})


def test_a_sequence_runs_its_named_sub_steps_in_declared_order():
    assert Arithmetic()(3) == (3 + 1) * 2 + 10
    assert Arithmetic.sub_steps() == ("increment", "scale", "shift")


def test_a_sub_step_is_skipped_or_the_order_changed_in_one_line():
    assert attrs.evolve(Arithmetic(), scale=identity)(3) == 3 + 1 + 10
    assert attrs.evolve(Arithmetic(), order=("scale", "increment"))(3) == 3 * 2 + 1


def test_an_order_naming_no_sub_step_is_an_error_listing_the_sub_steps():
    with pytest.raises(ValueError, match="no sub-step.*scael.*increment, scale, shift"):
        Arithmetic(order=("scael",))


def test_a_chain_runs_its_first_step_then_its_second():
    assert Chain(plus_one, double)(3) == 8
    assert Chain(Chain(plus_one, double), negate)(3) == -8


def test_split_runs_two_tracks_on_one_input_and_combines_them():
    both = Split(plus_one, double, combine=lambda pair: pair[0] * 100 + pair[1])
    assert both(3) == 406


def test_evolve_step_reaches_a_sub_step_by_its_dotted_path_and_keeps_wrappers():
    pipeline = int_pipeline(translation=CachedStep.in_memory(Arithmetic()))
    variant = pipeline.evolve_step("translation.shift", amount=1)
    assert isinstance(variant.translation, CachedStep)
    assert variant(3)() == -((3 + 1) * 2 + 1)
    assert pipeline(3)() == -((3 + 1) * 2 + 10)  # the original is unchanged


def test_a_path_that_names_no_sub_step_says_what_is_there():
    pipeline = int_pipeline()
    with pytest.raises(LookupError, match="no sub-step 'shfit'.*increment, scale, shift"):
        pipeline.evolve_step("translation.shfit", amount=1)
    with pytest.raises(ValueError, match="'translate' is not a stage"):
        pipeline.replace_step("translate", identity)
    with pytest.raises(TypeError, match="no option.*amont.*amount"):
        pipeline.evolve_step("translation.shift", amont=1)


def test_evolve_and_replace_work_on_any_composite_not_only_pipelines():
    chain = Chain(Add(1), Arithmetic())
    assert evolve_step(chain, "first", amount=2)(0) == (0 + 2 + 1) * 2 + 10
    assert replace_step(chain, "second.scale", negate)(0) == -(0 + 1 + 1) + 10


# --------------------------------------------------------------------------- the four recipes


def test_recipe_1_replace_a_step():
    pipeline = int_pipeline().replace_step("compilation", double)
    assert pipeline(3)() == ((3 + 1) * 2 + 10) * 2


def test_recipe_2_skip_a_sub_step_or_change_their_order():
    pipeline = int_pipeline(translation=CachedStep.in_memory(Arithmetic()))
    skipped = pipeline.replace_step("translation.increment", identity)
    reordered = pipeline.evolve_step("translation", order=("shift", "scale"))
    assert skipped(3)() == -(3 * 2 + 10)
    assert reordered(3)() == -((3 + 10) * 2)
    assert isinstance(skipped.translation, CachedStep)
    assert isinstance(reordered.translation, CachedStep)


def small_translation(scale: int, *, cached: bool) -> Step[int, int]:
    """An alternative factory for the whole translation stage."""
    stage = Chain(plus_one, Add(scale))
    return CachedStep.in_memory(stage) if cached else stage


def test_recipe_3_an_alternative_factory_for_a_whole_stage():
    pipeline = int_pipeline(translation=small_translation(5, cached=True))
    events: list[StageEvent] = []
    with subscribe(events.append):
        assert pipeline(3)() == -(3 + 1 + 5)
        assert pipeline(3)() == -(3 + 1 + 5)
    assert [e.cache_hit for e in events if e.stage == "translation"] == [False, True]


def test_recipe_4_a_new_workflow_shape_two_tracks_combined():
    # One input, two translations (the arithmetic and a check of it), joined into one source.
    def both(pair: tuple[int, int]) -> int:
        computed, checked = pair
        assert computed == checked
        return computed

    checked = Chain(Chain(plus_one, double), Add())
    pipeline = int_pipeline(translation=Split(Arithmetic(), checked, combine=both))
    assert pipeline(3)() == -((3 + 1) * 2 + 10)
    # A track is reached by its name, like any sub-step.
    broken = pipeline.evolve_step("translation.first.shift", amount=0)
    with pytest.raises(AssertionError):
        broken(3)


# --------------------------------------------------------------------------- the DSL's passes


@field_operator
def _twice(f: IJK) -> IJK:
    return (f + 1.0) * (f + 1.0)


@program
def _twice_program(inp: IJK, out: IJK):
    _twice(inp, out=out)


def test_the_dsl_frontends_passes_are_named_sub_steps_of_every_backends_pipeline():
    base = backends.embedded_numpy
    skipped = base.pipeline.replace_step("frontend.passes.common_subexpressions", identity)
    without_cse = _twice_program.with_backend(attrs.evolve(base, pipeline=skipped))
    assert "_cse0" in str(_twice_program.frontend().ir)
    assert "_cse0" not in str(without_cse.frontend().ir)
    inp = np.random.default_rng(0).uniform(size=(3, 3, 2))
    out = np.zeros_like(inp)
    without_cse(inp, out)
    np.testing.assert_allclose(out, (inp + 1.0) ** 2)


@field_operator
def _smoothed(f: IJK) -> IJK:
    lap = -4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1)
    return lap(I + 1) - lap


@program
def _smoothed_program(inp: IJK, out: IJK):
    _smoothed(inp, out=out[1:-2, 1:-1, :])


def test_c_cpus_tuning_is_a_sub_step_skipped_or_changed_by_its_path():
    pipeline = backends.c_cpu.pipeline
    untuned = pipeline.replace_step("translation.tuning", None)
    patient = pipeline.evolve_step("translation.tuning", rounds=9)
    assert isinstance(untuned.translation, CachedStep)  # the disk cache is kept
    assert untuned.translation.step.tuning is None
    assert patient.translation.step.tuning.rounds == 9
    assert pipeline.translation.step.tuning.rounds != 9  # the original is unchanged

    backend = attrs.evolve(backends.c_cpu, name="c_cpu_untuned", pipeline=untuned)
    inp = np.random.default_rng(1).uniform(size=(12, 9, 4))
    out = np.zeros_like(inp)
    lowered = _smoothed_program.with_backend(backend).lower(inp, out)
    assert "not measured: the translation has no tuning" in lowered.as_text()
    lowered.compile()(inp, out)
    lap = np.zeros_like(inp)
    lap[1:-1, 1:-1] = (-4.0 * inp[1:-1, 1:-1] + inp[2:, 1:-1] + inp[:-2, 1:-1]
                       + inp[1:-1, 2:] + inp[1:-1, :-2])
    np.testing.assert_allclose(out[1:-2, 1:-1], lap[2:-1, 1:-1] - lap[1:-2, 1:-1])
