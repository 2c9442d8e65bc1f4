"""Staged objects: a program lowered for one signature, and then compiled.

``prog.lower(*args)`` runs the frontend and the translation and returns a ``Lowered`` (the
frontend's program, the generated source); its ``.compile()`` runs compilation and loading,
installs the result in the program's dispatch table and returns a ``Compiled`` (the
artifact), callable like the program for that signature. Like JAX's ahead-of-time API:
inspect each stage, or compile ahead. Any toolchain's programs get them from their
``Dispatcher``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from pipeline.errors import ArgumentError
from pipeline.stages import ConcreteDefinition, Executable, NamedDefinition, ProgramSource

if TYPE_CHECKING:
    from pipeline.dispatch import Dispatcher, Specialization

__all__ = ["Compiled", "Lowered"]

D = TypeVar("D", bound=NamedDefinition)
P = TypeVar("P")


@attrs.frozen
class Lowered(Generic[D, P]):
    """A program after frontend and translation, for one compile-time signature.

    Attributes:
        concrete: the definition and the compile-time arguments lowered for.
        program: the frontend's output (the DSL's: a ``CompilableProgram``, ``.ir`` its IR).
        source: the translation's output (a ``ProgramSource`` on compiled backends; on an
            embedded backend, whose translation is the identity, the frontend's program).
    """

    _dispatcher: Dispatcher[D, P] = attrs.field(repr=False)
    concrete: ConcreteDefinition[D]
    program: P
    source: object

    @classmethod
    def of(
        cls, dispatcher: Dispatcher[D, P], definition: D, args: tuple[Any, ...]
    ) -> Lowered[D, P]:
        """Lower ``definition`` for ``args``'s signature through the dispatcher's backend."""
        concrete = dispatcher.concrete(definition, args)
        program, source = dispatcher.lower(concrete, args)
        return cls(dispatcher, concrete, program, source)

    @property
    def ir(self) -> Any:
        """The program's IR, for frontends whose program carries one as ``.ir`` (the DSL's
        typed, inlined IR with extents)."""
        return self.program.ir  # type: ignore[attr-defined]

    def as_text(self) -> str:
        """The generated source text, or the printed program when the backend generates none."""
        if isinstance(self.source, ProgramSource):
            return self.source.text
        return str(self.program)

    def compile(self) -> Compiled[D, P]:
        """Compile and load, and install the executable in the program's dispatch table.

        Raises:
            RuntimeError: the backend does not compile (embedded programs run the Python
                definition itself).
        """
        dispatcher = self._dispatcher
        dispatcher.refuse_unless_compiled(self.concrete.definition.name)
        found = dispatcher.compiled(self.concrete, lowered=(self.program, self.source))
        return Compiled(dispatcher, self.concrete, found)


@attrs.frozen
class Compiled(Generic[D, P]):
    """A program compiled for one compile-time signature: call it like the program.

    Calling it with arguments of another signature (another stride pattern, say) is an
    ``ArgumentError``; the program itself dispatches any signature.
    """

    _dispatcher: Dispatcher[D, P] = attrs.field(repr=False)
    concrete: ConcreteDefinition[D]
    specialization: Specialization[P] = attrs.field(repr=False)

    @property
    def artifact(self) -> object:
        """The compilation's output (a ``CompiledArtifact`` on the built-in backends)."""
        return self.specialization.artifact

    @property
    def executable(self) -> Executable:
        """The loading's output, as the dispatcher calls it (on checked arguments)."""
        return self.specialization.executable

    @property
    def source(self) -> object:
        """The translation's output."""
        return self.specialization.source

    @property
    def program(self) -> P:
        """The frontend's output."""
        return self.specialization.program

    @property
    def ir(self) -> Any:
        """The program's IR, for frontends whose program carries one (see ``Lowered.ir``)."""
        return self.specialization.program.ir  # type: ignore[attr-defined]

    def __call__(self, *args: Any) -> Any:
        """Run on ``args`` (checked as a program call is).

        Raises:
            ArgumentError: ``args`` belong to another compile-time signature, or fail a check.
        """
        dispatcher = self._dispatcher
        concrete = dispatcher.concrete(self.concrete.definition, args)
        if concrete.compile_time_args != self.concrete.compile_time_args:
            raise ArgumentError(
                f"{self.concrete.definition.name}() was compiled for "
                f"{self.concrete.compile_time_args!r}, but these arguments have "
                f"{concrete.compile_time_args!r}; call the program itself (it compiles each "
                "signature) or compile for these arguments"
            )
        return dispatcher.run(self.specialization, self.concrete.definition, args)
