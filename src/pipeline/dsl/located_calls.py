"""Program calls with located arrays: check their dimensions, key a variant on their origins.

``Program._call`` (and a field operator's direct call, ``op(located(a, ...), out=x)``) hands
a call here when one of its leaves is a ``LocatedArray`` (``pipeline.dsl.located``). Each
located argument's dimensions must be its parameter's; its origins (where not 0) become a
``ProgramDefinition.located`` variant of the program, whose IR the ``array_origins`` pass
reads in the outputs' element indices; the variant runs through the program's own
dispatcher on the plain arrays (ADR 0026)::

    program(f_located, out)  ->  check dims  ->  definition.located = (("f", (("I", -1),)),)
                             ->  dispatcher.call(variant, (f, out))
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any, Protocol

import attrs

from pipeline.dispatch import Dispatcher
from pipeline.dsl.errors import DomainError
from pipeline.dsl.ir.nodes import Origins, ProgramIR
from pipeline.dsl.located import LocatedArray
from pipeline.dsl.stages import CompilableProgram, ProgramDefinition
from pipeline.dsl.types import FieldType
from pipeline.errors import ArgumentError

__all__ = ["call_with_located", "has_located", "located_variant"]


class LocatedCaller(Protocol):
    """What a located call reads of a program (``pipeline.dsl.Program`` provides it)."""

    @property
    def definition(self) -> ProgramDefinition: ...

    @property
    def dispatcher(self) -> Dispatcher[ProgramDefinition, CompilableProgram]: ...

    def frontend(self) -> CompilableProgram: ...


@attrs.define(eq=False)
class _Variants:
    """What located calls of one definition read again and again: its IR (the frontend's,
    for the parameters' names and types and the stencils' outputs) and its variants by
    their origins, each built once."""

    ir: ProgramIR
    by_origins: dict[Origins, ProgramDefinition] = attrs.field(factory=dict)


# A memo per program definition, dropped with it (a definition belongs to one program).
_VARIANTS: weakref.WeakKeyDictionary[ProgramDefinition, _Variants] = weakref.WeakKeyDictionary()


def has_located(leaves: Sequence[Any]) -> bool:
    """Whether any of a call's leaves is a located array."""
    return any(type(leaf) is LocatedArray for leaf in leaves)


def call_with_located(
    program: LocatedCaller, leaves: Sequence[Any], called: ProgramDefinition | None = None
) -> Any:
    """Run ``program`` on ``leaves`` (one per parameter of its executables, some located).

    ``called``: the definition the call runs when it is not the program's own (a direct
    call's, with its ``domain=``), of the same parameters and outputs.

    Returns:
        What the program's call returns.

    Raises:
        ArgumentError: as ``located_variant``.
        DomainError: the arrays do not cover the reads; the message's indices are the
            arrays' elements, and a note says where the located ones lie on the grid.
    """
    definition, plain = located_variant(program, leaves, called)
    try:
        return program.dispatcher.call(definition, plain)
    except DomainError as error:
        if not definition.located:
            raise
        ir = _VARIANTS[program.definition].ir
        where = "; ".join(
            f"{_shown(ir, name)!r} {_described(dict(origin))}"
            for name, origin in definition.located
        )
        raise DomainError(
            f"{error} (the indices above are the arrays' elements; located: {where})"
        ) from error


def located_variant(
    program: LocatedCaller, leaves: Sequence[Any], called: ProgramDefinition | None = None
) -> tuple[ProgramDefinition, tuple[Any, ...]]:
    """The definition a call with ``leaves`` runs (the program's own, or its variant for the
    located arguments' origins), and the leaves with the located arrays unwrapped.

    ``called``: the definition the call runs when it is not the program's own (a direct
    call's, with its ``domain=``: the same parameters and outputs, read from the program's
    own IR); its variant is made anew, and found in the dispatch table by value.

    Raises:
        ArgumentError: a located array for a scalar parameter, or whose dimensions are not
            its parameter's (in order), or outputs of one call with different origins;
            raised before anything runs, naming the program and the arguments.
    """
    definition = program.definition
    variants = _VARIANTS.get(definition)
    if variants is None:
        variants = _VARIANTS[definition] = _Variants(program.frontend().ir)
    if called is not None and called is not definition:
        definition, variants = called, _Variants(variants.ir)
    ir = variants.ir
    plain = tuple(leaf.array if type(leaf) is LocatedArray else leaf for leaf in leaves)
    if len(leaves) != len(ir.params):
        return definition, plain  # the dispatcher refuses them, naming them
    origins: dict[str, tuple[tuple[str, int], ...]] = {}
    for param, leaf in zip(ir.params, leaves, strict=True):
        if type(leaf) is LocatedArray:
            origins[param.name] = _origins(ir, param.name, param.type, leaf)
    _check_output_origins(ir, origins)
    key: Origins = tuple((name, dims) for name, dims in origins.items() if dims)
    if not key:
        return definition, plain
    variant = variants.by_origins.get(key)
    if variant is None:
        variant = variants.by_origins[key] = attrs.evolve(definition, located=key)
    return variant, plain


def _origins(
    ir: ProgramIR, name: str, expected: object, leaf: LocatedArray
) -> tuple[tuple[str, int], ...]:
    """The located argument's origins where not 0, once its dimensions are checked."""
    shown = _shown(ir, name)
    if not isinstance(expected, FieldType):
        raise ArgumentError(
            f"argument {shown!r} of {ir.name}() is a scalar parameter ({expected}); pass a "
            "number, not a located array"
        )
    if leaf.dims != expected.dims:  # Dimensions, not axis names: I is not IHalf
        raise ArgumentError(
            f"argument {shown!r} of {ir.name}() is located over [{_listed(leaf.dims)}], "
            f"but its parameter is over [{_listed(expected.dims)}]; pass "
            "an array over the parameter's dimensions, in its order (transpose it, or fix dims=)"
        )
    return tuple((d, o) for d, o in zip(leaf.dim_names, leaf.origin, strict=True) if o)


def _check_output_origins(ir: ProgramIR, origins: dict[str, tuple[tuple[str, int], ...]]) -> None:
    """The outputs of one stencil are written at the same grid points, element by element:
    they must share their origins."""
    for stencil in ir.stencils:
        found = {t.name: dict(origins.get(t.name, ())) for t in stencil.outputs}
        if len({tuple(sorted(o.items())) for o in found.values()}) > 1:
            listed = "; ".join(
                f"{_shown(ir, name)!r} {_described(origin)}" for name, origin in found.items()
            )
            raise ArgumentError(
                f"{ir.name}(): the outputs of the call of {stencil.operator_name!r} have "
                f"different origins ({listed}); give them the same origin, or write them in "
                "separate calls"
            )


def _shown(ir: ProgramIR, name: str) -> str:
    """Parameter ``name`` as the user writes it: ``t[1][0]``, or a direct call's output
    (``frontend.direct_calls`` names them ``__out0``, ...) as ``out=`` or ``out=[1]``."""
    if name.startswith("__out"):
        outputs = [p.name for p in ir.params if p.name.startswith("__out")]
        return "out=" if len(outputs) == 1 else f"out=[{name.removeprefix('__out')}]"
    return ir.shown(name)


def _listed(dims: Sequence[object]) -> str:
    return ", ".join(str(dim) for dim in dims)


def _described(origin: dict[str, int]) -> str:
    if not origin:
        return "at origin 0"
    return "at origin " + ", ".join(f"{dim}={at}" for dim, at in origin.items())
