import gc
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import allocators
from allocators import (
    CuPyBufferAllocator,
    DeviceType,
    FieldBufferAllocator,
    MissingOptionalDependencyError,
    NumPyBufferAllocator,
)

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint16", "float32", "float64", "complex128"]


def _address(array, index):
    return array.ctypes.data + sum(i * s for i, s in zip(index, array.strides, strict=True))


@st.composite
def allocations(draw, *, allow_empty=False):
    ndim = draw(st.integers(0, 4))
    low = 0 if allow_empty else 1
    shape = tuple(draw(st.lists(st.integers(low, 7), min_size=ndim, max_size=ndim)))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    alignment = draw(st.sampled_from([a for a in (8, 16, 32, 64, 128) if a % dtype.itemsize == 0]))
    layout = tuple(draw(st.permutations(range(ndim))))
    # an empty field has no element to align
    aligned_index = tuple(draw(st.integers(0, n - 1)) for n in shape) if all(shape) else None
    return shape, dtype, alignment, layout, aligned_index


@settings(max_examples=300, deadline=None)
@given(allocations())
def test_aligned_index_address_is_a_multiple_of_the_alignment(case):
    shape, dtype, alignment, layout, aligned_index = case
    array = NumPyBufferAllocator(alignment).allocate(
        shape, dtype, layout=layout, aligned_index=aligned_index
    )
    assert array.shape == shape
    assert array.dtype == dtype
    assert _address(array, aligned_index) % alignment == 0


@settings(max_examples=200, deadline=None)
@given(allocations(allow_empty=True))
def test_strides_follow_the_layout(case):
    shape, dtype, alignment, layout, _ = case
    array = NumPyBufferAllocator(alignment).allocate(shape, dtype, layout=layout)
    ordered = [array.strides[dim] for dim in layout]
    assert ordered == sorted(ordered, reverse=True)
    if shape:
        assert array.strides[layout[-1]] == dtype.itemsize
    if all(shape):
        # dense: the buffer spans exactly the elements, no padding between them
        span = sum((n - 1) * s for n, s in zip(shape, array.strides, strict=True))
        assert span + dtype.itemsize == array.nbytes


@settings(max_examples=150, deadline=None)
@given(allocations(), st.sampled_from(["zeros", "ones", "full"]))
def test_construction_fills_every_element(case, kind):
    shape, dtype, alignment, layout, aligned_index = case
    allocator = NumPyBufferAllocator(alignment)
    options = {"allocator": allocator, "layout": layout, "aligned_index": aligned_index}
    if kind == "full":
        array = allocators.full(shape, dtype, fill_value=3, **options)
        expected = np.full(shape, 3, dtype=dtype)
    else:
        array = getattr(allocators, kind)(shape, dtype, **options)
        expected = getattr(np, kind)(shape, dtype=dtype)
    np.testing.assert_array_equal(array, expected)
    assert _address(array, aligned_index) % alignment == 0


def test_default_alignment_is_64_bytes_at_element_zero():
    allocator = NumPyBufferAllocator()
    assert allocator.byte_alignment == 64
    for _ in range(10):
        assert allocator.allocate((3, 5), np.float32).ctypes.data % 64 == 0


def test_c_and_fortran_layouts_are_contiguous():
    allocator = NumPyBufferAllocator()
    assert allocator.allocate((3, 4, 5), np.float64).flags.c_contiguous
    assert allocator.allocate((3, 4, 5), np.float64, layout=(2, 1, 0)).flags.f_contiguous


def test_first_interior_point_after_halo_is_aligned():
    array = NumPyBufferAllocator(64).allocate((10, 10, 10), np.float64, aligned_index=(2, 2, 2))
    assert _address(array, (2, 2, 2)) % 64 == 0


def test_allocated_array_is_writeable_and_keeps_its_buffer_alive():
    array = NumPyBufferAllocator().allocate((16, 16), np.float64, aligned_index=(1, 1))
    gc.collect()
    array[...] = 7.0
    assert array.flags.writeable
    assert array.base is not None
    np.testing.assert_array_equal(array, np.full((16, 16), 7.0))


