"""Backends are values: a name, an allocator for one device, and a compile pipeline.

A backend orchestrates nothing. The program's dispatcher (``pipeline.dispatch``) walks the
pipeline once per compile-time signature and checks every argument; the backend carries the
one function that extracts a call's compile-time arguments. ``CompiledBackend`` checks at
construction that its allocator allocates on the device its pipeline generates code for.
``EmbeddedBackend`` is the degenerate case: the shared frontend, identity translation and
compilation, and a loading step that runs the Python definition on an array namespace.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import ModuleType
from typing import Any, cast

import attrs
import numpy as np

import allocators
from allocators import DeviceType, FieldBufferAllocator
from backends.arrayapi import EmbeddedExecutable
from backends.embedded import EmbeddedLoading, embedded_pipeline
from backends.entries import native_entries
from pipeline import CachedStep, CompilePipeline
from pipeline.dispatch import NativeEntryType
from pipeline.dsl.stages import CompilableProgram, ProgramDefinition
from pipeline.stages import CompileTimeArgs, ConcreteDefinition
from pipeline.steps import step_name, unwrap_step

__all__ = ["Backend", "CompiledBackend", "EmbeddedBackend", "no_compile_time_args", "unit_strides"]

_log = logging.getLogger(__name__)

Allocator = FieldBufferAllocator | ModuleType | Any


def _allocator_device_type(allocator: object) -> DeviceType:
    resolved = allocators.resolve_allocator(allocator)
    if allocators.is_array_namespace(resolved):
        return allocators.namespace_device_type(resolved)
    return cast(DeviceType, resolved.device_type)


def unit_strides(args: tuple[Any, ...]) -> CompileTimeArgs:
    """Per argument: whether its last dimension has unit stride (``None`` for scalars).

    Code specialized for unit stride indexes the innermost loop directly, which is what lets
    the C compiler vectorize it. The default of ``CompiledBackend.compile_time_args``.
    """
    return CompileTimeArgs((("unit_stride", tuple(_unit_stride(a) for a in args)),))


def _unit_stride(value: Any) -> bool | None:
    strides = getattr(value, "strides", None)
    if not strides:
        return None
    return bool(strides[-1] == getattr(value, "itemsize", 0) or value.shape[-1] <= 1)


_NOTHING = CompileTimeArgs()


def no_compile_time_args(args: tuple[Any, ...]) -> CompileTimeArgs:
    """Nothing is specialized: one executable serves every call (embedded backends)."""
    return _NOTHING


@attrs.frozen
class Backend:
    """A named way to run programs, with the allocator for its fields.

    Attributes:
        name: a short identifier used in metrics and messages (``"c_cpu"``).
        allocator: a field buffer allocator, an array namespace, or a factory of either.

    Programs run on the two kinds below, which add a pipeline. Backends are immutable
    configuration: ``copy.deepcopy(backend) is backend``.
    """

    name: str
    allocator: Allocator

    @property
    def __field_allocator__(self) -> Any:
        """The allocator, with factories unwrapped (the allocator-factory protocol)."""
        return allocators.resolve_allocator(self.allocator)

    @property
    def device_type(self) -> DeviceType:
        """The device type the backend's fields live on."""
        return _allocator_device_type(self.allocator)

    @property
    def array_namespace(self) -> ModuleType | None:
        """The array namespace arguments must belong to, when the allocator is one."""
        resolved = allocators.resolve_allocator(self.allocator)
        return cast(ModuleType, resolved) if allocators.is_array_namespace(resolved) else None

    @property
    def array_type(self) -> type | None:
        """The array class native code reads: ``numpy.ndarray`` for CPU buffer allocators."""
        if self.array_namespace is None and self.device_type is DeviceType.CPU:
            return np.ndarray
        return None

    @property
    def native_entries(self) -> NativeEntryType | None:
        """The native fast entries the dispatcher puts in front of every executable of this
        backend (``backends.entries``, built once per machine); ``None`` without a C
        compiler, and then every call is checked in Python."""
        return cast("NativeEntryType | None", native_entries())

    def __deepcopy__(self, memo: dict[int, Any]) -> Backend:
        return self

    def __copy__(self) -> Backend:
        return self


