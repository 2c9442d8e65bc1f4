"""Backends: a compile pipeline (or none) paired with an allocator for one device.

``CompiledBackend`` checks at construction that its allocator allocates on the device its
pipeline generates code for. ``EmbeddedBackend`` is the degenerate case: its pipeline is the
identity and the Python definition runs directly on arrays of an array-API namespace.
"""

from __future__ import annotations

import contextlib
import logging
from types import ModuleType
from typing import Any, cast

import attrs

import allocators
from allocators import DeviceType, FieldBufferAllocator
from backends.cache import dump_directory
from backends.embedded import EmbeddedExecutable
from pipeline import CompilePipeline, identity
from pipeline.arguments import ArgumentChecker, bind_arguments
from pipeline.errors import DamagedArtifactError
from pipeline.frontend.step import frontend_in_memory
from pipeline.stages import CompilableProgram, Executable, ProgramDefinition, ProgramSource
from pipeline.workflow import StageDump, step_name, subscribe

__all__ = ["Backend", "CompiledBackend", "EmbeddedBackend"]

_log = logging.getLogger(__name__)

# The frontend is shared by every backend, so a definition is parsed once per process.
_FRONTEND = frontend_in_memory()

Allocator = FieldBufferAllocator | ModuleType | Any


def _allocator_device_type(allocator: object) -> DeviceType:
    resolved = allocators.resolve_allocator(allocator)
    if allocators.is_array_namespace(resolved):
        return allocators.namespace_device_type(resolved)
    return cast(DeviceType, resolved.device_type)


@attrs.frozen
class Backend:
    """A named way to run programs, with the allocator for its fields.

    Attributes:
        name: a short identifier used in metrics and messages (``"c_cpu"``).
        allocator: a field buffer allocator, an array namespace, or a factory of either.

    Backends are immutable configuration: ``copy.deepcopy(backend) is backend``.
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

    def __deepcopy__(self, memo: dict[int, Any]) -> Backend:
        return self

    def __copy__(self) -> Backend:
        return self

    is_embedded = False

    def _unsupported(self) -> TypeError:
        return TypeError(
            f"backend {self.name!r} is a {type(self).__name__}, which is neither a "
            "CompiledBackend nor an EmbeddedBackend, so programs cannot run on it; derive "
            "your backend from one of those two"
        )

    def dispatch_key(self, args: tuple[Any, ...]) -> Any:
        """The part of a call's arguments an executable is specialized for."""
        raise self._unsupported()

    def load_program(self, definition: ProgramDefinition, args: tuple[Any, ...]) -> Executable:
        """An executable for ``definition``, specialized for ``args``."""
        raise self._unsupported()

    def translate_program(
        self, definition: ProgramDefinition, args: tuple[Any, ...]
    ) -> ProgramSource:
        """The source a compiled backend generates for ``definition`` and ``args``."""
        raise self._unsupported()

    def frontend_program(self, definition: ProgramDefinition) -> CompilableProgram:
        """The frontend's typed, inlined IR for ``definition``."""
        return _FRONTEND(definition)


@attrs.frozen
class CompiledBackend(Backend):
    """A backend that compiles programs through ``pipeline``.

    Raises:
        ValueError: at construction, when the allocator's device type differs from the device
            type the pipeline's translation emits code for, or when the translation declares
            no ``emits`` (so agreement cannot be checked).
    """

    pipeline: CompilePipeline[Any, Any, Any, Any, Any]

    def __attrs_post_init__(self) -> None:
        emitted = self.pipeline.source_format
        if emitted is None:
            raise ValueError(
                f"backend {self.name!r}: translation {step_name(self.pipeline.translation)} "
                "declares no `emits` SourceFormat, so the device agreement with the allocator "
                "cannot be checked; give the translation an `emits` attribute"
            )
        allocator_device = _allocator_device_type(self.allocator)
        if allocator_device != emitted.device_type:
            kind = (
                "array namespace"
                if allocators.is_array_namespace(allocators.resolve_allocator(self.allocator))
                else "allocator"
            )
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

    def dispatch_key(self, args: tuple[Any, ...]) -> Any:
        """Per argument: whether its last dimension has unit stride (``None`` for scalars).

        Code specialized for unit stride indexes the innermost loop directly, which is what
        lets the C compiler vectorize it.
        """
        return tuple(_unit_stride(a) for a in args)

    def _specialized(
        self, definition: ProgramDefinition, args: tuple[Any, ...]
    ) -> ProgramDefinition:
        """``definition`` with the compile-time arguments of ``args``.

        Without arguments (``translate()`` for inspection) nothing is specialized and every
        field is assumed contiguous in its last dimension.

        Raises:
            ArgumentError: the number of arguments does not match the parameters.
        """
        if not args:
            return definition
        parameters = self.frontend_program(definition).ir.params
        if len(args) != len(parameters):
            bind_arguments(definition.name, [p.name for p in parameters], args, {})
        return attrs.evolve(
            definition, compile_time_args=(("unit_stride", self.dispatch_key(args)),)
        )

    def load_program(self, definition: ProgramDefinition, args: tuple[Any, ...]) -> Executable:
        """Run the pipeline: frontend, translation, compilation (cached), loading.

        A built object found damaged at load time (changed after its cache entry was
        validated) is rebuilt once, with a logged warning.
        """
        specialized = self._specialized(definition, args)
        dump = dump_directory()
        with subscribe(StageDump(dump)) if dump is not None else contextlib.nullcontext():
            try:
                return self.pipeline(specialized)  # type: ignore[no-any-return]
            except DamagedArtifactError as error:
                _log.warning("%s; rebuilding %s", error, definition.name)
                return self.pipeline(specialized)  # type: ignore[no-any-return]

    def translate_program(
        self, definition: ProgramDefinition, args: tuple[Any, ...]
    ) -> ProgramSource:
        """Frontend and translation only, for inspection."""
        return self.pipeline.translate(self._specialized(definition, args))  # type: ignore[no-any-return]


def _unit_stride(value: Any) -> bool | None:
    strides = getattr(value, "strides", None)
    if not strides:
        return None
    return bool(strides[-1] == getattr(value, "itemsize", 0) or value.shape[-1] <= 1)


def _validated_namespace(namespace: object) -> ModuleType:
    return cast(ModuleType, allocators.validate_array_namespace(namespace))


@attrs.frozen
class EmbeddedBackend(Backend):
    """A backend that runs the Python definition itself on arrays of ``allocator``.

    Attributes:
        allocator: an array-API namespace (``numpy``, ``array_api_strict``, ``cupy``,
            ``jax.numpy``); anything else is a ``TypeError`` naming what is missing.
    """

    allocator: ModuleType = attrs.field(converter=_validated_namespace)

    @property
    def namespace(self) -> ModuleType:
        """The array namespace that programs run on."""
        return self.allocator

    @property
    def pipeline(self) -> Any:
        """The identity: embedded programs are not compiled."""
        return identity

    is_embedded = True

    def dispatch_key(self, args: tuple[Any, ...]) -> Any:
        """Embedded programs need one executable whatever the arguments."""
        return None

    def load_program(self, definition: ProgramDefinition, args: tuple[Any, ...]) -> Executable:
        """Run ``definition`` itself on fields of the namespace, after checking arguments."""
        checker = ArgumentChecker(self.frontend_program(definition).ir)
        return EmbeddedExecutable(definition, checker, self.allocator, self.device_type)
