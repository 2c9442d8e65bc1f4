"""What programs, field operators and scan operators share: a definition and a backend.

``Definition`` holds the user's function and its backend, makes the ``ProgramDefinition``
(with the globals it captured) and the dispatcher on first use, and lowers; ``Program``
(``programs.py``), ``FieldOperator`` and ``ScanOperator`` (``operators.py``) add their calls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import attrs

from pipeline.dispatch import DispatchBackend, Dispatcher
from pipeline.dsl.calls import STENCIL_CALLS
from pipeline.dsl.default_backend import DEFAULT, check_backend, resolve_backend
from pipeline.dsl.frontend.annotations import parameter_nesting
from pipeline.dsl.frontend.source import captured_values, with_captured_globals
from pipeline.dsl.stages import CompilableProgram, ProgramDefinition, ScanSettings
from pipeline.dsl.tuple_arguments import Nesting, flatten_arguments, has_tuples
from pipeline.errors import SourceError

__all__ = ["Definition"]


@attrs.frozen(eq=False)
class Definition:
    """Common part of programs, field operators and scan operators."""

    function: Callable[..., Any]
    backend: DispatchBackend = attrs.field(
        default=cast(DispatchBackend, DEFAULT),
        converter=resolve_backend,
        validator=check_backend,
        kw_only=True,
    )
    # Made after the backend is validated (see __attrs_post_init__).
    _dispatcher: Dispatcher[ProgramDefinition, CompilableProgram] = attrs.field(
        init=False, repr=False
    )
    _definition: list[ProgramDefinition] = attrs.field(factory=list, init=False, repr=False)
    # The function run when called on embedded fields, with the globals captured on first
    # use (see ``with_captured_globals``).
    _frozen: list[Any] = attrs.field(factory=list, init=False, repr=False)
    # The frontend's parameter names, kept from the first frontend output this object sees:
    # keywords are bound by them without running the frontend step at every call.
    _parameter_names: list[tuple[str, ...]] = attrs.field(factory=list, init=False, repr=False)
    # The parameters' nesting from their annotations, kept once read: None for a program
    # without tuple parameters, whose arguments go to the executable as they are.
    _nesting: list[Nesting | None] = attrs.field(factory=list, init=False, repr=False)
    # Set once the nesting is read and has no tuple: a call's arguments are the executable's.
    _leaves_as_given: bool = attrs.field(default=False, init=False, repr=False)

    kind = "program"

    def __attrs_post_init__(self) -> None:
        dispatcher = Dispatcher(self.backend, STENCIL_CALLS, self.metrics_key)
        object.__setattr__(self, "_dispatcher", dispatcher)

    @property
    def name(self) -> str:
        """The function's name."""
        return self.function.__name__

    @property
    def dispatcher(self) -> Dispatcher[ProgramDefinition, CompilableProgram]:
        """The program's table of compiled signatures (``pipeline.dispatch``)."""
        return self._dispatcher

    @property
    def metrics_key(self) -> str:
        """Where this program's metrics are kept: ``"<name>@<backend name>"``."""
        return f"{self.name}@{self.backend.name}"

    @property
    def definition(self) -> ProgramDefinition:
        """The definition, with the global and closure values its body uses."""
        if not self._definition:
            captured = captured_values(self.function)
            self._definition.append(
                ProgramDefinition(
                    self.function,
                    self.kind,
                    captured,
                    scan=self._scan_settings(),
                    bound=self._bound_values(),
                    static_shapes=self._static_shapes(),
                )
            )
        return self._definition[0]

    def _scan_settings(self) -> ScanSettings | None:
        return None

    def _bound_values(self) -> Mapping[str, Any]:
        return {}

    def _static_shapes(self) -> Mapping[str, tuple[int, ...]]:
        return {}

    def _takes_calls_as_given(self) -> bool:
        """Whether the fast entries may take the calls (a program with static parameters
        hands its calls to a variant instead)."""
        return True

    def _embedded_function(self) -> Any:
        """The function run on embedded fields, with the globals captured on first use."""
        if not self._frozen:
            definition = self.definition
            self._frozen.append(
                with_captured_globals(definition.function, dict(definition.captured))
            )
        return self._frozen[0]

    @property
    def __field_allocator__(self) -> Any:
        """The backend's allocator, so that ``allocators.zeros(..., allocator=prog)`` works."""
        return self.backend.__field_allocator__  # type: ignore[attr-defined]

    def __fingerprint__(self) -> object:
        return self.definition

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self

    def with_backend(self, backend: DispatchBackend) -> Any:
        """The same definition on another backend (a new object; ``self`` is unchanged)."""
        return attrs.evolve(self, backend=backend)

    def frontend(self) -> CompilableProgram:
        """The frontend's output: typed, inlined IR with extents (``str(...ir)`` prints it).

        The backend pipeline's frontend makes it, the same one that compiles, checks
        arguments and binds keywords.

        Raises:
            DSLError: the definition is not valid DSL (located in the user's source).
        """
        return self._remembered(self._dispatcher.frontend(self.definition))

    def _remembered(self, program: CompilableProgram) -> CompilableProgram:
        if not self._parameter_names:
            # Keywords bind parameters as written: a tuple parameter by its own name.
            self._parameter_names.append(tuple(name for name, _ in program.ir.written))
        return program

    def _tuple_nesting(self) -> Nesting | None:
        """The parameters' nesting if any is a tuple, else None (read once)."""
        if not self._nesting:
            try:
                bound = self._bound_values()
                nesting = tuple(
                    item for item in parameter_nesting(self.function) if item[0] not in bound
                )
            except (SourceError, NameError):
                return None  # the frontend reports the annotation, located
            self._nesting.append(nesting if has_tuples(nesting) else None)
            as_given = self._nesting[0] is None and self._takes_calls_as_given()
            object.__setattr__(self, "_leaves_as_given", as_given)
        return self._nesting[0]

    def _leaves(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """``args`` as the executables take them: a tuple argument's leaves one by one.

        Raises:
            ArgumentError: a tuple argument not nested as its parameter's annotation.
        """
        nesting = self._tuple_nesting()
        return args if nesting is None else flatten_arguments(self.name, nesting, args)

    def _parameters(self) -> tuple[str, ...]:
        """The frontend's parameter names (the frontend runs on the first use only)."""
        if not self._parameter_names:
            self.frontend()
        return self._parameter_names[0]
