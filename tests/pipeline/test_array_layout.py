"""The layout check of NumPy arguments: its fast path for arrays that are their own
contiguous buffer agrees with the full check on every array it admits."""

from __future__ import annotations

import mmap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

from pipeline.dsl.memory import _is_its_own_contiguous_buffer, _layout_problem


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray:
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3)))
    dtype = np.dtype(draw(st.sampled_from(["<f8", ">f8", "<i4", ">f4", "<f4"])))
    array = np.zeros(shape, dtype, order=draw(st.sampled_from("CF")))
    view = draw(st.sampled_from(["own", "transposed", "sliced", "reversed", "copy", "readonly",
                                 "unaligned", "broadcast", "overlapping"]))
    if view == "transposed":
        array = array.T
    elif view == "sliced":
        array = array[..., ::2]
    elif view == "reversed":
        array = array[::-1]
    elif view == "copy":
        array = array.copy(order="K")
    elif view == "readonly":
        array.flags.writeable = False
    elif view == "unaligned":
        raw = np.zeros(array.nbytes + 1, np.uint8)[1:]
        array = raw.view(dtype).reshape(shape) if array.size else array
    elif view == "broadcast":
        array = np.broadcast_to(np.zeros(shape[-1:], dtype), (2, *shape))
    elif view == "overlapping" and array.ndim > 1 and array.size:
        array = as_strided(array, array.shape, (dtype.itemsize,) * array.ndim, writeable=True)
    return array


@settings(max_examples=400, deadline=None)
@given(arrays(), st.booleans())
def test_an_array_the_fast_path_admits_has_no_layout_problem(array, written):
    if _is_its_own_contiguous_buffer(array, written):
        assert _layout_problem(array, written) is None


def test_the_fast_path_admits_arrays_from_numpy_allocations_and_only_them():
    owned = np.zeros((4, 5, 3))
    assert _is_its_own_contiguous_buffer(owned, written=True)
    assert _is_its_own_contiguous_buffer(np.asfortranarray(owned), written=True)
    assert not _is_its_own_contiguous_buffer(owned[1:], written=True)  # a view: checked fully
    assert not _is_its_own_contiguous_buffer(owned.astype(">f8"), written=False)
    readonly = owned.copy()
    readonly.flags.writeable = False
    assert _is_its_own_contiguous_buffer(readonly, written=False)
    assert not _is_its_own_contiguous_buffer(readonly, written=True)


@pytest.mark.parametrize("written", [False, True])
def test_arrays_on_foreign_buffers_take_the_full_check(written):
    buffer = mmap.mmap(-1, 8 * 60)
    array = np.frombuffer(buffer, np.float64).reshape(3, 4, 5)
    assert not array.flags.owndata
    assert not _is_its_own_contiguous_buffer(array, written)
    assert _layout_problem(array, written) is None
    del array
    buffer.close()
