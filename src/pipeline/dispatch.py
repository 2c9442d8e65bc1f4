"""The dispatcher: the only code between a program call and an executable.

One ``Dispatcher`` per program holds the table from compile-time signature to executable, the
fast path, the metrics, the stage dump and the rebuild of a damaged artifact. The data's walk::

    Program.__call__(*args)
      |- fast path: the last signature's self-checking entry (``fast``): the executable's
      |  ``fast_entry(*args)`` (one native call), or for an executable without one the
      |  ``RememberedEntry`` of arguments whose verdict cannot change (JAX arrays)
      '- Dispatcher.call(definition, args)
           key = (definition.output_slices, backend.compile_time_args(args))
           miss -> pipeline.program -> translate -> compile -> load    (once per key, locked)
           entry.fast_entry(*args)                    (refused: the checker explains why)
           or ArgumentChecker.check(args) (remembered: ``verdicts``), then entry.executable(*args)

An executable runs only for the key it was built for and only on arguments a check accepted:
its own native checks (``SelfCheckingExecutable``) or the shared ``ArgumentChecker``, so a
backend written from scratch gets the same checks and messages as ``c_cpu``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Hashable
from types import ModuleType
from typing import Any, Protocol

import attrs

from allocators import DeviceType
from pipeline import metrics
from pipeline.arguments import ArgumentChecker, bind_arguments
from pipeline.errors import DamagedArtifactError, DSLError, StepOutputError
from pipeline.events import StageDump, dump_directory, subscribe
from pipeline.stages import (
    CompilableProgram,
    CompileTimeArgs,
    ConcreteDefinition,
    Executable,
    ProgramDefinition,
)
from pipeline.steps import step_name
from pipeline.verdicts import RememberedCheck, RememberedEntry
from pipeline.workflow import CompilePipeline

__all__ = ["DispatchBackend", "Dispatcher", "Specialization", "user_facing"]

_log = logging.getLogger(__name__)


class DispatchBackend(Protocol):
    """What the dispatcher needs of a backend (``backends.Backend`` values provide it)."""

    @property
    def name(self) -> str: ...

    @property
    def pipeline(self) -> CompilePipeline[Any, Any, Any, Any, Any]: ...

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

    def compile_time_args(self, args: tuple[Any, ...]) -> CompileTimeArgs:
        """What of ``args`` an executable is specialized for."""
        ...


@attrs.frozen
class Specialization:
    """Everything one signature of one program went through, kept by the dispatcher.

    Attributes:
        program: the frontend's output with the compile-time arguments.
        source: the translation's output.
        artifact: the compilation's output.
        executable: the loading's output.
        checker: the argument checks, from ``program``'s IR.
        check: ``checker.check`` with the backend's device, namespace and array type bound,
            skipped for arguments it accepted before that cannot have changed since
            (``pipeline.verdicts``: JAX arrays and plain scalars); returns whether the
            verdict is remembered.
        fast_entry: the executable's self-checking entry, if it offers one.
        remembered_entry: for an executable without ``fast_entry``, the entry that runs it on
            arguments ``check`` remembers (the fast slot once such a call was checked).
    """

    program: CompilableProgram
    source: object
    artifact: object
    executable: Executable
    checker: ArgumentChecker
    check: RememberedCheck = attrs.field(repr=False)
    fast_entry: Callable[..., Any] | None
    remembered_entry: RememberedEntry | None = attrs.field(repr=False)


def user_facing(error: DSLError) -> DSLError:
    """``error`` without our frames: its message already points into the user's source."""
    return error.with_traceback(None)


