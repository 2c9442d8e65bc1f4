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


@pytest.fixture
def jax_64_bit_types():
    """A setter for JAX's ``jax_enable_x64``, restored after the test (it is process-wide)."""
    import jax  # noqa: PLC0415

    before = jax.config.read("jax_enable_x64")
    yield lambda enabled: jax.config.update("jax_enable_x64", enabled)
    jax.config.update("jax_enable_x64", before)


@pytest.mark.requires_jax
@pytest.mark.parametrize("dtype", [np.float64, "int64", "float64"])
def test_jax_without_x64_refuses_a_64_bit_request_instead_of_narrowing_it(
    jax_64_bit_types, dtype
):
    import backends  # noqa: PLC0415

    jax_64_bit_types(False)
    with pytest.raises(allocators.DtypeUnavailableError) as raised:
        allocators.zeros((4, 4), dtype, allocator=backends.embedded_jax)
    message = str(raised.value)
    assert "jax_enable_x64" in message
    assert 'jax.config.update("jax_enable_x64", True)' in message
    assert "JAX_ENABLE_X64=1" in message
    assert isinstance(raised.value, TypeError)


@pytest.mark.requires_jax
def test_jax_without_x64_refuses_its_own_float64_dtype_too(jax_64_bit_types):
    import jax.numpy as jnp  # noqa: PLC0415

    jax_64_bit_types(False)
    with pytest.raises(allocators.DtypeUnavailableError, match="float64 is not available"):
        allocators.full((3,), jnp.float64, fill_value=1.0, allocator=jnp)


@pytest.mark.requires_jax
def test_jax_without_x64_still_allocates_32_bit_dtypes(jax_64_bit_types):
    import backends  # noqa: PLC0415

    jax_64_bit_types(False)
    array = allocators.ones((2, 3), np.float32, allocator=backends.embedded_jax)
    assert str(array.dtype) == "float32"


@pytest.mark.requires_jax
def test_jax_with_x64_gives_the_float64_asked_for(jax_64_bit_types):
    import backends  # noqa: PLC0415

    jax_64_bit_types(True)
    array = allocators.zeros((4, 4), np.float64, allocator=backends.embedded_jax)
    assert str(array.dtype) == "float64"
