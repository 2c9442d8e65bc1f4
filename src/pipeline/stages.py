"""The artifacts that pass between the stages of a compile pipeline.

``ProgramDefinition`` -> frontend -> ``CompilableProgram`` -> translation -> ``ProgramSource``
-> compilation -> ``CompiledArtifact`` -> loading -> executable.

Every artifact is immutable, has a readable ``repr`` and is fingerprintable; those that a disk
cache may hold (source and compiled artifacts) are picklable.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from allocators import DeviceType

__all__ = [
    "CompilableProgram",
    "CompiledArtifact",
    "Executable",
    "ProgramDefinition",
    "ProgramSource",
    "SourceFormat",
]


class Executable(Protocol):
    """What loading produces: a callable that takes the program's arguments."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


def _frozen_mapping(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return types.MappingProxyType(dict(value))


@attrs.frozen(eq=False)
class ProgramDefinition:
    """What a DSL decorator captures: the Python function and the values it closes over.

    Attributes:
        function: the user's Python function.
        kind: ``"field_operator"`` or ``"program"``.
        captured: the global and closure values the function's body refers to, by name.
        compile_time_args: what a backend specializes the program for (e.g. which
            dimensions have unit stride), as sorted (name, value) pairs; empty for the frontend.
        output_slices: for a field operator called directly, the output domain as (start,
            stop) per dimension of the output; ``None`` means the whole output.
    """

    function: Callable[..., Any]
    kind: str
    captured: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_mapping)
    compile_time_args: tuple[tuple[str, Any], ...] = ()
    output_slices: tuple[tuple[int | None, int | None], ...] | None = None

    @property
    def name(self) -> str:
        """The function's name, as the user wrote it."""
        return self.function.__name__

    def __fingerprint__(self) -> object:
        # The annotations carry the parameter types: two functions with the same code but
        # different annotations (made by a factory) are different programs.
        return (
            dict(getattr(self.function, "__annotations__", {})),
            self.function,
            self.kind,
            dict(self.captured),
            self.compile_time_args,
            self.output_slices,
        )

    def __repr__(self) -> str:
        function = self.function
        return f"ProgramDefinition({self.kind} {function.__module__}.{function.__qualname__})"


@attrs.frozen
class CompilableProgram:
    """What the frontend produces: typed IR plus the compile-time arguments.

    Attributes:
        ir: the program's typed intermediate representation.
        compile_time_args: dtypes, ranks, layouts and static values the IR is specialized for.
    """

    ir: Any
    compile_time_args: tuple[tuple[str, Any], ...] = ()


@attrs.frozen
class SourceFormat:
    """The kind of source a translation emits and a compilation accepts.

    Attributes:
        language: e.g. ``"c"``, ``"cuda"``, ``"sdfg"``.
        device_type: the device the generated code runs on.
    """

    language: str
    device_type: DeviceType

    def __str__(self) -> str:
        return f"{self.language} for {self.device_type.name}"


@attrs.frozen
class ProgramSource:
    """What a translation produces: source text ready for a compiler.

    Attributes:
        format: the language and device type of ``text``.
        text: the generated source.
        entry_point: the symbol the loader calls.
        build_options: options the compilation must honour (e.g. libraries), as pairs.
        metadata: anything the loader needs to call the entry point (argument order, extents).
    """

    format: SourceFormat
    text: str
    entry_point: str
    build_options: tuple[tuple[str, str], ...] = ()
    metadata: Any = None


@attrs.frozen
class CompiledArtifact:
    """What a compilation produces: where the built object lives, and how to enter it.

    Picklable, so that a disk cache can carry it to another process.

    Attributes:
        path: the file of the built object (e.g. a CPython extension module).
        content_hash: SHA-256 of the file's bytes at publish time; loading checks it.
        entry_point: the symbol the loader calls.
        source: the source the object was built from (the loader reads its metadata).
    """

    path: str
    content_hash: str
    entry_point: str
    source: ProgramSource
