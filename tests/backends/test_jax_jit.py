"""The jax_jit backend: jax.jit of the embedded definition, behind the framework's dispatcher.

The DSL corpus runs on it through ``tests/dsl`` (its ``dsl_backend`` parameter); these tests pin
what is particular to it: what it returns, when it compiles, when scalars become static, what
its stages show, and that it is created lazily. Every test here needs JAX (module marker).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

import allocators
import backends
from pipeline import ArgumentError
from pipeline.dsl import Dimension, DomainError, Field, field_operator, float64, program

pytestmark = pytest.mark.requires_jax

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")
IJK = Field[[I, J, K], float64]


@field_operator
def _scaled_laplacian(f: IJK, alpha: float64) -> IJK:
    return alpha * (-4.0 * f + f(I + 1) + f(I - 1) + f(J + 1) + f(J - 1))


@program
def scaled_lap(inp: IJK, alpha: float64, out: IJK):
    _scaled_laplacian(inp, alpha, out=out[1:-1, 1:-1, :])


@field_operator
def _branch(f: IJK, alpha: float64) -> IJK:
    if alpha > 1.0:  # needs alpha's value while traced: alpha becomes static
        return f * 2.0
    return f - 1.0


@program
def branch(inp: IJK, alpha: float64, out: IJK):
    _branch(inp, alpha, out=out)


def _reference(inp: np.ndarray, alpha: float, out: np.ndarray) -> np.ndarray:
    expected = out.copy()
    expected[1:-1, 1:-1, :] = alpha * (
        -4.0 * inp[1:-1, 1:-1] + inp[2:, 1:-1] + inp[:-2, 1:-1] + inp[1:-1, 2:] + inp[1:-1, :-2]
    )
    return expected


@pytest.fixture(scope="module")
def jax_jit():
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", True)
    return backends.jax_jit


def _arrays(backend, shape=(8, 7, 3)):
    rng = np.random.default_rng(3)
    inp, out = rng.uniform(-1, 1, shape), np.full(shape, -7.0)
    namespace = backend.array_namespace
    return inp, out, namespace.asarray(inp), namespace.asarray(out)


def test_jax_jit_is_a_compiled_backend_on_jax_numpy(jax_jit):
    import jax.numpy as jnp  # noqa: PLC0415

    assert isinstance(jax_jit, backends.CompiledBackend)
    assert jax_jit.array_namespace is jnp
    assert jax_jit.pipeline.compiles
    assert "jax_jit" in backends.available_backends()


def test_a_call_returns_the_new_output_and_leaves_the_callers_arrays_as_they_were(jax_jit):
    inp, out, inp_j, out_j = _arrays(jax_jit)
    (result,) = scaled_lap.with_backend(jax_jit)(inp_j, 0.5, out_j)
    np.testing.assert_allclose(np.asarray(result), _reference(inp, 0.5, out), rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(out_j), out)  # JAX arrays are immutable


def test_fields_allocated_with_the_program_are_float64_jax_arrays(jax_jit):
    on_jax = scaled_lap.with_backend(jax_jit)
    field = allocators.zeros((4, 4, 2), float64, allocator=on_jax)
    assert str(field.dtype) == "float64"
    assert type(field).__module__.startswith("jax")


def test_new_scalar_values_reuse_the_compiled_code(jax_jit):
    inp, out, inp_j, out_j = _arrays(jax_jit)
    on_jax = scaled_lap.with_backend(jax_jit)
    for alpha in (0.5, 2.0, -1.25):
        (result,) = on_jax(inp_j, alpha, out_j)
        np.testing.assert_allclose(np.asarray(result), _reference(inp, alpha, out), rtol=1e-14)
    executable = on_jax.compile(inp_j, 0.5, out_j).executable
    assert not executable.scalars_static
    assert executable.program.traced._cache_size() == 1  # one XLA compilation for all three


def test_a_new_shape_is_compiled_again_and_computed_right(jax_jit):
    on_jax = scaled_lap.with_backend(jax_jit)
    for shape in ((8, 7, 3), (5, 9, 2)):
        inp, out, inp_j, out_j = _arrays(jax_jit, shape)
        (result,) = on_jax(inp_j, 1.5, out_j)
        np.testing.assert_allclose(np.asarray(result), _reference(inp, 1.5, out), rtol=1e-14)


def test_a_scalar_read_in_python_makes_the_scalars_static(jax_jit):
    inp, out, inp_j, out_j = _arrays(jax_jit)
    on_jax = branch.with_backend(jax_jit)
    (doubled,) = on_jax(inp_j, 2.0, out_j)
    (shifted,) = on_jax(inp_j, 0.5, out_j)
    np.testing.assert_allclose(np.asarray(doubled), inp * 2.0)
    np.testing.assert_allclose(np.asarray(shifted), inp - 1.0)
    assert on_jax.compile(inp_j, 2.0, out_j).executable.scalars_static


def test_numpy_scalars_are_taken_as_python_numbers(jax_jit):
    inp, out, inp_j, out_j = _arrays(jax_jit)
    (result,) = scaled_lap.with_backend(jax_jit)(inp_j, np.float64(0.25), out_j)
    np.testing.assert_allclose(np.asarray(result), _reference(inp, 0.25, out), rtol=1e-14)


def _bad_calls(namespace):
    good = namespace.zeros((8, 7, 3))
    return {
        "dtype": (namespace.zeros((8, 7, 3), dtype=namespace.float32), 1.0, good),
        "rank": (namespace.zeros((8, 7)), 1.0, good),
        "halo": (namespace.zeros((2, 7, 3)), 1.0, good),
        "scalar": (good, "1.0", good),
        "missing": (good, 1.0),
    }


@pytest.mark.parametrize("after_good_calls", [False, True], ids=["first call", "repeat call"])
def test_arguments_get_the_same_errors_as_on_embedded_numpy(jax_jit, after_good_calls):
    namespace = jax_jit.array_namespace
    good = namespace.zeros((8, 7, 3))
    for label, args in _bad_calls(namespace).items():
        on_jax = scaled_lap.with_backend(jax_jit)
        if after_good_calls:  # the checks' memory and the fast slot hold the good call
            for _ in range(2):
                on_jax(good, 1.0, good)
        numpy_args = tuple(np.array(a) if hasattr(a, "shape") else a for a in args)
        with pytest.raises((ArgumentError, DomainError)) as expected:
            scaled_lap(*numpy_args)
        with pytest.raises(type(expected.value)) as got:
            on_jax(*args)
        assert str(got.value) == str(expected.value), label


def test_repeat_calls_take_the_remembered_entry_and_stay_checked(jax_jit):
    inp, out, inp_j, out_j = _arrays(jax_jit)
    on_jax = scaled_lap.with_backend(jax_jit)
    (first,) = on_jax(inp_j, 0.5, out_j)
    specialization = on_jax.compile(inp_j, 0.5, out_j).specialization
    # The native entry (where a compiler built one) falls back to the remembered entry.
    native = specialization.native_entry
    assert on_jax._dispatcher.fast is (native or specialization.remembered_entry)
    # The same arrays, new arrays of the same kind (a result fed back), keywords: all right.
    (again,) = on_jax(inp_j, 0.5, out_j)
    (fed_back,) = on_jax(inp_j, 0.5, first)
    (by_keyword,) = on_jax(inp_j, alpha=0.5, out=out_j)
    for result in (again, by_keyword):
        np.testing.assert_allclose(np.asarray(result), _reference(inp, 0.5, out), rtol=1e-14)
    np.testing.assert_allclose(
        np.asarray(fed_back), _reference(inp, 0.5, np.asarray(first)), rtol=1e-14
    )
    refusal = r"is an array of numpy, but the backend runs on jax\.numpy"
    with pytest.raises(ArgumentError, match=refusal):
        on_jax(inp, 0.5, out_j)  # a NumPy input after JAX calls: refused, not converted


def test_a_refused_call_after_an_accepted_one_is_refused_again(jax_jit):
    on_jax = scaled_lap.with_backend(jax_jit)
    namespace = jax_jit.array_namespace
    good = namespace.zeros((8, 7, 3))
    on_jax(good, 1.0, good + 0.0)
    with pytest.raises(DomainError, match="missing halo"):
        on_jax(namespace.zeros((2, 7, 3)), 1.0, good)
    with pytest.raises(ArgumentError, match="must be a real number"):
        on_jax(good, None, good)


def test_lower_shows_the_ir_and_the_executable_shows_stablehlo(jax_jit):
    _, _, inp_j, out_j = _arrays(jax_jit)
    lowered = scaled_lap.with_backend(jax_jit).lower(inp_j, 1.0, out_j)
    assert lowered.as_text() == str(lowered.ir)
    assert lowered.source.format.language == "jax"
    compiled = lowered.compile()
    assert "stablehlo" in compiled.executable.as_text(inp_j, 1.0, out_j)


def test_jax_jit_is_not_warned_about_a_missing_disk_cache(jax_jit, caplog):
    from backends.base import _warned_uncached  # noqa: PLC0415

    _warned_uncached.discard("jax_jit")
    with caplog.at_level(logging.WARNING, logger="backends.base"):
        backends.CompiledBackend("jax_jit", jax_jit.allocator, jax_jit.pipeline)
    assert not [r for r in caplog.records if "not cached on disk" in r.getMessage()]


@pytest.mark.simulates_missing_package
def test_missing_jax_names_the_package_and_extra(monkeypatch):
    import builtins  # noqa: PLC0415
    import sys  # noqa: PLC0415

    real_import = builtins.__import__

    def no_jax(name, *args, **kwargs):
        if name.split(".")[0] == "jax":
            raise ImportError("No module named 'jax'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_jax)
    monkeypatch.delitem(backends._created, "jax_jit", raising=False)
    monkeypatch.setitem(sys.modules, "jax", None)
    monkeypatch.setitem(sys.modules, "jax.numpy", None)
    with pytest.raises(AttributeError, match=r"'jax'.*stencilforge\[jax\]"):
        backends.jax_jit  # noqa: B018
