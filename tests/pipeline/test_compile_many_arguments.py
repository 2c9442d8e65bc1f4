"""compile_many (and prog.compile(executor=...)) take the arguments a call takes (issue 41).

Tuple and named-collection parameters, located arrays, static parameters, keyword arguments
and a field operator's ``out=`` and ``domain=``: each job compiles what the call with those
arguments runs and installs it where that call looks, so the call runs no pipeline stage.
Before, ``compile_many`` handed the example arguments to the dispatcher as they were: a tuple
program wanted its leaves, a located array was refused, and a static program compiled the
program without its values bound, which no call runs.
No ``from __future__ import annotations``: the DSL reads the annotations.
"""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import NamedTuple

import numpy as np
import pytest

import backends
from backends.conformance.arrays import to_backend_array, to_numpy
from pipeline import StageEvent, compile_many, subscribe
from pipeline.dsl import Dimension, Field, field_operator, float64, int64, located, program
from pipeline.errors import ArgumentError

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
IJK = Field[[I, J, K], float64]
SHAPE = (10, 6, 4)


@field_operator
def weighted(t: tuple[IJK, tuple[IJK, float64]]) -> tuple[IJK, IJK]:
    return t[0] * t[1][1], t[1][0]


@program
def pairs(t: tuple[IJK, tuple[IJK, float64]], out: tuple[IJK, IJK]):
    weighted(t, out=(out[0][1:-1, :, :], out[1][1:-1, :, :]))


@field_operator
def below_op(f: IJK) -> IJK:
    return f(I - 1)


@program
def below(f: IJK, out: IJK):
    below_op(f, out=out)


@field_operator
def scaled(f: IJK, s: float64) -> IJK:
    return f * s


@program(static_params=("lo",), jit=False)
def scaled_from(f: IJK, s: float64, lo: int64, out: IJK):
    scaled(f, s, out=out, domain={I: (lo, 10)})


@field_operator
def forward_difference(f: IJK) -> IJK:
    return f(I + 1) - f


class Weighted(NamedTuple):
    first: IJK
    weight: float64


@field_operator
def weighted_sum(p: Weighted) -> IJK:
    return p.first * p.weight


@program
def weighted_program(p: Weighted, out: IJK):
    weighted_sum(p, out=out)


@program(static_domains=True)
def difference_of_shape(f: IJK, out: IJK):
    forward_difference(f, out=out[:-1, :, :])


def _field(shape=SHAPE, seed=0):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape)


def _written(result, given):
    """What a call wrote, as NumPy arrays: the arrays given (in place), or a functional
    backend's results."""
    if result is not None:
        given = tuple(result) if isinstance(result, tuple | list) else (result,)
    return tuple(to_numpy(array) for array in given)


class Calls:
    """Jobs of every kind, each with the call that must then run at once and its check."""

    def __init__(self, backend):
        self.backend = backend
        self.pairs = pairs.with_backend(backend)
        self.below = below.with_backend(backend)
        self.scaled = scaled_from.with_backend(backend)
        self.difference = forward_difference.with_backend(backend)
        self.weighted = weighted_program.with_backend(backend)
        self.of_shape = difference_of_shape.with_backend(backend)
        self.host_a, self.host_b = _field(seed=1), _field(seed=2)
        self.host_f = _field((SHAPE[0] + 1, *SHAPE[1:]), seed=3)  # covers I = -1 .. 9
        self.a, self.b, self.f = (
            to_backend_array(x, backend) for x in (self.host_a, self.host_b, self.host_f)
        )

    def full(self, value):
        return to_backend_array(np.full(SHAPE, value), self.backend)

    def jobs(self):
        zeros = self.full(0.0)
        return [
            (self.pairs, ((self.a, (self.b, 2.0)), (zeros, self.full(0.0)))),
            (self.below, (located(self.f, (I, J, K), origin={I: -1}), zeros)),
            (self.scaled, (self.a, 0.5, 1, zeros)),
            (self.scaled, (self.a, 0.5), {"lo": 2, "out": zeros}),
            (self.difference, (self.a,), {"out": zeros, "domain": {I: (0, 9)}}),
            (self.weighted, (), {"p": Weighted(self.a, 3.0), "out": zeros}),
            (self.of_shape, (self.a, zeros)),
        ]

    def run_and_check(self):
        """Every call of ``jobs``, checked against NumPy."""
        a, b, f = self.a, self.b, self.f
        ha, hb, hf = self.host_a, self.host_b, self.host_f
        x, y = self.full(0.0), self.full(0.0)
        x, y = _written(self.pairs((a, (b, 2.0)), (x, y)), (x, y))
        np.testing.assert_array_equal(x[1:-1], ha[1:-1] * 2.0)
        np.testing.assert_array_equal(y[1:-1], hb[1:-1])
        out = self.full(0.0)
        (out,) = _written(self.below(located(f, (I, J, K), origin={I: -1}), out), (out,))
        np.testing.assert_array_equal(out, hf[:-1])
        for lo in (1, 2):
            out = self.full(0.0)
            (out,) = _written(self.scaled(a, 0.5, lo, out=out), (out,))
            np.testing.assert_array_equal(out[lo:], ha[lo:] * 0.5)
            assert not out[:lo].any()
        out = self.full(7.0)
        (out,) = _written(self.difference(a, out=out, domain={I: (0, 9)}), (out,))
        np.testing.assert_allclose(out[:9], ha[1:] - ha[:-1], rtol=1e-12)
        assert (out[9] == 7.0).all()
        out = self.full(0.0)
        (out,) = _written(self.weighted(p=Weighted(a, 3.0), out=out), (out,))
        np.testing.assert_array_equal(out, ha * 3.0)
        out = self.full(7.0)
        (out,) = _written(self.of_shape(a, out), (out,))
        np.testing.assert_allclose(out[:-1], ha[1:] - ha[:-1], rtol=1e-12)
        assert (out[-1] == 7.0).all()