def test_scalar_shape_and_int_shape():
    allocator = NumPyBufferAllocator()
    assert allocator.allocate((), np.float64).shape == ()
    assert allocator.allocate(5, np.float64).shape == (5,)
    assert allocator.allocate(np.int64(5), np.float64).shape == (5,)


@pytest.mark.parametrize("dtype", [np.float32, "float32", float, np.dtype("int16")])
def test_dtype_accepts_numpy_dtypes_types_and_strings(dtype):
    assert NumPyBufferAllocator().allocate(2, dtype).dtype == np.dtype(dtype)


def test_allocators_satisfy_the_protocol():
    assert isinstance(NumPyBufferAllocator(), FieldBufferAllocator)
    assert isinstance(CuPyBufferAllocator(), FieldBufferAllocator)
    assert NumPyBufferAllocator().device_type is DeviceType.CPU
    assert CuPyBufferAllocator().device_type is DeviceType.CUDA
    assert CuPyBufferAllocator(device_type=DeviceType.ROCM).device_type is DeviceType.ROCM


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"shape": (3, -1)}, r"shape \(3, -1\) has the negative extent -1"),
        ({"shape": (3, 1.5)}, r"shape \(3, 1.5\) has the non-integer extent 1.5"),
        ({"shape": "ab"}, r"shape 'ab' has the non-integer extent 'a'"),
        ({"shape": None}, r"shape None is neither an int nor a sequence"),
        ({"layout": (0, 0)}, r"layout \(0, 0\) is not a permutation of range\(2\)"),
        ({"layout": (0,)}, r"layout \(0,\) is not a permutation of range\(2\)"),
        ({"layout": (0, 2)}, r"layout \(0, 2\) is not a permutation"),
        ({"aligned_index": (1,)}, r"aligned_index \(1,\) has 1 entries but the shape"),
        ({"aligned_index": (0, 4)}, r"aligned_index \(0, 4\) is out of range in dimension 1"),
        ({"aligned_index": (-1, 0)}, r"aligned_index \(-1, 0\) is out of range in dimension 0"),
        ({"device_id": 1}, r"device_id 1 is invalid for the CPU allocator"),
    ],
)
def test_invalid_arguments_are_value_errors_naming_the_argument(kwargs, message):
    arguments = {"shape": (3, 4), "dtype": np.float64, **kwargs}
    shape = arguments.pop("shape")
    dtype = arguments.pop("dtype")
    with pytest.raises(ValueError, match=message):
        NumPyBufferAllocator().allocate(shape, dtype, **arguments)


@pytest.mark.parametrize("alignment", [0, -8, 3, 48, 1.5, True])
def test_alignment_must_be_a_power_of_two(alignment):
    with pytest.raises(ValueError, match=r"byte_alignment .* is not a positive power of two"):
        NumPyBufferAllocator(alignment)


def test_alignment_must_be_a_multiple_of_the_itemsize():
    with pytest.raises(ValueError, match="byte_alignment 4 is not a multiple of the itemsize 8"):
        NumPyBufferAllocator(4).allocate(3, np.float64)


def test_bad_dtype_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="dtype 'not-a-dtype' is not a NumPy dtype"):
        NumPyBufferAllocator().allocate(3, "not-a-dtype")


def test_cupy_allocator_rejects_cpu_device_type():
    with pytest.raises(ValueError, match=r"device_type .* CuPyBufferAllocator"):
        CuPyBufferAllocator(device_type=DeviceType.CPU)


@pytest.mark.simulates_missing_package
def test_creating_the_cupy_allocator_does_not_import_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # any `import cupy` would now raise
    allocator = CuPyBufferAllocator()
    assert allocators.is_field_allocator_for(allocator, DeviceType.CUDA)


@pytest.mark.simulates_missing_package
def test_missing_cupy_names_the_cuda_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    with pytest.raises(MissingOptionalDependencyError, match=r"pip install 'stencilforge\[cuda\]'"):
        CuPyBufferAllocator().allocate((2, 2), np.float64)
    with pytest.raises(ImportError):
        allocators.zeros((2, 2), np.float64, allocator=CuPyBufferAllocator())
