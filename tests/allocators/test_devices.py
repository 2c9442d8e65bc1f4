import array_api_strict as xp
import numpy as np
import pytest

from allocators import Device, DeviceType, as_device_type, device_of


def test_device_type_values_are_dlpack_codes():
    assert DeviceType.CPU == 1
    assert DeviceType.CUDA == 2
    assert DeviceType.CUDA_HOST == 3
    assert DeviceType.ROCM == 10
    assert DeviceType(np.zeros(1).__dlpack_device__()[0]) is DeviceType.CPU


def test_device_repr_and_str_are_readable():
    assert repr(Device(DeviceType.CUDA, 1)) == "Device(CUDA, 1)"
    assert str(Device(DeviceType.CUDA, 1)) == "cuda:1"
    assert Device(DeviceType.CPU) == Device(DeviceType.CPU, 0)


def test_device_is_a_frozen_hashable_value():
    device = Device(DeviceType.ROCM, 2)
    assert {device: 1}[Device(10, 2)] == 1
    with pytest.raises(AttributeError):
        device.id = 3  # type: ignore[misc]


def test_device_converts_int_codes():
    assert Device(2).type is DeviceType.CUDA


@pytest.mark.parametrize("bad_id", [-1, 1.5, True])
def test_device_rejects_bad_ids(bad_id):
    with pytest.raises(ValueError, match="Device id"):
        Device(DeviceType.CPU, bad_id)


def test_unknown_device_code_lists_known_codes():
    with pytest.raises(ValueError, match=r"999 is not a DLPack device code.*CUDA=2"):
        as_device_type(999)


def test_device_of_numpy_array_and_scalar_is_cpu():
    assert device_of(np.zeros((2, 3))) == Device(DeviceType.CPU, 0)
    assert device_of(np.float64(1.0)) == Device(DeviceType.CPU, 0)


def test_device_of_array_api_strict_array_is_cpu():
    assert device_of(xp.zeros(3)) == Device(DeviceType.CPU, 0)


def test_device_of_uses_dlpack_device():
    class FakeGpuArray:
        def __dlpack_device__(self):
            return (2, 3)

    assert device_of(FakeGpuArray()) == Device(DeviceType.CUDA, 3)


def test_device_of_non_array_names_the_object():
    with pytest.raises(TypeError, match=r"list object \[1, 2\].*__dlpack_device__"):
        device_of([1, 2])