def _runs_no_stage(calls):
    events: list[StageEvent] = []
    with subscribe(events.append):
        calls.run_and_check()
    assert [e.stage for e in events] == []


@pytest.mark.parametrize(
    "backend_name",
    ["c_cpu", "cuda_emulated", pytest.param("jax_jit", marks=pytest.mark.requires_jax)],
)
def test_compile_many_takes_a_calls_arguments_and_the_call_then_runs_at_once(backend_name):
    if backend_name == "jax_jit":
        import jax  # noqa: PLC0415  (the marker skips without it)

        jax.config.update("jax_enable_x64", True)
    calls = Calls(getattr(backends, backend_name))
    compiled = compile_many(calls.jobs(), progress=False)
    assert [c.concrete.definition.name for c in compiled] == [
        "pairs", "below", "scaled_from", "scaled_from", "forward_difference",
        "weighted_program", "difference_of_shape",
    ]
    assert dict(compiled[-1].concrete.definition.static_shapes) == {"f": SHAPE, "out": SHAPE}
    assert [c.concrete.definition.bound for c in compiled[2:4]] == [{"lo": 1}, {"lo": 2}]
    assert dict(compiled[1].concrete.definition.located) == {"f": (("I", -1),)}
    _runs_no_stage(calls)


def test_compile_many_on_a_process_pool_installs_what_the_calls_find():
    calls = Calls(backends.c_cpu)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=spawn) as pool:
        compiled = compile_many(calls.jobs(), executor=pool, progress=False)
    assert len(compiled) == 7
    # jit=False: only the variants compile_many made run; another value is refused.
    assert len(calls.scaled.variants) == 2
    with pytest.raises(ArgumentError, match=r"no precompiled variant for lo=3"):
        calls.scaled(calls.a, 0.5, 3, np.zeros(SHAPE))
    _runs_no_stage(calls)


def test_compile_with_an_executor_compiles_what_the_call_runs():
    calls = Calls(backends.c_cpu)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=spawn) as pool:
        futures = [
            calls.pairs.compile((calls.a, (calls.b, 2.0)), (np.zeros(SHAPE),) * 2,
                                executor=pool),
            calls.below.compile(located(calls.f, (I, J, K), origin={I: -1}),
                                out=np.zeros(SHAPE), executor=pool),
        ]
        by_value = calls.scaled.compile(calls.a, 0.5, [1, 2], np.zeros(SHAPE), executor=pool)
        futures += list(by_value.values())
        futures.append(calls.weighted.compile(p=Weighted(calls.a, 3.0), out=np.zeros(SHAPE),
                                              executor=pool))
        futures.append(calls.of_shape.compile(calls.a, np.zeros(SHAPE), executor=pool))
        for future in futures:
            future.result()
    compile_many([calls.jobs()[4]], progress=False)  # a field operator has no compile()
    _runs_no_stage(calls)


def test_a_static_parameter_given_several_values_in_one_job_is_refused_naming_it():
    scaled = scaled_from.with_backend(backends.c_cpu)
    with pytest.raises(ExceptionGroup) as info:
        compile_many([(scaled, (_field(), 0.5, [1, 2], np.zeros(SHAPE)))], progress=False)
    (error,) = info.value.exceptions
    assert isinstance(error, ArgumentError)
    assert "argument 'lo' of scaled_from() is static" in str(error)
    assert "give one job per value" in str(error)


def test_a_tuple_argument_nested_otherwise_is_refused_as_the_call_refuses_it():
    with pytest.raises(ExceptionGroup) as info:
        compile_many([(pairs.with_backend(backends.c_cpu),
                       ((_field(), _field()), (np.zeros(SHAPE),) * 2))], progress=False)
    (error,) = info.value.exceptions
    assert isinstance(error, ArgumentError)
    assert "argument 't[1]' of pairs() must be a tuple of 2" in str(error)


def test_a_job_of_another_shape_is_refused_saying_what_a_job_is():
    with pytest.raises(ExceptionGroup) as info:
        compile_many([(below.with_backend(backends.c_cpu),)], progress=False)
    (error,) = info.value.exceptions
    assert isinstance(error, TypeError)
    assert "jobs (program, args) or (program, args, kwargs)" in str(error)


def test_a_job_may_be_a_list_as_before():
    """``[program, args]`` was a job before jobs took keywords (found in review)."""
    program_ = scaled_from.with_backend(backends.c_cpu)
    f, out = _field(), np.zeros(SHAPE)
    compile_many([[program_, [f, 0.5, 2, out]]], progress=False)
    program_(f, 0.5, 2, out)  # jit=False: it runs only what was precompiled
    np.testing.assert_array_equal(out[2:], f[2:] * 0.5)


def test_compile_many_refuses_an_embedded_program_as_compile_does():
    """``.compile()`` on an embedded backend says embedded programs are not compiled;
    ``compile_many`` ran their identity pipeline and installed nothing a call uses."""
    program_ = scaled_from.with_backend(backends.embedded_numpy)
    job_args = (_field(), 0.5, 2, np.zeros(SHAPE))
    with pytest.raises(RuntimeError, match="embedded programs are not compiled") as direct:
        program_.compile(*job_args[:2], [2], job_args[3])
    with pytest.raises(ExceptionGroup) as info:
        compile_many([(program_, job_args)], progress=False)
    (error,) = info.value.exceptions
    assert isinstance(error, RuntimeError)
    assert str(error) == str(direct.value)
