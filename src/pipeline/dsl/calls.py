"""How calls of stencil programs are dispatched: the DSL's ``dispatch.CallConvention``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from types import ModuleType
from typing import Any, Protocol

import attrs

from allocators import DeviceType
from pipeline.dispatch import DispatchBackend
from pipeline.dsl.arguments import ArgumentChecker
from pipeline.dsl.stages import CompilableProgram, ProgramDefinition

__all__ = ["STENCIL_CALLS", "ArrayBackend", "StencilCalls"]


class ArrayBackend(DispatchBackend, Protocol):
    """What the DSL's argument checks read of a backend (``backends.Backend`` provides it)."""

    @property
    def device_type(self) -> DeviceType: ...

    @property
    def array_namespace(self) -> ModuleType | None:
        """The array namespace embedded arrays must belong to (``None``: any)."""
        ...

    @property
    def array_type(self) -> type | None:
        """The array class native code reads (``numpy.ndarray``), ``None``: no requirement."""
        ...


@attrs.frozen
class StencilCalls:
    """Definitions are ``ProgramDefinition``\\ s; programs are ``CompilableProgram``\\ s,
    whose IR names the parameters and makes the ``ArgumentChecker``."""

    def definition_key(self, definition: ProgramDefinition) -> Hashable:
        # The definition as written (its fast entry may take the next call) keys on its
        # output slices alone; a direct call's domain, a scan's argument dimensions or
        # located arrays' origins (ADR 0026) make another program, never fast.
        plain = definition.output_bounds is None and definition.call_dims is None
        if plain and not definition.located:
            return definition.output_slices
        return (
            definition.output_slices,
            definition.output_bounds,
            definition.call_dims,
            definition.located,
        )

    def program(self, output: object) -> CompilableProgram:
        if not isinstance(output, CompilableProgram):
            raise TypeError("the frontend of a stencil program must return a CompilableProgram")
        return output

    def parameters(self, program: CompilableProgram) -> Sequence[str]:
        return [parameter.name for parameter in program.ir.params]

    def argument_check(
        self, program: CompilableProgram, backend: DispatchBackend
    ) -> Callable[[tuple[Any, ...]], None]:
        arrays: Any = backend  # every stencil backend is an ArrayBackend
        return functools.partial(
            ArgumentChecker(program.ir).check,
            device_type=arrays.device_type,
            namespace=arrays.array_namespace,
            array_type=arrays.array_type,
        )


STENCIL_CALLS = StencilCalls()
