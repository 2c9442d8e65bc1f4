"""The artifacts a compile pipeline's stages share, whatever the toolchain.

``ConcreteDefinition`` (a frontend's definition and its ``CompileTimeArgs``) -> frontend ->
(the frontend's program) -> translation -> ``ProgramSource`` -> compilation ->
``CompiledArtifact`` -> loading -> ``Executable``. The stencil DSL's own artifacts
(``ProgramDefinition``, ``CompilableProgram``) are in ``pipeline.dsl.stages``.

Every artifact is immutable, has a one-line ``repr`` and is fingerprintable; those that a disk
cache may hold (source and compiled artifacts) are picklable.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, Protocol, TypeVar

import attrs

from allocators import DeviceType

__all__ = [
    "CompileTimeArgs",
    "CompiledArtifact",
    "ConcreteDefinition",
    "Executable",
    "NamedDefinition",
    "ProgramSource",
    "SelfCheckingExecutable",
    "SourceFormat",
]


class Executable(Protocol):
    """What loading produces: a callable that runs the program on checked arguments.

    The contract (ADR 0011):

    - it receives one value per program parameter, positionally, in parameter order (the
      dispatcher binds keywords first);
    - it is called only for the compile-time signature it was built for, and only on
      arguments the dispatcher's ``ArgumentChecker`` accepted, or on arguments that nothing
      the check reads tells apart from such a call's (the backend's native entry, ADR 0021);
    - it returns ``None`` (outputs updated in place) or, for functional array namespaces
      (JAX), the tuple of written output arrays in parameter order.

    An executable that checks arguments itself offers ``fast_entry`` as well (see
    ``SelfCheckingExecutable``).
    """

    def __call__(self, *args: Any) -> Any: ...


class SelfCheckingExecutable(Executable, Protocol):
    """An executable whose ``fast_entry`` checks every argument itself (c_cpu's native code).

    ``fast_entry(*args)`` takes unchecked arguments: it runs the program, or returns
    ``NotImplemented`` without touching memory when any argument fails a check or belongs to
    another compile-time signature. The dispatcher keeps it as the program's fast path and
    runs the ``ArgumentChecker`` only to explain a refusal.
    """

    fast_entry: Callable[..., Any]


def _sorted_pairs(pairs: Iterable[tuple[str, Hashable]]) -> tuple[tuple[str, Hashable], ...]:
    return tuple(sorted(pairs, key=lambda pair: pair[0]))


@attrs.frozen(repr=False)
class CompileTimeArgs:
    """What an executable is specialized for, extracted from a call's arguments by the backend.

    Hashable: the dispatcher's table is keyed by it. Empty means "nothing specialized" (every
    field contiguous in its last dimension, for translations that specialize on strides).

    Attributes:
        items: sorted (name, value) pairs, e.g. ``(("unit_stride", (True, True)),)``.
    """

    items: tuple[tuple[str, Hashable], ...] = attrs.field(default=(), converter=_sorted_pairs)

    def get(self, name: str, default: Any = None) -> Any:
        """The value called ``name``, or ``default``."""
        return dict(self.items).get(name, default)

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={value!r}" for name, value in self.items)
        return f"CompileTimeArgs({inner})"


class NamedDefinition(Protocol):
    """What the framework reads of a frontend's definition: its name, for messages."""

    @property
    def name(self) -> str: ...


D = TypeVar("D", bound=NamedDefinition)


@attrs.frozen
class ConcreteDefinition(Generic[D]):
    """What a dispatched pipeline compiles: the definition and the compile-time arguments,
    side by side (GT4Py's concrete artifact).

    The DSL's frontend reads ``definition`` alone, so it runs once per definition whatever
    the number of signatures; the arguments rejoin the IR in the ``CompilableProgram``.
    """

    definition: D
    compile_time_args: CompileTimeArgs = CompileTimeArgs()


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


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@attrs.frozen(repr=False)
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

    def __repr__(self) -> str:
        return (
            f"ProgramSource({self.format}, entry {self.entry_point}, {len(self.text)} chars, "
            f"sha256 {_digest(self.text)})"
        )


@attrs.frozen(repr=False)
class CompiledArtifact:
    """What a compilation produces: where the built object lives, and how to enter it.

    Picklable, so that a disk cache can carry it to another process.

    Attributes:
        path: the file of the built object (e.g. a shared object).
        content_hash: SHA-256 of the file's bytes at publish time; loading checks it.
        entry_point: the symbol the loader calls.
        source: the source the object was built from (the loader reads its metadata).
    """

    path: str
    content_hash: str
    entry_point: str
    source: ProgramSource

    def __repr__(self) -> str:
        return f"CompiledArtifact({self.path}, sha256 {self.content_hash[:12]})"
