"""Backend classes: device agreement, embedded namespaces, lazy optional instances."""

from __future__ import annotations

import copy
import types

import array_api_strict
import attrs
import numpy as np
import pytest

import allocators
import backends
from allocators import DeviceType
from backends import CompiledBackend, EmbeddedBackend
from pipeline import CompilePipeline, SourceFormat, identity


@attrs.frozen
class FakeTranslation:
    emits: SourceFormat

    def __call__(self, program: object) -> object:
        return program


@attrs.frozen
class FakeCudaAllocator:
    device_type: DeviceType = DeviceType.CUDA

    def allocate(self, shape, dtype, *, device_id=0, layout=None, aligned_index=None):
        raise NotImplementedError("never called in these tests")


def pipeline_for(device_type: DeviceType) -> CompilePipeline:
    return CompilePipeline(identity, FakeTranslation(SourceFormat("c", device_type)), identity, identity)


def test_default_backend_is_embedded_numpy():
    assert backends.DEFAULT_BACKEND is backends.embedded_numpy
    assert backends.embedded_numpy.namespace is np
    pipeline = backends.embedded_numpy.pipeline
    assert pipeline.translation is identity and pipeline.compilation is identity
    assert not pipeline.compiles


def test_backends_are_not_copied():
    assert copy.deepcopy(backends.embedded_numpy) is backends.embedded_numpy
    assert copy.copy(backends.embedded_numpy) is backends.embedded_numpy
    compiled = CompiledBackend("c", allocators.NumPyBufferAllocator(), pipeline_for(DeviceType.CPU))
    assert copy.deepcopy({"b": compiled})["b"] is compiled


def test_compiled_backend_accepts_an_agreeing_allocator():
    backend = CompiledBackend("c", allocators.NumPyBufferAllocator(), pipeline_for(DeviceType.CPU))
    assert backend.device_type is DeviceType.CPU
    assert backend.__field_allocator__ == allocators.NumPyBufferAllocator()


def test_compiled_backend_rejects_a_device_mismatch_naming_both_device_types():
    with pytest.raises(ValueError, match=r"allocates on CPU.*emits c for CUDA.*allocator for CUDA"):
        CompiledBackend("gpu", allocators.NumPyBufferAllocator(), pipeline_for(DeviceType.CUDA))
    with pytest.raises(ValueError, match=r"allocates on CUDA.*emits c for CPU"):
        CompiledBackend("cpu", FakeCudaAllocator(), pipeline_for(DeviceType.CPU))


def test_compiled_backend_rejects_an_array_namespace_of_another_device():
    with pytest.raises(ValueError, match=r"array namespace allocates on CPU"):
        CompiledBackend("gpu", np, pipeline_for(DeviceType.CUDA))


def test_compiled_backend_unwraps_allocator_factories():
    class Factory:
        __field_allocator__ = allocators.NumPyBufferAllocator()

    backend = CompiledBackend("c", Factory(), pipeline_for(DeviceType.CPU))
    assert backend.__field_allocator__ == allocators.NumPyBufferAllocator()


def test_compiled_backend_needs_a_translation_that_declares_its_output():
    with pytest.raises(ValueError, match="declares no `emits`"):
        CompiledBackend("c", allocators.NumPyBufferAllocator(), CompilePipeline(identity, identity, identity, identity))


def test_embedded_backend_validates_its_namespace():
    not_a_namespace = types.SimpleNamespace(zeros=np.zeros)
    with pytest.raises(TypeError, match="asarray"):
        EmbeddedBackend("broken", not_a_namespace)


def test_embedded_backend_on_array_api_strict():
    backend = EmbeddedBackend("strict", array_api_strict)
    assert backend.device_type is DeviceType.CPU
    field = allocators.zeros((2, 3), np.float64, allocator=backend)
    assert type(field).__module__.startswith("array_api_strict")


def test_allocating_through_a_backend_uses_its_namespace():
    field = allocators.ones((3, 4), np.float32, allocator=backends.embedded_numpy)
    assert isinstance(field, np.ndarray) and field.dtype == np.float32 and field.sum() == 12


def test_is_field_allocator_factory_for_is_false_for_embedded_backends():
    assert not allocators.is_field_allocator_factory_for(backends.embedded_numpy, DeviceType.CPU)
    compiled = CompiledBackend("c", allocators.NumPyBufferAllocator(), pipeline_for(DeviceType.CPU))
    assert allocators.is_field_allocator_factory_for(compiled, DeviceType.CPU)
    assert not allocators.is_field_allocator_factory_for(compiled, DeviceType.CUDA)


def test_unknown_backend_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'embedded_fortran'"):
        backends.embedded_fortran  # noqa: B018


@pytest.mark.simulates_missing_package
def test_missing_optional_package_names_the_package_and_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_cupy(name, *args, **kwargs):
        if name.split(".")[0] == "cupy":
            raise ImportError("No module named 'cupy'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    monkeypatch.delitem(backends._created, "embedded_cupy", raising=False)
    monkeypatch.setitem(__import__("sys").modules, "cupy", None)
    with pytest.raises(AttributeError, match=r"'cupy'.*stencilforge\[cuda\]"):
        backends.embedded_cupy  # noqa: B018


@pytest.mark.requires_jax
def test_embedded_jax_is_created_on_first_access():
    import jax.numpy as jnp

    assert backends.embedded_jax.namespace is jnp
    assert backends.embedded_jax is backends.embedded_jax
