"""The refusal checks: what a backend must refuse before anything runs, and how it says so.

A program whose inputs do not cover the output domain plus the stencil's reach raises
``DomainError`` naming the field, dimension and missing halo, with the same message as the
reference backend (``embedded_numpy``); arguments of the wrong dtype or rank are refused naming
the argument, and leave every output as it was. Each check raises ``AssertionError`` when the
backend under test does otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs
import numpy as np

from backends.base import Backend
from backends.conformance import corpus
from backends.conformance.arrays import bind, to_backend_array, to_numpy
from backends.conformance.corpus import MissingHalo
from backends.conformance.corpus.composition import two_stage_laplacian
from pipeline.dsl import DomainError

__all__ = [
    "WRONG_ARGUMENTS",
    "WrongArgument",
    "check_input_smaller_than_output",
    "check_missing_halo",
    "check_wrong_argument",
    "check_wrong_argument_of_a_later_call",
]


def _raised(kinds: tuple[type[Exception], ...], call: Callable[[], object]) -> Exception:
    """The exception of one of ``kinds`` that ``call`` raises; AssertionError if none."""
    try:
        call()
    except kinds as error:
        return error
    names = " or ".join(kind.__name__ for kind in kinds)
    raise AssertionError(f"expected {names}, but the call returned")


def _names(message: str, word: str | int) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(str(word))}(?![\w.])", message) is not None


def _domain_error(program: object, backend: Backend, shape: tuple[int, ...],
                  inp_shape: tuple[int, ...]) -> Exception:
    rng = np.random.default_rng(11)
    inp = to_backend_array(rng.uniform(-1, 1, inp_shape), backend)
    out = to_backend_array(corpus.sentinel(shape, np.float64), backend)
    return _raised((DomainError,), lambda: bind(program, backend)(inp, out))


def check_missing_halo(missing: MissingHalo, backend: Backend, reference: Backend) -> None:
    """``missing``'s program raises ``DomainError`` naming its field, dimension and amount,
    of the same type and message as on ``reference``."""
    shape = corpus.REACH_SHAPE
    error = _domain_error(missing.program, backend, shape, shape)
    message = str(error)
    assert _names(message, missing.field), message
    assert _names(message, missing.dimension), message
    assert _names(message, missing.missing), message
    expected = _domain_error(missing.program, reference, shape, shape)
    assert type(error) is type(expected)
    assert message == str(expected), f"{message!r} differs from the reference {expected}"


def check_input_smaller_than_output(backend: Backend, reference: Backend) -> None:
    """An input one cell short in I of the laplacian's reach raises the reference's
    ``DomainError``, naming ``inp``, ``I`` and 1."""
    # Output domain I in [1, 8) reads inp up to I = 8, but inp has I extent 7: missing 1.
    shape, inp_shape = (9, 9, 4), (8, 9, 4)
    message = str(_domain_error(corpus.lap, backend, shape, inp_shape))
    assert _names(message, "inp") and _names(message, "I") and _names(message, 1), message
    expected = str(_domain_error(corpus.lap, reference, shape, inp_shape))
    assert message == expected, f"{message!r} differs from the reference {expected!r}"


@attrs.frozen
class WrongArgument:
    """Laplacian arguments of which ``culprit`` has a wrong dtype or rank."""

    name: str
    inp_shape: tuple[int, ...]
    inp_dtype: type[np.generic]
    out_shape: tuple[int, ...]
    out_dtype: type[np.generic]
    culprit: str


WRONG_ARGUMENTS = (
    WrongArgument("out_float32", (8, 7, 3), np.float64, (8, 7, 3), np.float32, "out"),
    WrongArgument("out_int64", (8, 7, 3), np.float64, (8, 7, 3), np.int64, "out"),
    WrongArgument("out_rank_2", (8, 7, 3), np.float64, (8, 7), np.float64, "out"),
    WrongArgument("inp_rank_2", (8, 7), np.float64, (8, 7, 3), np.float64, "inp"),
    WrongArgument("inp_int32", (8, 7, 3), np.int32, (8, 7, 3), np.float64, "inp"),
    WrongArgument("inp_rank_4", (8, 7, 3, 2), np.float64, (8, 7, 3), np.float64, "inp"),
)


def check_wrong_argument(wrong: WrongArgument, backend: Backend) -> None:
    """The laplacian refuses ``wrong``'s arguments (``TypeError``/``ValueError``) naming the
    culprit, and leaves the output as it was."""
    inp = to_backend_array(np.ones(wrong.inp_shape, wrong.inp_dtype), backend)
    out_host = corpus.sentinel(wrong.out_shape, wrong.out_dtype)
    out = to_backend_array(out_host, backend)
    error = _raised((TypeError, ValueError), lambda: bind(corpus.lap, backend)(inp, out))
    assert _names(str(error), wrong.culprit), str(error)
    np.testing.assert_array_equal(to_numpy(out), out_host)


def check_wrong_argument_of_a_later_call(backend: Backend) -> None:
    """A wrong argument of a program's second call is refused before its first call runs."""
    shape = (8, 7, 3)
    inp = to_backend_array(np.ones(shape), backend)
    tmp_host = corpus.sentinel(shape, np.float64)
    tmp = to_backend_array(tmp_host, backend)
    out = to_backend_array(corpus.sentinel(shape, np.float32), backend)
    error = _raised((TypeError, ValueError),
                    lambda: bind(two_stage_laplacian, backend)(inp, tmp, out))
    assert _names(str(error), "out"), str(error)
    np.testing.assert_array_equal(to_numpy(tmp), tmp_host)
