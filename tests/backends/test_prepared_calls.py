"""The memo of prepared native calls: found only for arguments a full call checked, unchanged."""

from __future__ import annotations

import gc
import weakref

import numpy as np

from backends.prepared_calls import ArgumentSignature, PreparedCalls


def _remembered(args, *, written=frozenset(), context=None, maxsize=8):
    calls = PreparedCalls(maxsize)
    signature = ArgumentSignature.of(args, (0, 1), (2,), written=written, context=context)
    calls.remember(args, signature, "prepared")
    return calls


def test_the_same_arrays_and_scalars_find_the_prepared_call():
    args = (np.ones((4, 3)), np.zeros((4, 3)), 2.0)
    calls = _remembered(args)
    assert calls.find(args) == "prepared"
    args[0][...] = 5.0  # new data in the same arrays: still the same call
    assert calls.find(args) == "prepared"


def test_changed_arguments_find_nothing():
    inp, out = np.ones((4, 3)), np.zeros((4, 3))
    calls = _remembered((inp, out, 2.0), written=frozenset({1}))
    assert calls.find((inp, out, 3.0)) is None  # another scalar value
    assert calls.find((inp, out, 2)) is None  # another scalar type
    assert calls.find((np.ones((4, 3)), out, 2.0)) is None  # another array, equal
    assert calls.find((inp, out)) is None
    inp.shape = (3, 4)
    assert calls.find((inp, out, 2.0)) is None
    inp.shape = (4, 3)
    inp.dtype = np.int64
    assert calls.find((inp, out, 2.0)) is None
    inp.dtype = np.float64
    assert calls.find((inp, out, 2.0)) == "prepared"
    out.flags.writeable = False  # a written array made read-only since
    assert calls.find((inp, out, 2.0)) is None


def test_a_call_prepared_in_another_context_is_not_found():
    args = (np.ones(3), np.zeros(3), 1.0)
    calls = _remembered(args, context=0)
    assert calls.find(args, 0) == "prepared"
    assert calls.find(args, 1) is None


def test_a_prepared_call_keeps_no_argument_alive():
    inp = np.ones(3)
    calls = _remembered((inp, np.zeros(3), 1.0))
    freed = weakref.ref(inp)
    del inp
    gc.collect()
    assert freed() is None
    assert calls.find((np.ones(3), np.zeros(3), 1.0)) is None


def test_only_the_last_prepared_calls_are_kept():
    calls = PreparedCalls(maxsize=2)
    arguments = [(np.ones(3), np.zeros(3), float(n)) for n in range(3)]
    for n, args in enumerate(arguments):
        calls.remember(args, ArgumentSignature.of(args, (0, 1), (2,)), n)
    assert [calls.find(args) for args in arguments] == [None, 1, 2]