class Dispatcher:
    """Per program: compile-time signature -> ``Specialization``, built on first use.

    ``fast`` is the self-checking entry of the last call's signature (``None`` until a
    self-checking executable ran, or a call the checks' memory keeps was accepted):
    ``Program.__call__`` tries it before anything else.
    """

    __slots__ = ("_lock", "_metrics_key", "_table", "backend", "fast")

    def __init__(self, backend: DispatchBackend, metrics_key: str) -> None:
        self.backend = backend
        self.fast: Callable[..., Any] | None = None
        self._metrics_key = metrics_key
        self._table: dict[tuple[Any, Hashable], Specialization] = {}
        # Held while a signature compiles: concurrent first calls build it once.
        self._lock = threading.Lock()

    def concrete(
        self, definition: ProgramDefinition, args: tuple[Any, ...]
    ) -> ConcreteDefinition:
        """``definition`` with the compile-time arguments of ``args`` (none without ``args``)."""
        if not args:
            return ConcreteDefinition(definition)
        return ConcreteDefinition(definition, self.backend.compile_time_args(args))

    def frontend(self, definition: ProgramDefinition) -> CompilableProgram:
        """The pipeline's frontend output for ``definition`` (no compile-time arguments).

        Raises:
            DSLError: the definition is not valid DSL (located in the user's source).
        """
        try:
            return self._program(ConcreteDefinition(definition))
        except DSLError as error:
            raise user_facing(error) from None

    def lower(
        self, concrete: ConcreteDefinition, args: tuple[Any, ...]
    ) -> tuple[CompilableProgram, object]:
        """Frontend and translation for ``concrete``, made from example ``args``.

        Raises:
            ArgumentError: the number of ``args`` does not match the parameters.
            DSLError: the definition is not valid DSL (located in the user's source).
        """
        try:
            return self._lower(concrete, args)
        except DSLError as error:
            raise user_facing(error) from None

    def _lower(
        self, concrete: ConcreteDefinition, args: tuple[Any, ...]
    ) -> tuple[CompilableProgram, object]:
        program = self._program(concrete)
        params = program.ir.params
        if args and len(args) != len(params):
            bind_arguments(program.ir.name, [p.name for p in params], args, {})
        return program, self.backend.pipeline.translate(program)

    def _program(self, concrete: ConcreteDefinition) -> CompilableProgram:
        frontend = self.backend.pipeline.frontend
        program = self.backend.pipeline.program(concrete)
        if not isinstance(program, CompilableProgram):
            raise StepOutputError(
                f"the frontend step {step_name(frontend)} returned "
                f"{type(program).__module__}.{type(program).__qualname__}, but the frontend of "
                f"a DSL program's pipeline must return a CompilableProgram; fix the step's "
                "return value"
            )
        return program

    def specialization(
        self, definition: ProgramDefinition, args: tuple[Any, ...]
    ) -> Specialization:
        """The table's entry for ``args``'s signature, built (and recorded) on a miss."""
        compile_time_args = self.backend.compile_time_args(args)
        found = self._table.get((definition.output_slices, compile_time_args))
        if found is None:
            found = self.compiled(ConcreteDefinition(definition, compile_time_args), args)
        return found

    def compiled(
        self,
        concrete: ConcreteDefinition,
        args: tuple[Any, ...] = (),
        lowered: tuple[CompilableProgram, object] | None = None,
        artifact: object | None = None,
    ) -> Specialization:
        """The entry for ``concrete`` (made from example ``args``), built once.

        Args:
            lowered: its frontend and translation outputs, when the caller has them already.
            artifact: its compilation output, made elsewhere (a compile worker): only loading
                runs here (and, if the artifact turns out damaged, a compilation here).
        """
        key = (concrete.definition.output_slices, concrete.compile_time_args)
        with self._lock:
            found = self._table.get(key)
            if found is None:
                found = self._build(concrete, args, lowered, artifact)
                self._table[key] = found
        return found

    def call(self, definition: ProgramDefinition, args: tuple[Any, ...]) -> Any:
        """Run ``definition`` on ``args`` (bound, in parameter order): the slow path."""
        found = self.specialization(definition, args)
        if not metrics.ACTIVE:
            return self.run(found, definition, args)
        start = time.perf_counter()
        result = self.run(found, definition, args)
        metrics.record_call(self._metrics_key, time.perf_counter() - start)
        return result

    def run(
        self, found: Specialization, definition: ProgramDefinition, args: tuple[Any, ...]
    ) -> Any:
        """Run ``found``'s executable on ``args``, checked: natively by its ``fast_entry``
        (the checker then explains a refusal), else by the ``ArgumentChecker`` first.

        The entry that accepted a program call (not a field operator's ``domain=`` call)
        becomes ``fast``: the ``fast_entry``, or the ``remembered_entry`` when the check
        remembers the verdict of ``args``.

        Raises:
            ArgumentError, DomainError: an argument fails a check.
        """
        fast = found.fast_entry
        if fast is not None:
            result = fast(*args)
            if result is not NotImplemented:
                if definition.output_slices is None:
                    self.fast = fast
                return result
        remembered = found.check(args)
        entry = found.remembered_entry
        if remembered and entry is not None and definition.output_slices is None:
            self.fast = entry
        return found.executable(*args)

    def _build(
        self,
        concrete: ConcreteDefinition,
        args: tuple[Any, ...],
        lowered: tuple[CompilableProgram, object] | None,
        artifact: object | None,
    ) -> Specialization:
        """Walk the pipeline for one signature; a damaged artifact is rebuilt once."""
        start = time.perf_counter()
        dump = dump_directory()
        try:
            with subscribe(StageDump(dump)) if dump is not None else contextlib.nullcontext():
                try:
                    found = self._walk(concrete, args, lowered, artifact)
                except DamagedArtifactError as error:
                    _log.warning("%s; rebuilding %s", error, concrete.definition.name)
                    found = self._walk(concrete, args, lowered, None)
        except DSLError as error:
            raise user_facing(error) from None
        if metrics.enabled():
            metrics.record_compile(self._metrics_key, time.perf_counter() - start)
        return found

    def _walk(
        self,
        concrete: ConcreteDefinition,
        args: tuple[Any, ...],
        lowered: tuple[CompilableProgram, object] | None,
        artifact: object | None,
    ) -> Specialization:
        pipeline = self.backend.pipeline
        program, source = self._lower(concrete, args) if lowered is None else lowered
        artifact = pipeline.compile(source) if artifact is None else artifact
        executable = pipeline.load(artifact)
        fast_entry = getattr(executable, "fast_entry", None)
        checker = ArgumentChecker(program.ir)
        backend = self.backend
        check = RememberedCheck(
            functools.partial(
                checker.check,
                device_type=backend.device_type,
                namespace=backend.array_namespace,
                array_type=backend.array_type,
            )
        )
        remembered_entry = (
            None
            if fast_entry is not None
            else RememberedEntry(
                check, executable, backend.compile_time_args, concrete.compile_time_args
            )
        )
        return Specialization(
            program, source, artifact, executable, checker, check, fast_entry, remembered_entry
        )
