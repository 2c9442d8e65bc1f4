"""CuPy and JAX paths; skipped (by the lead's conftest) where the library is absent."""

import numpy as np
import pytest

import allocators
from allocators import (
    CuPyBufferAllocator,
    Device,
    DeviceType,
    device_of,
    is_array_namespace,
    namespace_device_type,
)


@pytest.mark.requires_cupy
def test_cupy_is_a_gpu_namespace():
    import cupy  # noqa: PLC0415

    assert is_array_namespace(cupy)
    assert namespace_device_type(cupy) in (DeviceType.CUDA, DeviceType.ROCM)


@pytest.mark.requires_cupy
@pytest.mark.requires_gpu
@pytest.mark.parametrize("layout", [(0, 1, 2), (2, 1, 0), (1, 2, 0)])
def test_cupy_buffer_allocator_aligns_and_fills(layout):
    import cupy  # noqa: PLC0415

    allocator = CuPyBufferAllocator(byte_alignment=128)
    array = allocators.full(
        (5, 6, 7),
        np.float32,
        fill_value=3,
        allocator=allocator,
        layout=layout,
        aligned_index=(1, 2, 3),
    )
    assert isinstance(array, cupy.ndarray)
    address = array.data.ptr + sum(i * s for i, s in zip((1, 2, 3), array.strides, strict=True))
    assert address % 128 == 0
    ordered = [array.strides[dim] for dim in layout]
    assert ordered == sorted(ordered, reverse=True)
    assert bool((array == 3).all())
    assert device_of(array).type is allocator.device_type


@pytest.mark.requires_cupy
@pytest.mark.requires_gpu
def test_cupy_namespace_path_on_device_zero():
    import cupy  # noqa: PLC0415

    device_type = namespace_device_type(cupy)
    array = allocators.ones((4, 4), np.float64, allocator=cupy, device=Device(device_type, 0))
    assert isinstance(array, cupy.ndarray)
    assert device_of(array) == Device(device_type, 0)


@pytest.mark.requires_jax
def test_jax_numpy_namespace():
    import jax.numpy as jnp  # noqa: PLC0415

    assert is_array_namespace(jnp)
    device_type = namespace_device_type(jnp)
    array = allocators.zeros((2, 3), np.float32, allocator=jnp, device=Device(device_type, 0))
    assert array.shape == (2, 3)
    assert array.dtype == jnp.float32
    assert device_of(array).type is device_type
