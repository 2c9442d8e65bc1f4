"""c_cpu compiles each stencil's inner loop for its domain's inner extent
(``backends.c.specialization``): one executable per extent, chosen by the dispatcher, and a
native check that refuses any other extent, so no executable ever runs a column of a length
it was not built for. Results must match NumPy bit for bit. No timing is asserted.
"""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import backends
from backends.c.specialization import INNER_EXTENT, compile_time_args
from pipeline.dsl import Dimension, Field, field_operator, float64, int32, program
from pipeline.errors import ArgumentError

pytestmark = pytest.mark.skipif(
    "c_cpu" not in backends.available_backends(), reason="c_cpu needs a C compiler"
)

I, J, K = Dimension("I"), Dimension("J"), Dimension("K")  # noqa: E741
IJK = Field[[I, J, K], float64]


@field_operator
def diffuse(f: IJK) -> IJK:
    # A local read at shifted positions (a temporary) and reads along K.
    lap = 4.0 * f - (f(I - 1) + f(I + 1) + f(J - 1) + f(J + 1))
    return f - 0.05 * (lap(I + 1) - lap) + 0.25 * (f(K - 1) + f(K + 1))


@program
def diffuse_inside(f: IJK, out: IJK):
    diffuse(f, out=out[2:-2, 2:-2, 1:-1])


def diffuse_reference(f: np.ndarray) -> np.ndarray:
    out = np.zeros_like(f)
    c = f[1:-1, 1:-1, 1:-1]
    around = f[:-2, 1:-1, 1:-1] + f[2:, 1:-1, 1:-1] + f[1:-1, :-2, 1:-1] + f[1:-1, 2:, 1:-1]
    lap = 4.0 * c - around
    out[2:-2, 2:-2, 1:-1] = (
        c[1:-1, 1:-1] - 0.05 * (lap[2:, 1:-1] - lap[1:-1, 1:-1])
        + 0.25 * (f[2:-2, 2:-2, :-2] + f[2:-2, 2:-2, 2:])
    )
    return out


def arguments(nk: int, ni: int = 9, nj: int = 11) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(nk)
    return rng.uniform(-1.0, 1.0, (ni, nj, nk)), np.zeros((ni, nj, nk))


def test_the_compile_time_arguments_hold_every_fields_last_length():
    f, out = arguments(8)
    found = compile_time_args((f, 2.0, out[:, :, ::2]))
    assert found.get(INNER_EXTENT) == (8, None, 4)
    assert found.get("unit_stride") == (True, None, False)
    assert backends.c_cpu.compile_time_args((f, out)) == compile_time_args((f, out))


def test_the_lowered_text_fixes_the_extent_and_checks_it():
    fixed = diffuse_inside.with_backend(backends.c_cpu).lower(*arguments(8)).as_text()
    # The domain is out[..., 1:-1]: 6 points of K.
    assert "hi_K = lo_K + 6;" in fixed
    assert "hi0[2] - lo0[2] != 6) return 1;" in fixed
    unspecialized = diffuse_inside.with_backend(backends.c_cpu).lower().as_text()
    assert "hi_K = lo_K +" not in unspecialized and "!= 6) return 1" not in unspecialized


def test_one_program_runs_every_extent_with_its_own_executable():
    run = diffuse_inside.with_backend(backends.c_cpu)
    executables = {}
    for nk in (8, 3, 8, 40, 3, 2):
        f, out = arguments(nk)
        run(f, out)
        np.testing.assert_array_equal(out, diffuse_reference(f))
        executables.setdefault(nk, run.compile(f, out).executable)
        assert run.compile(f, out).executable is executables[nk]
    assert len({id(e) for e in executables.values()}) == 4


def test_an_executable_refuses_another_extent_without_touching_memory():
    run = diffuse_inside.with_backend(backends.c_cpu)
    compiled = run.compile(*arguments(8))
    f, out = arguments(9)
    # The native entry itself refuses (nothing written), whatever Python let through.
    assert compiled.executable.fast_entry(f, out) is NotImplemented
    assert not out.any()
    with pytest.raises(ArgumentError, match=INNER_EXTENT):
        compiled(f, out)
    assert not out.any()


@field_operator
def shifted(f: IJK) -> IJK:
    return 2.0 * f(K + 1) - f


@program
def shifted_in_bounds(f: IJK, lo: int32, out: IJK):
    # Absolute bounds along K (a scalar): the extent is not fixed at compile time.
    shifted(f, out=out, domain={K: (lo, lo + 3)})


def test_domain_bounds_from_scalars_stay_runtime_extents():
    run = shifted_in_bounds.with_backend(backends.c_cpu)
    f, out = arguments(10)
    assert "hi_K = lo_K +" not in run.lower(f, 2, out).as_text()
    for lo in (0, 2, 6):
        out[...] = 0.0
        run(f, lo, out)
        expected = np.zeros_like(f)
        expected[:, :, lo : lo + 3] = 2.0 * f[:, :, lo + 1 : lo + 4] - f[:, :, lo : lo + 3]
        np.testing.assert_array_equal(out, expected)


@settings(max_examples=12, deadline=None)
@given(nk=st.integers(3, 20), ni=st.integers(5, 12), nj=st.integers(5, 12))
def test_any_extent_matches_numpy(nk, ni, nj):
    f, out = arguments(nk, ni, nj)
    diffuse_inside.with_backend(backends.c_cpu)(f, out)
    np.testing.assert_array_equal(out, diffuse_reference(f))
