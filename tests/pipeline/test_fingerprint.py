"""Fingerprints: content-based, type-tagged, stable across processes and hash seeds."""

from __future__ import annotations

import dataclasses
import enum
import functools
import os
import pickle
import subprocess
import sys
import textwrap

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from allocators import DeviceType
from pipeline import FingerprintError, SourceFormat, fingerprint

primitives = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.binary(max_size=20),
    st.complex_numbers(allow_nan=False),
)
arrays = hnp.arrays(
    dtype=st.sampled_from([np.float64, np.float32, np.int32, np.int64, np.bool_]),
    shape=hnp.array_shapes(max_dims=3, max_side=4),
)
values = st.recursive(
    st.one_of(
        primitives,
        arrays,
        st.sampled_from([np.dtype("float64"), np.dtype("int32"), np.dtype(">f4")]),
        st.sampled_from(list(DeviceType)),
        st.builds(SourceFormat, st.sampled_from(["c", "cuda"]), st.sampled_from(list(DeviceType))),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=5), children, max_size=4),
        st.frozensets(st.one_of(st.integers(), st.text(max_size=5)), max_size=4),
    ),
    max_leaves=12,
)

_CHILD = textwrap.dedent(
    """
    import pickle, sys
    from pipeline import fingerprint
    for value in pickle.load(sys.stdin.buffer):
        print(fingerprint(value))
    """
)


def _fingerprints_in_subprocess(batch: list[object], hash_seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], input=pickle.dumps(batch), capture_output=True,
        env=env, check=True,
    )
    return out.stdout.decode().split()


@settings(max_examples=8, deadline=None)
@given(st.lists(values, min_size=1, max_size=25))
def test_fingerprints_are_equal_in_another_process_with_another_hash_seed(batch):
    here = [fingerprint(v) for v in batch]
    assert _fingerprints_in_subprocess(batch, "12345") == here


@settings(max_examples=300)
@given(values, values)
def test_distinct_values_have_distinct_fingerprints(a, b):
    same_content = pickle.dumps(a) == pickle.dumps(b)
    if not same_content:
        try:
            equal = bool(a == b) and type(a) is type(b)
        except (ValueError, TypeError):  # arrays compare elementwise
            equal = False
        if not equal:
            assert fingerprint(a) != fingerprint(b)


@given(values)
def test_fingerprint_is_deterministic(value):
    assert fingerprint(value) == fingerprint(value)


def test_numbers_of_different_types_differ():
    prints = {fingerprint(v) for v in (1, 1.0, True, np.float64(1.0), np.int64(1), "1", b"1")}
    assert len(prints) == 7


def test_ordered_containers_are_tagged_by_type_and_order():
    assert fingerprint((1, 2)) != fingerprint([1, 2])
    assert fingerprint((1, 2)) != fingerprint((2, 1))


def test_unordered_containers_ignore_order():
    assert fingerprint({"a": 1, "b": 2}) == fingerprint({"b": 2, "a": 1})
    assert fingerprint(frozenset({3, 1, 2})) == fingerprint(frozenset({2, 3, 1}))
    assert fingerprint({1, 2}) != fingerprint(frozenset({1, 2}))


def test_arrays_differ_by_dtype_shape_and_content():
    a = np.arange(6, dtype=np.float64)
    assert fingerprint(a) != fingerprint(a.astype(np.float32))
    assert fingerprint(a) != fingerprint(a.reshape(2, 3))
    assert fingerprint(a) == fingerprint(a.copy())
    assert fingerprint(a.reshape(2, 3).T) == fingerprint(np.ascontiguousarray(a.reshape(2, 3).T))


@attrs.frozen
class Config:
    flags: tuple[str, ...]
    level: int = 3


@dataclasses.dataclass(frozen=True)
class DataConfig:
    flags: tuple[str, ...]


class Color(enum.Enum):
    RED = 1
    GREEN = 2


def test_attrs_and_dataclass_instances_are_fingerprinted_by_fields():
    assert fingerprint(Config(("-O3",))) == fingerprint(Config(("-O3",)))
    assert fingerprint(Config(("-O3",))) != fingerprint(Config(("-O2",)))
    assert fingerprint(Config(("-O3",))) != fingerprint(attrs.evolve(Config(("-O3",)), level=2))
    assert fingerprint(DataConfig(("-O3",))) != fingerprint(Config(("-O3",)))


def test_enums_and_types():
    assert fingerprint(Color.RED) != fingerprint(Color.GREEN)
    assert fingerprint(Color.RED) != fingerprint(1)
    assert fingerprint(Config) != fingerprint(DataConfig)


def _make_adder(n):
    def add(x):
        return x + n

    return add


def test_functions_are_identified_by_name_code_and_closure():
    assert fingerprint(_make_adder(1)) == fingerprint(_make_adder(1))
    assert fingerprint(_make_adder(1)) != fingerprint(_make_adder(2))

    def f(x):
        return x + 1

    def g(x):
        return x + 2

    g.__qualname__ = f.__qualname__
    assert fingerprint(f) != fingerprint(g), "same name, different code"
    assert fingerprint(functools.partial(f, 1)) != fingerprint(functools.partial(f, 2))


def test_functions_are_stable_across_processes():
    code = "from pipeline import fingerprint; import tests_helper_module as m; print(fingerprint(m.scale))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")])}
    prints = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                       env={**env, "PYTHONHASHSEED": seed}).stdout.strip()
        for seed in ("1", "2")
    }
    assert len(prints) == 1


def test_recursive_structures_terminate():
    a: list[object] = [1]
    a.append(a)
    assert fingerprint(a) == fingerprint(a)


def test_custom_fingerprint_hook():
    class Tagged:
        def __init__(self, tag):
            self.tag = tag

        def __fingerprint__(self):
            return self.tag

    assert fingerprint(Tagged("a")) == fingerprint(Tagged("a"))
    assert fingerprint(Tagged("a")) != fingerprint(Tagged("b"))


def test_strict_mode_names_the_object_that_cannot_be_fingerprinted():
    class Opaque:
        def __repr__(self):
            return "<Opaque thing>"

    with pytest.raises(FingerprintError, match=r"<Opaque thing>.*value\['options'\]\[1\]"):
        fingerprint({"options": (1, Opaque())})
    assert isinstance(FingerprintError("x"), TypeError)


def test_non_strict_mode_falls_back_to_identity_within_the_process():
    class Opaque:
        pass

    thing = Opaque()
    assert fingerprint(thing, strict=False) == fingerprint(thing, strict=False)
    assert fingerprint(thing, strict=False) != fingerprint(Opaque(), strict=False)
