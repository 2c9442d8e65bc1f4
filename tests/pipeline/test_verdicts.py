"""The dispatcher remembers the checks' verdict only where it cannot change."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.verdicts import RememberedCheck, RememberedEntry, verdict_key


class _CountingCheck:
    """A check that refuses negative scalars, and counts how often it ran."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, args: tuple) -> None:
        self.calls += 1
        if any(isinstance(a, int | float) and a < 0 for a in args):
            raise ValueError("negative")


def test_numpy_arrays_are_always_checked_again():
    check = _CountingCheck()
    remembered = RememberedCheck(check)
    array = np.zeros(3)
    assert verdict_key((array, 1.0)) is None
    for _ in range(3):
        remembered((array, 1.0))
    assert check.calls == 3


def test_plain_scalars_are_remembered_by_type_and_value():
    check = _CountingCheck()
    remembered = RememberedCheck(check)
    remembered((1.0, 2))
    remembered((1.0, 2))
    assert check.calls == 1
    remembered((1, 2))  # an int is not the float 1.0 to the checks
    remembered((1.5, 2))
    assert check.calls == 3


def test_a_refusal_is_never_remembered():
    check = _CountingCheck()
    remembered = RememberedCheck(check)
    for _ in range(2):
        with pytest.raises(ValueError, match="negative"):
            remembered((-1.0,))
    assert check.calls == 2


def test_the_memory_is_bounded():
    check = _CountingCheck()
    remembered = RememberedCheck(check, maxsize=4)
    for value in range(10):
        remembered((float(value),))
    remembered((9.0,))
    assert check.calls == 10  # 9.0 was kept after the last reset
    remembered((0.0,))
    assert check.calls == 11  # 0.0 was forgotten


@pytest.mark.requires_jax
def test_jax_arrays_are_remembered_by_shape_dtype_and_device():
    import jax.numpy as jnp  # noqa: PLC0415

    check = _CountingCheck()
    remembered = RememberedCheck(check)
    remembered((jnp.zeros((3, 4)), 1.0))
    remembered((jnp.ones((3, 4)), 1.0))  # other values, same checked properties
    assert check.calls == 1
    remembered((jnp.zeros((4, 3)), 1.0))
    remembered((jnp.zeros((3, 4), dtype=jnp.int32), 1.0))
    assert check.calls == 3


def test_accepts_never_runs_the_check():
    check = _CountingCheck()
    remembered = RememberedCheck(check)
    assert not remembered.accepts((1.0,))
    assert remembered((1.0,)) is True
    assert remembered.accepts((1.0,))
    assert not remembered.accepts((-1.0,))
    assert not remembered.accepts((1,))  # an int is another key
    assert check.calls == 1


def test_numpy_arguments_are_not_remembered():
    remembered = RememberedCheck(_CountingCheck())
    array = np.zeros(3)
    assert remembered((array, 1.0)) is False
    assert not remembered.accepts((array, 1.0))


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __call__(self, *args):
        self.calls.append(args)
        return "ran"


def test_a_remembered_entry_runs_only_what_its_check_accepted_for_its_signature():
    check = _CountingCheck()
    remembered = RememberedCheck(check)
    executable = _Recorder()
    signatures = {1.0: "unit", 2.0: "unit", 3.0: "strided"}
    entry = RememberedEntry(remembered, executable, lambda args: signatures[args[0]], "unit")
    assert entry(1.0) is NotImplemented  # never checked: refused, nothing ran
    remembered((1.0,))
    remembered((3.0,))
    assert entry(1.0) == "ran"
    assert entry(3.0) is NotImplemented  # accepted, but built for another signature
    assert entry(2.0) is NotImplemented
    assert executable.calls == [(1.0,)]
    assert check.calls == 2


@pytest.mark.requires_jax
def test_the_same_jax_arrays_are_accepted_and_others_told_by_their_key():
    import jax.numpy as jnp  # noqa: PLC0415

    check = _CountingCheck()
    remembered = RememberedCheck(check)
    array = jnp.zeros((3, 4))
    remembered((array, 1.0))
    assert remembered.accepts((array, 1.0))
    assert remembered.accepts((array + 1.0, 1.0))  # a new array, the same checked properties
    assert not remembered.accepts((array, 2.0))
    assert not remembered.accepts((jnp.zeros((4, 3)), 1.0))
    assert not remembered.accepts((array,))
    del array  # the memory holds its arrays weakly: a freed one is told by its key
    assert remembered.accepts((jnp.ones((3, 4)), 1.0))
    assert check.calls == 1