@attrs.frozen
class CompiledBackend(Backend):
    """A backend that compiles programs through ``pipeline``.

    Attributes:
        pipeline: the four steps; its translation must declare what it ``emits``.
        compile_time_args: extracts from a call's arguments what an executable is
            specialized for (default: ``unit_strides``); one executable per distinct value.
            It must read only what the argument checks read (shapes, strides, dtypes,
            flags, data pointers, scalar values): the native entry (ADR 0021) runs an
            executable again on arguments alike in those without asking it again.

    Raises:
        ValueError: at construction, when the allocator's device type differs from the device
            type the pipeline's translation emits code for, or when the translation declares
            no ``emits`` (so agreement cannot be checked).
    """

    pipeline: CompilePipeline[Any, Any, Any, Any, Any]
    compile_time_args: Callable[[tuple[Any, ...]], CompileTimeArgs] = unit_strides

    def __attrs_post_init__(self) -> None:
        _warn_once_if_rebuilt_per_process(self)
        emitted = self.pipeline.source_format
        if emitted is None:
            raise ValueError(
                f"backend {self.name!r}: translation {step_name(self.pipeline.translation)} "
                "declares no `emits` SourceFormat, so the device agreement with the allocator "
                "cannot be checked; give the translation an `emits` attribute"
            )
        allocator_device = _allocator_device_type(self.allocator)
        if allocator_device != emitted.device_type:
            kind = "array namespace" if self.array_namespace is not None else "allocator"
            raise ValueError(
                f"backend {self.name!r}: the {kind} allocates on {allocator_device.name} but "
                f"the pipeline's translation {step_name(self.pipeline.translation)} emits "
                f"{emitted}; use an allocator for {emitted.device_type.name} (or a translation "
                f"for {allocator_device.name})"
            )

    @property
    def device_type(self) -> DeviceType:
        emitted = self.pipeline.source_format
        assert emitted is not None  # checked at construction
        return emitted.device_type


# Backend names already warned about (documented global state: one warning per name).
_warned_uncached: set[str] = set()


def _warn_once_if_rebuilt_per_process(backend: CompiledBackend) -> None:
    compilation = backend.pipeline.compilation
    if isinstance(compilation, CachedStep) and compilation.cache.strict:
        return
    if getattr(unwrap_step(compilation), "process_local", False) is True:
        return  # its artifacts live in one process by design (jax_jit: JAX's jit cache)
    if backend.name in _warned_uncached:
        return
    _warned_uncached.add(backend.name)
    _log.warning(
        "backend %r: its compilation step %s is not cached on disk, so every process compiles "
        "every program again; wrap it in CachedStep.on_disk(...) or change one option with "
        "pipeline.evolve_step('compilation', ...), which keeps the cache",
        backend.name,
        step_name(compilation),
    )


def _validated_namespace(namespace: object) -> ModuleType:
    return cast(ModuleType, allocators.validate_array_namespace(namespace))


EmbeddedPipeline = CompilePipeline[
    ConcreteDefinition[ProgramDefinition],
    CompilableProgram,
    CompilableProgram,
    CompilableProgram,
    EmbeddedExecutable,
]


@attrs.frozen
class EmbeddedBackend(Backend):
    """A backend that runs the Python definition itself on arrays of ``allocator``.

    Attributes:
        allocator: an array-API namespace (``numpy``, ``array_api_strict``, ``cupy``,
            ``jax.numpy``); anything else is a ``TypeError`` naming what is missing.
        pipeline: by default the shared frontend, identity translation and compilation, and
            loading to an ``EmbeddedExecutable`` over ``allocator``; a variant may replace a
            step (``attrs.evolve(backend, pipeline=...)``).
        compile_time_args: by default nothing: one executable serves every call.

    Raises:
        ValueError: the pipeline's loading runs the definition on another namespace than
            ``allocator`` (as ``attrs.evolve(backend, allocator=...)`` would make).
    """

    allocator: ModuleType = attrs.field(converter=_validated_namespace)
    pipeline: CompilePipeline[Any, Any, Any, Any, Any] = attrs.field(kw_only=True)
    compile_time_args: Callable[[tuple[Any, ...]], CompileTimeArgs] = attrs.field(
        default=no_compile_time_args, kw_only=True
    )

    @pipeline.default
    def _embedded_pipeline(self) -> EmbeddedPipeline:
        return embedded_pipeline(self.allocator)

    def __attrs_post_init__(self) -> None:
        loading = unwrap_step(self.pipeline.loading)
        if isinstance(loading, EmbeddedLoading) and loading.namespace is not self.allocator:
            raise ValueError(
                f"backend {self.name!r}: its pipeline runs definitions on "
                f"{allocators.namespace_name(loading.namespace)} but its allocator is "
                f"{allocators.namespace_name(self.allocator)}; make the backend with "
                f"EmbeddedBackend({self.name!r}, <namespace>) rather than evolving the allocator"
            )

    @property
    def namespace(self) -> ModuleType:
        """The array namespace that programs run on."""
        return self.allocator
