"""The corpus checks: each program on a backend agrees with its hand-written NumPy reference.

Each check takes the backend to prove and raises ``AssertionError`` naming the case and the
argument at the first disagreement. The shipped tests (``test_corpus.py`` here) and
stencilforge's own suite call these same functions, one with the backend of the command line,
the other with each built-in backend.
"""

from __future__ import annotations

import numpy as np

import allocators
from backends.base import Backend
from backends.conformance import corpus
from backends.conformance.arrays import bind, run_program, to_backend_array, to_numpy
from backends.conformance.corpus import Case
from backends.conformance.corpus.cases import copied, labelled_leaves, leaf_map
from pipeline.dsl import LocatedArray, float64

__all__ = [
    "check_case",
    "check_design_example",
    "check_mixed_positional_and_keyword_arguments",
    "check_positional_arguments",
    "check_reach_that_fits",
]


def _assert_matches(case: Case, name: str, got: np.ndarray, expected: np.ndarray,
                    prefilled: np.ndarray) -> None:
    assert got.dtype == expected.dtype, f"{name}: dtype {got.dtype}, expected {expected.dtype}"
    assert got.shape == expected.shape, f"{name}: shape {got.shape}, expected {expected.shape}"
    untouched = expected == prefilled
    if expected.dtype != np.bool_:
        # Cells outside the out slice must keep the sentinel bit for bit.
        np.testing.assert_array_equal(
            got[untouched], prefilled[untouched],
            err_msg=f"{case.name}: {name} changed cells outside the out slice",
        )
    rtol, atol = case.tolerance(expected.dtype)
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(got, expected, err_msg=f"{case.name}: {name}")
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol,
                                   err_msg=f"{case.name}: {name}")


def check_case(case: Case, backend: Backend) -> None:
    """``case``'s program on ``backend`` writes its reference's values into its out slices,
    leaves every other cell of its outputs as it was, and modifies no input.

    Raises:
        AssertionError: naming the case and the argument that differs.
    """
    host = case.build()
    expected = {name: copied(value) for name, value in host.items()}
    case.reference(**expected)
    args = {name: leaf_map(lambda leaf: to_backend_array(leaf, backend)
                           if isinstance(leaf, np.ndarray) else leaf, value)
            for name, value in host.items()}

    after = run_program(case.program, backend, written=case.outputs,
                        **case.call_arguments(args))
    after = {key: value.array if isinstance(value, LocatedArray) else value
             for key, value in after.items()}

    for name in case.outputs:
        leaves = zip(labelled_leaves(name, after[name]), labelled_leaves(name, expected[name]),
                     labelled_leaves(name, host[name]), strict=True)
        for (leaf, got), (_, want), (_, prefilled) in leaves:
            _assert_matches(case, leaf, to_numpy(got), want, prefilled)
    for name, value in host.items():
        if name in case.outputs:
            continue
        for (leaf, got), (_, given) in zip(labelled_leaves(name, after[name]),
                                           labelled_leaves(name, value), strict=True):
            if isinstance(given, np.ndarray):
                np.testing.assert_array_equal(to_numpy(got), given,
                                              err_msg=f"{case.name}: input {leaf} was modified")


def check_positional_arguments(backend: Backend) -> None:
    """The laplacian takes its arguments by position."""
    rng = np.random.default_rng(7)
    inp = rng.uniform(-1, 1, (8, 7, 3))
    out = corpus.sentinel(inp.shape, np.float64)
    inp_b, out_b = to_backend_array(inp, backend), to_backend_array(out, backend)
    corpus.lap_reference(inp, out)
    after = run_program(corpus.lap, backend, inp_b, out_b, written=(1,))
    np.testing.assert_allclose(to_numpy(after[1]), out, rtol=1e-12, atol=1e-12)


def check_mixed_positional_and_keyword_arguments(backend: Backend) -> None:
    """hdiff takes its field by position and its scalar and output by keyword."""
    rng = np.random.default_rng(3)
    inp = rng.uniform(-1, 1, (16, 16, 8))
    out = corpus.sentinel(inp.shape, np.float64)
    expected = out.copy()
    corpus.hdiff_reference(inp, 0.05, expected)
    after = run_program(corpus.hdiff_program, backend, to_backend_array(inp, backend),
                        written=("out",), coeff=0.05, out=to_backend_array(out, backend))
    np.testing.assert_allclose(to_numpy(after["out"]), expected, rtol=1e-12, atol=1e-12)


def check_design_example(backend: Backend) -> None:
    """The design's example: fields allocated with the program itself, then one call."""
    lap = bind(corpus.lap, backend)
    inp = allocators.ones((64, 64, 32), float64, allocator=lap)
    out = allocators.zeros((64, 64, 32), float64, allocator=lap)
    after = run_program(corpus.lap, backend, inp, out, written=(1,))
    np.testing.assert_array_equal(to_numpy(after[1]), np.zeros((64, 64, 32)))
    assert to_numpy(after[1]).dtype == np.float64


def check_reach_that_fits(backend: Backend) -> None:
    """A program whose out slice leaves exactly its stencil's reach inside the input runs."""
    rng = np.random.default_rng(5)
    inp = rng.uniform(-1, 1, corpus.REACH_SHAPE)
    out = corpus.sentinel(corpus.REACH_SHAPE, np.float64)
    expected = out.copy()
    d = corpus.dom(corpus.REACH_SHAPE, np.s_[:-2, 1:, :-3])
    expected[d] = corpus.at(inp, d, 2) + corpus.at(inp, d, 0, -1) + corpus.at(inp, d, 0, 0, 3)
    after = run_program(corpus.reach_fits, backend, to_backend_array(inp, backend),
                        to_backend_array(out, backend), written=(1,))
    np.testing.assert_allclose(to_numpy(after[1]), expected, rtol=1e-12, atol=1e-12)
