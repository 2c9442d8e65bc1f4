"""Program objects: the user's handle on a program's definition and a backend.

``Program.__call__`` is the top of the data's walk: it tries the fast entry of the last
signature, else hands the bound arguments to the program's ``Dispatcher`` (``dispatch.py``),
which owns everything between here and the executable, told how stencil calls work by
``calls.StencilCalls``. A backend is a value that provides ``calls.ArrayBackend``; the
default one is found through an entry point, never by importing ``backends``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from types import MappingProxyType
from typing import Any, TypeVar, overload

import attrs

from pipeline import metrics
from pipeline.dispatch import bind_arguments
from pipeline.dsl.default_backend import DEFAULT
from pipeline.dsl.definitions import Definition
from pipeline.dsl.located_calls import call_with_located, has_located, located_variant
from pipeline.dsl.stages import CompilableProgram, ProgramDefinition
from pipeline.dsl.static_arguments import (
    StaticVariants,
    check_static_params,
    refuse_other_shapes,
    static_names,
)
from pipeline.dsl.tuple_arguments import flatten_arguments
from pipeline.runners import CompileTarget, compile_in_background
from pipeline.staged import Lowered

__all__ = ["Program", "program"]

F = TypeVar("F", bound=Callable[..., Any])


def _frozen(values: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(values))


@attrs.frozen(eq=False)
class Program(Definition):
    """A ``@program``: a sequence of field-operator calls over its arguments.

    Call it with arrays of the backend's device (and Python numbers for scalar parameters),
    positionally or by keyword. Every argument is checked before anything runs.

    Returns:
        ``None``, or for functional namespaces (JAX) the tuple of written output arrays.

    Raises:
        ArgumentError: an argument of the wrong kind, rank, dtype or device.
        DomainError: an input that does not cover the output domain plus the halo.
        DSLError: on the first call, if the definition is not valid DSL.
    """

    #: The scalar parameters bound to values (``with_bound_args``), by name.
    bound: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen, kw_only=True)
    #: The scalar parameters whose values at each call key a compiled variant (ADR 0025).
    static_params: tuple[str, ...] = attrs.field(default=(), converter=static_names, kw_only=True)
    #: Whether the field arguments' shapes key a variant, whose domains are constants.
    static_domains: bool = attrs.field(default=False, kw_only=True)
    #: Whether a call may compile a variant; ``False``: only precompiled ones run.
    jit: bool = attrs.field(default=True, kw_only=True)
    #: For a static-domain variant: the field parameters' shapes it is compiled for.
    static_shapes: Mapping[str, tuple[int, ...]] = attrs.field(
        factory=dict, converter=_frozen, kw_only=True
    )
    _static: StaticVariants | None = attrs.field(default=None, init=False, repr=False)
    # A static-domain variant's shape checks, made once (static_arguments.refuse_other_shapes).
    _shape_checks: list[Any] = attrs.field(factory=list, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if self.static_params or self.static_domains:
            check_static_params(self)
            object.__setattr__(self, "_static", StaticVariants(self))

    @property
    def variants(self) -> tuple[Program, ...]:
        """The variants made so far (ordinary programs, the static values bound and the
        shapes fixed) of a program with static parameters or domains, else ``()``."""
        return () if self._static is None else self._static.variants()

    def _static_shapes(self) -> Mapping[str, tuple[int, ...]]:
        return self.static_shapes

    def _takes_calls_as_given(self) -> bool:
        return self._static is None and not self.static_shapes  # these check the shapes

    def with_bound_args(self, **values: Any) -> Program:
        """This program with scalar parameters bound to values (a new program; ``self`` is
        unchanged): compile-time constants of their parameters' dtypes, folded into the
        code, and no longer arguments of its calls (GT4Py's ``with_bound_args``).

        Raises:
            TypeError: a name that is no parameter of the program, or one bound already.
            DSLTypeError: (at the first call, ``lower()`` or ``compile()``) a bound parameter
                that is not a scalar, or a value that is not a number of its dtype.
        """
        names = list(inspect.signature(self.function).parameters)
        unknown = [name for name in values if name not in names]
        if unknown:
            raise TypeError(
                f"{self.name}() has no parameter {unknown[0]!r} to bind; its parameters are "
                f"{', '.join(names)}"
            )
        again: list[str] = [name for name in values if name in self.bound]
        if again:
            raise TypeError(
                f"{self.name}(): parameter {again[0]!r} is bound already (to "
                f"{self.bound[again[0]]!r}); bind the program's original instead"
            )
        static = tuple(name for name in self.static_params if name not in values)
        return attrs.evolve(self, bound={**self.bound, **values}, static_params=static)

    def _bound_values(self) -> Mapping[str, Any]:
        return self.bound

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        dispatcher = self._dispatcher
        # The fast entries take the executable's parameters, the leaves: only a program
        # without tuple parameters (known once its nesting is read) hands them the call as is.
        if self._leaves_as_given and not metrics.ACTIVE:
            if kwargs:
                binding = dispatcher.fast_keywords  # binds natively, never runs the frontend
                if binding is not None:
                    result = binding.call_with(args, kwargs)  # no copy of either
                    if result is not NotImplemented:
                        return result
            else:
                fast = dispatcher.fast
                if fast is not None:
                    result = fast(*args)
                    if result is not NotImplemented:
                        return result
        static = self._static  # None but for static programs, which never take the fast path
        if static is not None:
            return static.call(args, kwargs)
        return self._call(args, kwargs)

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The call past a refusal of the fast entries (or before they exist): arguments bound
        by name and, for tuple parameters, flattened to their leaves (the fast entry tried on
        those), then the dispatcher (a static-domain variant checks its shapes first)."""
        if kwargs:
            args = self._bind(args, kwargs)
        nesting = self._tuple_nesting()
        leaves = args if nesting is None else flatten_arguments(self.name, nesting, args)
        if self.static_shapes:  # located arrays too: their shape is their array's
            refuse_other_shapes(self, leaves)
        if has_located(leaves):  # the variant for their origins (ADR 0026)
            return call_with_located(self, leaves)
        dispatcher = self._dispatcher
        if nesting is None:
            return dispatcher.call(self.definition, args)
        fast = dispatcher.fast
        if fast is not None and not metrics.ACTIVE:
            result = fast(*leaves)
            if result is not NotImplemented:
                return result
        return dispatcher.call(self.definition, leaves)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        return bind_arguments(self.name, self._parameters(), args, kwargs)

    def compile_target(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> CompileTarget[ProgramDefinition, CompilableProgram]:
        """What the call ``self(*args, **kwargs)`` runs (``pipeline.runners.Dispatched``):
        the dispatcher, the definition (this program's; the variant for located arrays'
        origins; for static parameters or domains, the variant of the values and shapes,
        made and remembered here) and the executables' arguments (tuples flattened, located
        arrays unwrapped). ``compile_many`` and ``compile(executor=...)`` compile it.

        Raises:
            ArgumentError: the arguments do not match the parameters, a located array does
                not fit its parameter, or a static parameter is given no single number.
            DSLError: the definition is not valid DSL.
        """
        if self._static is not None:
            return self._static.target(args, dict(kwargs))
        bound = self._bind(args, dict(kwargs)) if kwargs else args
        leaves = self._leaves(bound) if bound else bound
        if self.static_shapes:
            refuse_other_shapes(self, leaves)
        if has_located(leaves):  # the variant for their origins (ADR 0026)
            return CompileTarget(self._dispatcher, *located_variant(self, leaves))
        return CompileTarget(self._dispatcher, self.definition, leaves)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered[ProgramDefinition, CompilableProgram]:
        """Frontend and translation for example ``args``: the IR and the generated source.

        Without arguments nothing is specialized (every field is taken as contiguous).
        Located arrays (``pipeline.dsl.located``) lower the variant for their origins, the
        one their calls run. ``.compile()`` on the result finishes the walk.

        Raises:
            ArgumentError: the arguments do not match the parameters.
            DSLError: the definition is not valid DSL.
        """
        if self._static is not None:
            return self._static.lower(args, kwargs)
        target = self.compile_target(args, kwargs)
        lowered = Lowered.of(target.dispatcher, target.definition, target.args)
        self._remembered(lowered.program)
        return lowered

    def compile(self, *args: Any, executor: Executor | None = None, **kwargs: Any) -> Any:
        """``self.lower(*args).compile()``: the compiled program for ``args``'s signature,
        installed so that the first call with such arguments runs at once.

        With ``executor`` (any ``concurrent.futures.Executor``) translation and compilation
        run there and a ``Future`` of the compiled program is returned (see
        ``pipeline.compile_many``); either way what is compiled is ``compile_target``'s.

        A program with static parameters compiles one variant per value given: a list or
        tuple of values for a static parameter, several such parameters their product; it
        returns ``{(value, ...): compiled}`` by the values in ``static_params`` order (with
        static domains alone, the variant of the arguments' shapes, compiled).

        Raises:
            RuntimeError: on an embedded backend: embedded programs are not compiled.
        """
        if self._static is not None:
            return self._static.compile(args, kwargs, executor)
        if executor is None:
            return self.lower(*args, **kwargs).compile()
        return compile_in_background(self, args, executor, kwargs)


@overload
def program(function: F, /) -> Program: ...
@overload
def program(
    *,
    backend: Any = ...,
    static_params: tuple[str, ...] = ...,
    static_domains: bool = ...,
    jit: bool = ...,
) -> Callable[[F], Program]: ...
def program(
    function: Any = None, /, *, backend: Any = DEFAULT, static_params: tuple[str, ...] = (),
    static_domains: bool = False, jit: bool = True
) -> Any:  # fmt: skip
    """Declare a program (``@program`` or ``@program(backend=..., ...)``).

    Args:
        static_params: scalar parameters whose values at each call are compile-time
            constants: each distinct combination runs its own compiled variant (ADR 0025).
        static_domains: the field arguments' shapes are compile-time constants too: each
            distinct combination of shapes runs its own variant, whose domains are constants.
        jit: ``False``: a call whose values (and shapes) were not precompiled with
            ``compile(..., p=[...])`` is refused instead of compiling a variant.

    Raises:
        TypeError: ``backend=None`` (name ``backends.embedded_numpy`` instead), or a name
            in ``static_params`` that is no parameter of the function.
    """
    settings: dict[str, Any] = {"static_params": static_params, "jit": jit}
    settings["static_domains"] = static_domains
    if function is None:
        return lambda f: Program(f, backend=backend, **settings)
    return Program(function, backend=backend, **settings)
