import sys

import array_api_strict as xp
import numpy as np
import pytest

import allocators
from allocators import (
    CuPyBufferAllocator,
    Device,
    DeviceMismatchError,
    DeviceType,
    NumPyBufferAllocator,
    device_of,
)


class Backend:
    """Stands in for a backend or a program: an allocator factory through a property."""

    def __init__(self, allocator):
        self._allocator = allocator

    @property
    def __field_allocator__(self):
        return self._allocator


def test_default_allocator_gives_aligned_numpy_arrays():
    array = allocators.zeros((4, 8), np.float64)
    assert isinstance(array, np.ndarray)
    assert array.ctypes.data % 64 == 0
    np.testing.assert_array_equal(array, 0.0)


@pytest.mark.parametrize(
    ("function", "kwargs", "expected"),
    [
        (allocators.zeros, {}, 0),
        (allocators.ones, {}, 1),
        (allocators.full, {"fill_value": 2.5}, 2.5),
    ],
)
def test_filled_constructors(function, kwargs, expected):
    array = function((3, 2), "float32", **kwargs)
    assert array.dtype == np.float32
    np.testing.assert_array_equal(array, np.full((3, 2), expected, dtype=np.float32))


def test_empty_has_requested_shape_dtype_and_layout():
    array = allocators.empty((2, 3, 4), np.int32, layout=(2, 1, 0), aligned_index=(1, 1, 1))
    assert array.shape == (2, 3, 4)
    assert array.dtype == np.int32
    assert array.flags.f_contiguous


def test_backend_like_factory_is_unwrapped():
    backend = Backend(NumPyBufferAllocator(128))
    array = allocators.ones((5, 5), np.float64, allocator=backend, aligned_index=(1, 1))
    assert (array.ctypes.data + array.strides[0] + array.strides[1]) % 128 == 0
    np.testing.assert_array_equal(array, 1.0)


def test_embedded_backend_like_factory_uses_the_namespace():
    array = allocators.full((2, 2), np.int64, fill_value=7, allocator=Backend(np))
    assert isinstance(array, np.ndarray)
    np.testing.assert_array_equal(array, 7)


def test_numpy_namespace_path():
    array = allocators.zeros((2, 3), "float32", allocator=np, device=Device(DeviceType.CPU))
    assert array.dtype == np.float32
    np.testing.assert_array_equal(array, 0)


@pytest.mark.parametrize(
    ("function", "kwargs", "expected"),
    [
        (allocators.empty, {}, None),
        (allocators.zeros, {}, 0),
        (allocators.ones, {}, 1),
        (allocators.full, {"fill_value": 4}, 4),
    ],
)
@pytest.mark.parametrize("dtype", [np.float64, "float64", xp.float64])
def test_array_api_strict_namespace_path(function, kwargs, expected, dtype):
    array = function((2, 3), dtype, allocator=xp, **kwargs)
    assert type(array) is type(xp.asarray(0.0))
    assert array.dtype == xp.float64
    assert array.shape == (2, 3)
    assert device_of(array) == Device(DeviceType.CPU, 0)
    if expected is not None:
        assert xp.all(array == expected)


def test_array_api_strict_bool_and_int_dtypes():
    assert allocators.zeros(3, bool, allocator=xp).dtype == xp.bool
    assert allocators.ones(3, np.int32, allocator=xp).dtype == xp.int32


def test_namespace_native_device_is_passed_through():
    device = xp.Device("device1")
    assert allocators.zeros(3, "float64", allocator=xp, device=device).device == device


def test_namespace_path_accepts_trivial_layout_and_aligned_index():
    array = allocators.ones((2, 3), np.float64, allocator=xp, layout=(0, 1), aligned_index=(0, 0))
    assert array.shape == (2, 3)


def test_namespace_path_rejects_a_layout_it_cannot_honour():
    with pytest.raises(ValueError, match=r"layout \(1, 0\) cannot be honoured .* array_api_strict"):
        allocators.zeros((2, 3), np.float64, allocator=xp, layout=(1, 0))


def test_namespace_path_rejects_an_aligned_index_it_cannot_honour():
    with pytest.raises(ValueError, match=r"aligned_index \(1, 1\) cannot be honoured .* numpy"):
        allocators.zeros((2, 3), np.float64, allocator=np, aligned_index=(1, 1))


def test_namespace_path_still_validates_arguments():
    with pytest.raises(ValueError, match="negative extent"):
        allocators.zeros((2, -3), np.float64, allocator=xp)
    with pytest.raises(ValueError, match="not a permutation"):
        allocators.zeros((2, 3), np.float64, allocator=xp, layout=(0, 0))


def test_namespace_path_rejects_unavailable_dtypes():
    with pytest.raises(TypeError, match=r"float16.*not available in the array namespace"):
        allocators.zeros(3, np.float16, allocator=xp)


def test_device_type_mismatch_with_buffer_allocator_names_both():
    with pytest.raises(DeviceMismatchError, match=r"Device\(CUDA, 0\).*NumPyBufferAllocator.*CPU"):
        allocators.zeros(3, np.float64, device=Device(DeviceType.CUDA))


def test_device_type_mismatch_is_a_value_error():
    with pytest.raises(ValueError, match=r"Device\(CPU, 0\) does not match CuPyBufferAllocator"):
        allocators.zeros(3, np.float64, allocator=CuPyBufferAllocator(), device=DeviceType.CPU)


def test_device_type_mismatch_with_namespace_names_both():
    with pytest.raises(DeviceMismatchError, match=r"Device\(ROCM, 0\).*array_api_strict.*CPU"):
        allocators.zeros(3, np.float64, allocator=xp, device=Device(DeviceType.ROCM))


def test_device_type_mismatch_through_a_factory():
    with pytest.raises(DeviceMismatchError):
        allocators.ones(3, np.float64, allocator=Backend(np), device=DeviceType.CUDA)


def test_unselectable_namespace_device_id_is_explained():
    with pytest.raises(ValueError, match=r"Device\(CPU, 1\) cannot be selected .* numpy"):
        allocators.zeros(3, np.float64, allocator=np, device=Device(DeviceType.CPU, 1))


def test_foreign_device_object_on_buffer_path_is_a_type_error():
    with pytest.raises(TypeError, match=r"is not an allocators\.Device or DeviceType"):
        allocators.zeros(3, np.float64, device="cuda:0")


def test_non_allocator_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="'numpy' of type str is not an allocator"):
        allocators.zeros(3, np.float64, allocator="numpy")


@pytest.mark.simulates_missing_package
def test_construction_does_not_import_optional_libraries(monkeypatch):
    for name in ("cupy", "jax", "jax.numpy"):
        monkeypatch.setitem(sys.modules, name, None)  # any import of them would now raise
    assert allocators.zeros(3, np.float64, allocator=xp).shape == (3,)
    assert allocators.ones(3, np.float64, allocator=Backend(np)).shape == (3,)
    gpu_backend = Backend(CuPyBufferAllocator())
    assert allocators.is_field_allocator_factory_for(gpu_backend, DeviceType.CUDA)
