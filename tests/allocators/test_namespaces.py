import types

import array_api_strict as xp
import numpy as np
import pytest

from allocators import (
    REQUIRED_NAMESPACE_ATTRIBUTES,
    DeviceType,
    is_array_namespace,
    namespace_attribute,
    namespace_device_type,
    namespace_name,
    validate_array_namespace,
)


def _namespace_like(module, *, drop=(), name="fake_namespace"):
    fake = types.ModuleType(name)
    for attribute in REQUIRED_NAMESPACE_ATTRIBUTES:
        if attribute not in drop:
            setattr(fake, attribute, getattr(module, attribute))
    return fake


def test_required_attributes_cover_the_dsl_functions():
    for name in (
        "asarray",
        "empty",
        "zeros",
        "ones",
        "full",
        "where",
        "sqrt",
        "asin",
        "pow",
        "astype",
        "float32",
        "float64",
        "int32",
        "int64",
        "bool",
    ):
        assert name in REQUIRED_NAMESPACE_ATTRIBUTES


@pytest.mark.parametrize("namespace", [np, xp], ids=["numpy", "array_api_strict"])
def test_numpy_and_array_api_strict_are_namespaces(namespace):
    assert is_array_namespace(namespace)
    assert validate_array_namespace(namespace) is namespace
    assert namespace_device_type(namespace) is DeviceType.CPU


@pytest.mark.parametrize("obj", [None, 42, "numpy", object(), types])
def test_non_namespaces_are_rejected(obj):
    assert not is_array_namespace(obj)


def test_is_array_namespace_never_raises():
    class Exploding:
        def __getattr__(self, name):
            raise RuntimeError("broken")

    assert not is_array_namespace(Exploding())


def test_validate_names_the_object_and_missing_attributes():
    fake = _namespace_like(np, drop=("sqrt", "float32"))
    with pytest.raises(TypeError, match=r"module 'fake_namespace'.*lacks sqrt, float32"):
        validate_array_namespace(fake)


def test_numpy1_spellings_are_accepted():
    fake = _namespace_like(np, drop=("asin", "acos", "atan", "pow", "bool"))
    fake.arcsin, fake.arccos, fake.arctan = np.arcsin, np.arccos, np.arctan
    fake.power, fake.bool_ = np.power, np.bool_
    assert is_array_namespace(fake)
    assert namespace_attribute(fake, "pow") is np.power


def test_namespace_attribute_without_alias_raises_attribute_error():
    with pytest.raises(AttributeError):
        namespace_attribute(types.ModuleType("empty_module"), "sqrt")


def test_namespace_name():
    assert namespace_name(np) == "numpy"
    assert namespace_name(xp) == "array_api_strict"

    class NotAModule:
        pass

    assert namespace_name(NotAModule()).endswith("NotAModule")


def test_unknown_namespace_device_is_probed_through_dlpack():
    assert namespace_device_type(_namespace_like(np)) is DeviceType.CPU


def test_unknown_namespace_that_cannot_allocate_is_assumed_cpu():
    fake = _namespace_like(np)

    def failing_empty(shape):
        raise RuntimeError("cannot allocate")

    fake.empty = failing_empty
    assert namespace_device_type(fake) is DeviceType.CPU


def test_unknown_namespace_reporting_a_gpu_array_is_gpu():
    class GpuArray:
        def __dlpack_device__(self):
            return (10, 0)

    fake = _namespace_like(np)
    fake.empty = lambda shape: GpuArray()
    assert namespace_device_type(fake) is DeviceType.ROCM
