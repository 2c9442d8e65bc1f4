"""The slicing plan of embedded NumPy runs: what gets one, that it agrees with the definition,
and that every argument check still runs in front of it."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import backends
from backends import EmbeddedBackend
from backends.arrayapi.plan import LARGE_DOMAIN, plan_program, unplanned_reason
from backends.arrayapi.plan.sweep import sweep
from backends.embedded import embedded_pipeline
from benchmarks.workloads import WORKLOADS
from pipeline.dsl import (
    Dimension,
    Field,
    concat_where,
    field_operator,
    float64,
    program,
    scan_operator,
)
from pipeline.dsl.errors import DomainError
from pipeline.errors import ArgumentError

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741  (the DSL's names)
IJK = Field[[I, J, K], float64]

_DEFINITION = EmbeddedBackend(
    "embedded_numpy_definition", np, pipeline=embedded_pipeline(np, planned=False)
)
# Every stencil that can is evaluated in its outputs, as on large grids.
_IN_PLACE = EmbeddedBackend(
    "embedded_numpy_in_place", np, pipeline=embedded_pipeline(np, large_domain=0)
)


@field_operator
def _offset_only(a: IJK) -> IJK:
    t = a(I + 1) * 2.0  # read only one point back: never needed at the output point itself
    return t(I - 1) + a  # = 3 a, reading a at the output point only


@program
def offset_only(a: IJK, out: IJK):
    _offset_only(a, out=out[1:, :, :])


@scan_operator(axis=K, forward=True, init=0.0)
def _running_sum(carry: float64, x: float64) -> float64:
    return carry + x


@program
def running_sum(a: IJK, out: IJK):
    _running_sum(a, out=out)


@field_operator
def _smear(a: IJK, o: IJK) -> IJK:
    return 2.0 * a + o * 3.0  # reads the output it writes: in place would clobber it first


@program
def smear(a: IJK, out: IJK):
    _smear(a, out, out=out[:-1, :, :])


@field_operator
def _edges(a: IJK) -> IJK:
    return concat_where(K == 0, 0.0 * a, a)


@program
def edges(a: IJK, out: IJK):
    _edges(a, out=out)


def _executable(prog: Any, *args: Any) -> Any:
    return prog._dispatcher.specialization(prog.definition, args).executable


def _plan(workload: Any, args: dict[str, Any]) -> Any:
    """The slicing plan embedded NumPy runs ``workload`` on ``args`` with (asserted to exist)."""
    prog = workload.program.with_backend(backends.embedded_numpy)
    plan = _executable(prog, *args.values()).plan
    assert plan is not None
    return plan


def _reference_out(workload: Any, args: dict[str, Any]) -> np.ndarray:
    """``out`` as the workload's NumPy slicing kernel computes it from ``args``."""
    reference = dict(args)
    reference["out"] = reference["out"].copy()
    workload.reference(reference)
    out = reference["out"]
    assert isinstance(out, np.ndarray)
    return out


def _run(prog: Any, backend: Any, args: dict[str, Any]) -> dict[str, np.ndarray]:
    copies = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    prog.with_backend(backend)(*copies.values())
    return copies


