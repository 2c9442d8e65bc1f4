"""An operator called directly from Python (``op(a, out=x)``, ``scan(a, out=x)``) as a program
of one stencil whose outputs are extra parameters named ``__out0``, ``__out1``, ...

The output domain comes from the definition: ``output_slices`` (positional slices of every
output) and ``output_bounds`` (absolute bounds by dimension name, one set per output or one
for all). A scan operator's point values are dtypes, so its definition also carries
``call_dims``: the dimensions of each argument and output, read from the arrays' ranks.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.dsl.errors import DSLTypeError
from pipeline.dsl.frontend.operators import parse_field_operator, parse_scan_operator
from pipeline.dsl.ir import nodes as ir
from pipeline.dsl.regions import Bound
from pipeline.dsl.stages import ProgramDefinition
from pipeline.dsl.types import Dimension, FieldType, ScalarType

__all__ = ["direct_call_program"]


def direct_call_program(definition: ProgramDefinition) -> ir.ProgramIR:
    """A field operator or scan operator called directly, as a program of one stencil.

    Raises:
        DSLError: the operator is not valid DSL (located in the user's source).
        DSLTypeError: ``domain=`` that does not fit the outputs.
    """
    if definition.kind == "scan_operator":
        return _direct_scan_program(definition)
    operator = parse_field_operator(definition)
    params = list(operator.params)
    output_types = operator.result_types
    args: tuple[ir.Expr, ...] = tuple(ir.Ref(p.name) for p in operator.params)
    results: tuple[ir.Expr, ...] = (ir.OperatorCall(operator, args, loc=operator.loc),)
    return _program(definition, operator.name, params, output_types, results, operator.loc)


def _direct_scan_program(definition: ProgramDefinition) -> ir.ProgramIR:
    """A scan operator over the arrays of a direct call: each point argument is a field of
    the dimensions ``call_dims`` gives it (or a scalar), each carry component an output."""
    operator = parse_scan_operator(definition)
    dims = definition.call_dims
    assert dims is not None, "a scan operator called directly carries its arguments' dims"
    count = len(operator.params)
    params = [
        ir.Param(p.name, p.type if d is None else _field(d, p.type))
        for p, d in zip(operator.params, dims[:count], strict=True)
    ]
    output_types = tuple(
        _field(d or (), c.type) for c, d in zip(operator.carry, dims[count:], strict=True)
    )
    args: tuple[ir.Expr, ...] = tuple(ir.Ref(p.name) for p in operator.params)
    results = tuple(
        ir.Scan(operator, args, i, loc=operator.loc) for i in range(len(operator.carry))
    )
    return _program(definition, operator.name, params, output_types, results, operator.loc)


def _field(dims: tuple[str, ...], scalar: ir.Type) -> FieldType:
    assert isinstance(scalar, ScalarType)
    return FieldType(tuple(Dimension(name) for name in dims), scalar.dtype)


def _program(
    definition: ProgramDefinition,
    name: str,
    params: list[ir.Param],
    output_types: Sequence[ir.Type],
    results: tuple[ir.Expr, ...],
    loc: ir.SourceLocation | None,
) -> ir.ProgramIR:
    bounds = definition.output_bounds
    if bounds is not None and len(bounds) not in {1, len(output_types)}:
        raise DSLTypeError.at(
            loc,
            f"the call of {name!r} gives {len(bounds)} domain(s) for {len(output_types)} "
            "output(s); give one domain per output, nested like out=, or one for all"
        )
    outputs = []
    for index, output_type in enumerate(output_types):
        out_name = f"__out{index}"
        params.append(ir.Param(out_name, output_type))
        own = None if bounds is None else bounds[index if len(bounds) > 1 else 0]
        slices = _slices(definition, name, output_type, own, loc)
        outputs.append(ir.OutputTarget(out_name, slices))
    stencil = ir.Stencil((), results, tuple(outputs), name, loc=loc)
    # Located arrays' origins (ADR 0026): the array_origins pass reads them, as a program's.
    return ir.ProgramIR(name, tuple(params), (stencil,), loc=loc, origins=definition.located)


def _slices(
    definition: ProgramDefinition,
    name: str,
    output_type: ir.Type,
    bounds: tuple[tuple[str, int, int], ...] | None,
    loc: ir.SourceLocation | None,
) -> tuple[tuple[int | Bound | None, int | Bound | None], ...]:
    """The slices of one output: the positional ``output_slices``, then ``bounds`` by
    dimension name (errors located at the operator's definition, ``loc``)."""
    assert isinstance(output_type, FieldType)
    rank = len(output_type.dims)
    given = definition.output_slices or ()
    if len(given) > rank:
        raise DSLTypeError.at(
            loc,
            f"domain= of {name!r} has {len(given)} slice(s) but its output has "
            f"{rank} dimension(s)"
        )
    slices: list[tuple[int | Bound | None, int | Bound | None]] = [
        *given,
        *((None, None),) * (rank - len(given)),
    ]
    for dim, lo, hi in bounds or ():
        if dim not in output_type.dim_names:
            raise DSLTypeError.at(
                loc,
                f"domain= of the call of {name!r} bounds {dim}, but its output "
                f"{output_type} has dimensions ({', '.join(output_type.dim_names)}); "
                "bound only the output's dimensions"
            )
        # Absolute bounds, checked inside the output as a program's domain= is.
        slices[output_type.dim_names.index(dim)] = (Bound(lo), Bound(hi))
    return tuple(slices)
