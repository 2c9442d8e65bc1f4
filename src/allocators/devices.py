"""Devices in DLPack's vocabulary: :class:`DeviceType` codes and :class:`Device` values."""

from __future__ import annotations

import enum
from typing import Any

import attrs
import numpy as np

__all__ = ["Device", "DeviceType", "as_device_type", "device_of"]


class DeviceType(enum.IntEnum):
    """Device type codes, numerically equal to DLPack's ``DLDeviceType``.

    The values are the codes returned by ``array.__dlpack_device__()``, so a code from any
    DLPack-capable library converts with ``DeviceType(code)``.
    """

    CPU = 1
    CUDA = 2
    CUDA_HOST = 3
    OPENCL = 4
    VULKAN = 7
    METAL = 8
    VPI = 9
    ROCM = 10
    ROCM_HOST = 11
    EXT_DEV = 12
    CUDA_MANAGED = 13
    ONE_API = 14
    WEBGPU = 15
    HEXAGON = 16
    MAIA = 17


def as_device_type(value: DeviceType | int) -> DeviceType:
    """Return ``value`` as a :class:`DeviceType`.

    Raises:
        ValueError: If ``value`` is not a DLPack device code; the message lists the codes.
    """
    try:
        return DeviceType(value)
    except ValueError as error:
        known = ", ".join(f"{member.name}={member.value}" for member in DeviceType)
        raise ValueError(
            f"Device type {value!r} is not a DLPack device code; use one of: {known}."
        ) from error


def _check_device_id(instance: Device, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"Device id must be a non-negative int (the device's ordinal), got {value!r}."
        )


@attrs.frozen(repr=False)
class Device:
    """One device: a :class:`DeviceType` and the ordinal of the device among those of its type.

    Attributes:
        type: The device type; an int DLPack code is converted to :class:`DeviceType`.
        id: The device ordinal (``0`` for the CPU and the first GPU).

    Raises:
        ValueError: If ``type`` is not a DLPack device code or ``id`` is not a non-negative int.
    """

    type: DeviceType = attrs.field(converter=as_device_type)
    id: int = attrs.field(default=0, validator=_check_device_id)

    def __repr__(self) -> str:
        return f"Device({self.type.name}, {self.id})"

    def __str__(self) -> str:
        return f"{self.type.name.lower()}:{self.id}"


def device_of(array: Any) -> Device:
    """Return the device an array lives on.

    Args:
        array: An array implementing ``__dlpack_device__`` (NumPy, CuPy, JAX, array_api_strict,
            ...) or a NumPy array / scalar.

    Returns:
        The :class:`Device` reported by ``__dlpack_device__``; NumPy objects are on the CPU.

    Raises:
        TypeError: If ``array`` reports no device (it has no ``__dlpack_device__``).
        ValueError: If it reports a device code that DLPack does not define.
    """
    dlpack_device = getattr(array, "__dlpack_device__", None)
    if dlpack_device is None:
        # NumPy scalars have no __dlpack_device__; they are host memory all the same.
        if isinstance(array, np.ndarray | np.generic):
            return Device(DeviceType.CPU, 0)
        raise TypeError(
            f"Cannot tell the device of {type(array).__qualname__} object {array!r}: it has no "
            "__dlpack_device__ method. Pass an array of an array-API library (NumPy, CuPy, JAX, "
            "...)."
        )
    code, device_id = dlpack_device()
    return Device(as_device_type(int(code)), int(device_id))