@pytest.mark.parametrize("name", ["laplacian", "hdiff", "tridiagonal", "vertical_advection"])
def test_the_harness_stencils_run_as_a_plan_that_matches_the_definition(name: str) -> None:
    workload = WORKLOADS[name]
    args = workload.host_arguments((12, 11, 5))
    planned = _run(workload.program, backends.embedded_numpy, args)
    definition = _run(workload.program, _DEFINITION, args)
    assert "[T[" in _plan(workload, planned).source
    np.testing.assert_allclose(planned["out"], definition["out"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        planned["out"], _reference_out(workload, args), rtol=1e-13, atol=1e-13
    )


def test_values_used_once_are_written_into_their_user() -> None:
    # One expression for the whole laplacian: NumPy can then reuse its temporaries' buffers.
    workload = WORKLOADS["laplacian"]
    args = workload.host_arguments((8, 8, 4))
    body = [line.strip() for line in _plan(workload, args).source.splitlines()[1:]]
    assert [line for line in body if line.startswith("v")] == []
    assert sum(line.startswith("a_out[") for line in body) == 1


def test_a_large_domain_is_evaluated_in_the_output_without_temporaries() -> None:
    workload = WORKLOADS["laplacian"]
    args = workload.host_arguments((34, 34, 32))  # an interior of LARGE_DOMAIN points
    planned = _run(workload.program, backends.embedded_numpy, args)
    plan = _plan(workload, planned)
    assert plan.large_domain == LARGE_DOMAIN == 32 * 32 * 32
    large = plan.source.split("elif T[0]:")[1].splitlines()[1:]
    assert all(", out=o" in line for line in large[1:-1])  # after the view, before return
    np.testing.assert_array_equal(planned["out"], _reference_out(workload, args))


def test_intermediates_are_freed_after_their_last_read() -> None:
    workload = WORKLOADS["hdiff"]
    lines = _plan(workload, workload.host_arguments((8, 8, 4))).source.splitlines()
    for number, line in enumerate(lines):
        if line.strip().startswith("del "):
            for name in line.strip()[4:].split(", "):
                assert name in lines[number - 1]
                assert not any(name in later for later in lines[number + 1 :])


def test_a_stencil_reading_its_output_is_not_evaluated_in_it() -> None:
    rng = np.random.default_rng(3)
    a, out = rng.uniform(size=(6, 3, 2)), rng.uniform(size=(6, 3, 2))
    in_place, definition = out.copy(), out.copy()
    smear.with_backend(_IN_PLACE)(a, in_place)
    smear.with_backend(_DEFINITION)(a, definition)
    expected = out.copy()
    expected[:-1] = 2.0 * a[:-1] + out[:-1] * 3.0
    np.testing.assert_array_equal(in_place, expected)
    np.testing.assert_array_equal(definition, expected)
    plan = _executable(smear.with_backend(_IN_PLACE), a, in_place).plan
    assert plan is not None and "out=" not in plan.source


def test_a_local_read_only_at_an_offset_reads_no_more_than_the_checks_allow() -> None:
    # a is exactly as large as the checks require: the local t must not be computed at I = 0
    # of the output, where it would read a past its end.
    a = np.random.default_rng(1).uniform(size=(6, 3, 2))
    planned, definition = np.full_like(a, -7.0), np.full_like(a, -7.0)
    offset_only.with_backend(backends.embedded_numpy)(a, planned)
    offset_only.with_backend(_DEFINITION)(a, definition)
    expected = np.full_like(a, -7.0)
    expected[1:] = 3.0 * a[1:]
    np.testing.assert_array_equal(planned, expected)
    np.testing.assert_array_equal(definition, expected)


def test_a_scan_is_a_loop_over_its_axis_calling_its_step_on_planes() -> None:
    a = np.ones((3, 2, 4))
    out = np.zeros_like(a)
    prog = running_sum.with_backend(backends.embedded_numpy)
    prog(a, out)
    plan = _executable(prog, a, out).plan
    assert plan is not None and "_sweep(step" in plan.source
    np.testing.assert_array_equal(out[0, 0], [1.0, 2.0, 3.0, 4.0])


def test_a_sweep_stores_its_planes_contiguously_along_its_axis() -> None:
    prog = running_sum.with_backend(backends.embedded_numpy)
    a = np.arange(24.0).reshape(2, 3, 4)
    out = np.zeros_like(a)
    prog(a, out)
    plan = _executable(prog, a, out).plan
    assert plan is not None
    step = plan.run.__globals__[re.findall(r"_sweep\((step\d+)", plan.source)[0]]
    (forward,) = sweep(step, 2, True, (np.float64(0.0),), (np.dtype(np.float64),), (a,))
    (backward,) = sweep(step, 2, False, (np.float64(0.0),), (np.dtype(np.float64),), (a,))
    np.testing.assert_array_equal(forward, np.cumsum(a, axis=2))
    np.testing.assert_array_equal(backward, np.cumsum(a[..., ::-1], axis=2)[..., ::-1])
    assert forward.strides[2] == 2 * 3 * 8  # the axis outermost: each plane contiguous
    np.testing.assert_array_equal(out, np.cumsum(a, axis=2))


def test_concat_where_runs_the_definition_and_says_why_it_has_no_plan() -> None:
    a = np.ones((3, 2, 4))
    out = np.zeros_like(a)
    prog = edges.with_backend(backends.embedded_numpy)
    prog(a, out)
    executable = _executable(prog, a, out)
    assert executable.plan is None
    assert plan_program(executable.ir) is None
    assert "ConcatWhere" in (unplanned_reason(executable.ir) or "")
    np.testing.assert_array_equal(out[:, :, 0], 0.0)
    np.testing.assert_array_equal(out[:, :, 1:], 1.0)


def test_planned_false_runs_the_definition() -> None:
    workload = WORKLOADS["laplacian"]
    args = workload.host_arguments((6, 6, 2))
    prog = workload.program.with_backend(_DEFINITION)
    prog(*args.values())
    assert _executable(prog, *args.values()).plan is None


def test_checks_run_before_the_plan_for_every_call_not_only_the_first() -> None:
    prog = WORKLOADS["hdiff"].program.with_backend(backends.embedded_numpy)
    good = WORKLOADS["hdiff"].host_arguments((10, 10, 3))
    prog(*good.values())
    small = np.zeros((3, 10, 3))  # smaller than hdiff's reach along I
    with pytest.raises(DomainError, match="too small along I"):
        prog(small, 0.1, np.zeros((10, 10, 3)))
    with pytest.raises(ArgumentError, match="dtype"):
        prog(good["inp"].astype(np.float32), 0.1, good["out"])
    with pytest.raises(ArgumentError, match="shares memory"):
        prog(good["inp"], 0.1, good["inp"])
    read_only = good["out"].copy()
    read_only.flags.writeable = False
    with pytest.raises(ArgumentError, match="read-only"):
        prog(good["inp"], 0.1, read_only)
    prog(*good.values())  # the accepted shapes are still accepted


@settings(max_examples=25, deadline=None)
@given(
    shape=st.tuples(st.integers(5, 14), st.integers(5, 14), st.integers(1, 4)),
    seed=st.integers(0, 2**16),
    name=st.sampled_from(["laplacian", "hdiff", "tridiagonal", "vertical_advection"]),
)
def test_plan_and_definition_agree_on_any_grid(
    shape: tuple[int, int, int], seed: int, name: str
) -> None:
    workload = WORKLOADS[name]
    args = workload.host_arguments(shape, seed)
    planned = _run(workload.program, backends.embedded_numpy, args)
    in_place = _run(workload.program, _IN_PLACE, args)
    definition = _run(workload.program, _DEFINITION, args)
    np.testing.assert_allclose(planned["out"], definition["out"], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(in_place["out"], planned["out"])
    outside = np.ones(shape, bool)
    outside[workload.domain] = False
    np.testing.assert_array_equal(planned["out"][outside], args["out"][outside])
    np.testing.assert_array_equal(in_place["out"][outside], args["out"][outside])
