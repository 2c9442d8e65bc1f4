import array_api_strict as xp
import numpy as np
import pytest

import allocators
from allocators import (
    CuPyBufferAllocator,
    DeviceType,
    NotAnAllocatorError,
    NumPyBufferAllocator,
    is_field_allocator,
    is_field_allocator_factory,
    is_field_allocator_factory_for,
    is_field_allocator_for,
    resolve_allocator,
)


class Factory:
    """A user object following the allocator-factory protocol through an attribute."""

    def __init__(self, allocator):
        self.__field_allocator__ = allocator

    def __repr__(self):
        return "Factory(...)"


class PropertyFactory:
    def __init__(self, allocator):
        self._allocator = allocator

    @property
    def __field_allocator__(self):
        return self._allocator


class RaisingFactory:
    @property
    def __field_allocator__(self):
        raise RuntimeError("backend not configured")


class MethodFactory:
    def __field_allocator__(self):
        return NumPyBufferAllocator()


def test_buffer_allocators_are_field_allocators():
    assert is_field_allocator(NumPyBufferAllocator())
    assert is_field_allocator_for(NumPyBufferAllocator(), DeviceType.CPU)
    assert not is_field_allocator_for(NumPyBufferAllocator(), DeviceType.CUDA)
    assert is_field_allocator_for(CuPyBufferAllocator(), DeviceType.CUDA)


@pytest.mark.parametrize("obj", [np, xp, None, 3, Factory(NumPyBufferAllocator())])
def test_namespaces_and_factories_are_not_field_allocators(obj):
    assert not is_field_allocator(obj)


def test_object_with_a_non_devicetype_device_type_is_not_a_field_allocator():
    class Impostor:
        device_type = "cpu"

        def allocate(self, shape, dtype):
            return None

    assert not is_field_allocator(Impostor())


@pytest.mark.parametrize("factory_type", [Factory, PropertyFactory])
def test_factory_yielding_a_buffer_allocator(factory_type):
    factory = factory_type(NumPyBufferAllocator())
    assert is_field_allocator_factory(factory)
    assert is_field_allocator_factory_for(factory, DeviceType.CPU)
    assert not is_field_allocator_factory_for(factory, DeviceType.CUDA)
    assert resolve_allocator(factory) == NumPyBufferAllocator()


@pytest.mark.parametrize("namespace", [np, xp])
def test_factory_yielding_a_namespace_is_not_a_buffer_allocator_factory(namespace):
    factory = Factory(namespace)
    assert not is_field_allocator_factory(factory)
    assert not is_field_allocator_factory_for(factory, DeviceType.CPU)
    assert resolve_allocator(factory) is namespace


def test_nested_factories_are_unwrapped():
    inner = Factory(CuPyBufferAllocator())
    outer = PropertyFactory(inner)
    assert is_field_allocator_factory_for(outer, DeviceType.CUDA)
    assert resolve_allocator(outer) == CuPyBufferAllocator()


def test_raising_property_answers_false_and_resolve_names_the_object():
    factory = RaisingFactory()
    assert not is_field_allocator_factory(factory)
    assert not is_field_allocator_factory_for(factory, DeviceType.CPU)
    assert not is_field_allocator(factory)
    with pytest.raises(NotAnAllocatorError, match=r"RaisingFactory.*backend not configured"):
        resolve_allocator(factory)


def test_method_instead_of_property_is_explained():
    assert not is_field_allocator_factory(MethodFactory())
    with pytest.raises(TypeError, match=r"is a method.*@property"):
        resolve_allocator(MethodFactory())


def test_cycles_are_detected():
    first = Factory(None)
    second = Factory(first)
    first.__field_allocator__ = second
    assert not is_field_allocator_factory(first)
    with pytest.raises(NotAnAllocatorError, match="form a cycle"):
        resolve_allocator(first)


def test_self_referencing_factory_is_a_cycle():
    factory = Factory(None)
    factory.__field_allocator__ = factory
    with pytest.raises(NotAnAllocatorError, match="form a cycle"):
        resolve_allocator(factory)


def test_deep_nesting_is_bounded():
    factory = NumPyBufferAllocator()
    for _ in range(allocators.MAX_FACTORY_DEPTH + 1):
        factory = Factory(factory)
    with pytest.raises(NotAnAllocatorError, match="deeper than"):
        resolve_allocator(factory)


def test_factory_yielding_garbage_names_the_factory():
    with pytest.raises(TypeError, match=r"Factory\(\.\.\.\) is not an allocator.*'oops'"):
        resolve_allocator(Factory("oops"))
    assert not is_field_allocator_factory(Factory("oops"))


def test_non_factories_answer_false():
    for obj in (None, 1, np, NumPyBufferAllocator(), object()):
        assert not is_field_allocator_factory(obj)
        assert not is_field_allocator_factory_for(obj, DeviceType.CPU)


def test_resolve_returns_allocators_and_namespaces_unchanged():
    allocator = NumPyBufferAllocator(128)
    assert resolve_allocator(allocator) is allocator
    assert resolve_allocator(np) is np
    assert resolve_allocator(xp) is xp


def test_resolve_rejects_non_allocators_with_a_type_error():
    with pytest.raises(TypeError, match=r"42 of type int is not an allocator"):
        resolve_allocator(42)
