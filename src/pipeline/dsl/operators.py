"""Field operators and scan operators: called from programs, or directly on arrays.

Called inside a program (compiled) or another operator (inlined), or on embedded fields,
they evaluate their definitions; called directly with arrays and ``out=``, they run as a
program of one call on their backend (``direct.py`` makes that call's definition).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

import attrs

from pipeline.dispatch import bind_arguments, user_facing
from pipeline.dsl.default_backend import DEFAULT
from pipeline.dsl.definitions import Definition
from pipeline.dsl.direct import direct_domain, refuse_located_scan_arrays, scan_call
from pipeline.dsl.evaluation import (
    current_output_domain,
    embedded_evaluation,
    evaluate_per_domain,
    evaluating_embedded,
    flattened,
    in_domain,
    output_domain,
    per_output,
)
from pipeline.dsl.frontend.operators import parse_scan_operator
from pipeline.dsl.located_calls import call_with_located, has_located, located_variant
from pipeline.dsl.stages import CompilableProgram, ProgramDefinition, ScanSettings
from pipeline.dsl.types import Dimension, Named, record_of
from pipeline.errors import SourceError
from pipeline.runners import CompileTarget
from pipeline.staged import Lowered

__all__ = ["FieldOperator", "ScanOperator", "field_operator", "scan_operator"]

F = TypeVar("F", bound=Callable[..., Any])


@attrs.frozen(eq=False)
class FieldOperator(Definition):
    """A ``@field_operator``: a stencil over fields, callable from programs and directly.

    Called inside a program or another field operator it is inlined (compiled) or evaluated
    on fields (embedded). Called directly with arrays, it needs ``out=`` (an array or tuple)
    and optionally ``domain=`` (a tuple of slices of the output, a dict of absolute bounds
    ``{I: (lo, hi)}``, or one such dict per output, nested like ``out=``), and runs on its
    backend.
    """

    kind = "field_operator"

    def __call__(self, *args: Any, out: Any = None, domain: Any = None, **kwargs: Any) -> Any:
        if embedded_evaluation() or any(
            hasattr(a, "__dsl_builtin__")
            for a in (*flattened(args), *flattened(tuple(kwargs.values())), *flattened(out))
        ):
            if per_output(domain):
                function = self._embedded_function()
                return evaluate_per_domain(self.name, function, args, kwargs, out, domain)
            return self._evaluate_embedded(args, kwargs, in_domain(out, domain))
        definition, leaves = self._direct_call(args, kwargs, out, domain)
        if has_located(leaves):  # the variant for their origins, as a program's (ADR 0026)
            return call_with_located(self, leaves, definition)
        return self._dispatcher.call(definition, leaves)

    def compile_target(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> CompileTarget[ProgramDefinition, CompilableProgram]:
        """What the direct call ``self(*args, **kwargs)`` runs (``out=`` and ``domain=``
        among ``kwargs``): the program of that one call, for located arrays the variant of
        their origins, and its executables' arguments (``pipeline.runners.Dispatched``).

        Raises:
            TypeError, ArgumentError: as the direct call would.
            DSLError: the definition is not valid DSL (when located arrays need its IR).
        """
        rest = dict(kwargs)
        out, domain = rest.pop("out", None), rest.pop("domain", None)
        definition, leaves = self._direct_call(args, rest, out, domain)
        if has_located(leaves):
            definition, leaves = located_variant(self, leaves, definition)
        return CompileTarget(self._dispatcher, definition, leaves)

    def lower(
        self, *args: Any, out: Any = None, domain: Any = None, **kwargs: Any
    ) -> Lowered[ProgramDefinition, CompilableProgram]:
        """Frontend and translation of the direct call ``self(*args, out=out, domain=domain,
        **kwargs)`` on arrays (``.ir``, ``.as_text()``); ``.compile()`` finishes the walk.

        Raises:
            TypeError, ArgumentError: as the direct call would.
            DSLError: the definition is not valid DSL.
        """
        target = self.compile_target(args, {**kwargs, "out": out, "domain": domain})
        return Lowered.of(target.dispatcher, target.definition, target.args)

    def _direct_call(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, domain: Any
    ) -> tuple[ProgramDefinition, tuple[Any, ...]]:
        """The definition of a direct call's program, and the arguments of its executables."""
        if out is None:
            raise TypeError(
                f"calling field operator {self.name!r} directly needs out=<array> (or a tuple "
                "of arrays), and optionally domain= for the output domain: slices, "
                "{I: (lo, hi)}, or one such dict per output"
            )
        outputs = flattened(out)
        definition = self.definition
        if domain is not None:
            definition = attrs.evolve(definition, **direct_domain(self.name, domain, outputs))
        # Tuple parameters are one parameter per component (t__0, t__1, ...).
        args = flattened(args)
        if kwargs:
            flat: dict[str, Any] = {}
            for key, value in kwargs.items():
                if isinstance(value, tuple) or record_of(type(value)) is not None:
                    flat.update({f"{key}__{i}": v for i, v in enumerate(flattened(value))})
                else:
                    flat[key] = value
            names = [n for n in self._parameters() if not n.startswith("__out")]
            args = bind_arguments(self.name, names, args, flat)
        return definition, (*args, *outputs)

    def _evaluate_embedded(self, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
        outputs = flattened(out)
        with evaluating_embedded(), output_domain(outputs):
            result = self._embedded_function()(*args, **kwargs)
        if out is None:
            return result
        results = flattened(result)
        if len(outputs) != len(results):
            raise TypeError(
                f"{self.name!r} returns {len(results)} field(s) but out= gives {len(outputs)}"
            )
        for target, value in zip(outputs, results, strict=True):
            target.__dsl_assign__(value)
        return None


@attrs.frozen(eq=False)
class ScanOperator(Definition):
    """A ``@scan_operator``: ``(carry, *point values) -> new carry``, swept along an axis.

    Called from a field operator or a program (with ``out=``) on fields, it returns the carry
    at every point of the output domain: the first point along the axis (the last, swept
    backward) gets ``function(init, *values there)``, each next one the function of the
    previous carry. A tuple ``init`` makes a tuple carry and a tuple of results.

    Called directly with arrays, as a field operator is, it needs ``out=`` (an array, or a
    tuple of arrays for a tuple carry) and optionally ``domain=``, and runs on its backend
    as a program of one call. Plain arrays name no dimensions: the scan's axis is the last
    axis of every array, and an array of fewer dimensions than ``out=`` takes its last ones
    (NumPy's broadcasting).
    """

    settings: ScanSettings = attrs.field(kw_only=True)

    kind = "scan_operator"

    def _scan_settings(self) -> ScanSettings:
        return self.settings

    def frontend(self) -> CompilableProgram:
        """A scan operator has no program of its own: it is compiled inside the field
        operator or program that calls it, whose ``frontend()`` shows it; a direct call's
        program depends on its arrays' ranks, and ``lower(arrays..., out=...)`` shows it.

        Raises:
            DSLError: the scan's definition is not valid DSL (located in the user's source).
            TypeError: otherwise, saying so.
        """
        try:
            parse_scan_operator(self.definition)
        except SourceError as error:
            raise user_facing(error) from None
        raise TypeError(
            f"scan operator {self.name!r} has no program of its own: it is compiled inside "
            "the field operator or program that calls it; call frontend() on that one, or "
            f"{self.name}.lower(arrays..., out=...) for the program of a direct call"
        )

    def __call__(self, *args: Any, out: Any = None, domain: Any = None, **kwargs: Any) -> Any:
        values = (*args, *kwargs.values())
        fields = [v for v in values if hasattr(v, "__dsl_scan__")]
        if not fields:
            if embedded_evaluation():
                raise TypeError(
                    f"scan operator {self.name!r} runs on fields: pass it at least one field"
                )
            return self._call_directly(args, kwargs, out, domain)
        out = in_domain(out, domain)
        bound = inspect.signature(self.function).bind(None, *args, **kwargs)
        point_values = tuple(bound.arguments.values())[1:]
        outputs = flattened(out)
        with evaluating_embedded(), output_domain(outputs):
            result = fields[0].__dsl_scan__(
                self._embedded_function(), self.settings, point_values, current_output_domain()
            )
        if out is None:
            return result
        for target, value in zip(outputs, flattened(result), strict=True):
            target.__dsl_assign__(value)
        return None

    def _call_directly(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, domain: Any
    ) -> Any:
        """A call from Python on arrays: a program of this one call, on the operator's backend
        (compiled once per ranks and domain, checked as any program's call)."""
        return self._dispatcher.call(*self._direct_call(args, kwargs, out, domain))

    def lower(
        self, *args: Any, out: Any = None, domain: Any = None, **kwargs: Any
    ) -> Lowered[ProgramDefinition, CompilableProgram]:
        """Frontend and translation of the direct call ``self(*args, out=out, domain=domain,
        **kwargs)`` on arrays: the program of that one call (``.ir``, ``.as_text()``);
        ``.compile()`` finishes the walk.

        Raises:
            TypeError, ArgumentError: as the direct call would.
            DSLError: the definition is not valid DSL.
        """
        return Lowered.of(self._dispatcher, *self._direct_call(args, kwargs, out, domain))

    def compile_target(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> CompileTarget[ProgramDefinition, CompilableProgram]:
        """What the direct call ``self(*args, **kwargs)`` runs (``out=`` and ``domain=``
        among ``kwargs``): the program of that one call and its executables' arguments
        (``pipeline.runners.Dispatched``).

        Raises:
            TypeError, ArgumentError: as the direct call would.
        """
        rest = dict(kwargs)
        out, domain = rest.pop("out", None), rest.pop("domain", None)
        return CompileTarget(self._dispatcher, *self._direct_call(args, rest, out, domain))

    def _direct_call(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, domain: Any
    ) -> tuple[ProgramDefinition, tuple[Any, ...]]:
        refuse_located_scan_arrays(self.name, (*args, *kwargs.values(), *flattened(out)))
        changes, leaves = scan_call(self.name, self.function, self.settings, args, kwargs, out)
        changes.update(direct_domain(self.name, domain, flattened(out)))
        return attrs.evolve(self.definition, **changes), leaves


def scan_operator(
    *, axis: Dimension, forward: bool = True, init: Any, backend: Any = DEFAULT
) -> Callable[[F], ScanOperator]:
    """Declare a scan operator: ``@scan_operator(axis=K, forward=True, init=0.0)``.

    The function takes the carry (a scalar, or a tuple of scalars for a tuple ``init``, or
    a dataclass or NamedTuple of scalars for an ``init`` of that class) and one value per
    point argument, annotated with dtypes, and returns the new carry.

    Raises:
        TypeError: ``axis`` is not a Dimension.
    """
    if not isinstance(axis, Dimension):
        raise TypeError(f"scan_operator(axis=...) takes a Dimension, got {axis!r}")
    record = record_of(type(init))
    if record is not None:  # a named collection is a tuple with field names (ADR 0023)
        init = Named(record.values(init), record)
    settings = ScanSettings(axis.name, bool(forward), init)
    return lambda f: ScanOperator(f, backend=backend, settings=settings)


@overload
def field_operator(function: F, /) -> FieldOperator: ...
@overload
def field_operator(*, backend: Any = ...) -> Callable[[F], FieldOperator]: ...
def field_operator(function: Any = None, /, *, backend: Any = DEFAULT) -> Any:
    """Declare a field operator (``@field_operator`` or ``@field_operator(backend=...)``)."""
    if function is None:
        return lambda f: FieldOperator(f, backend=backend)
    return FieldOperator(function, backend=backend)
