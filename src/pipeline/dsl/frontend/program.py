"""Programs -> untyped IR: a sequence of stencils, each a call of a field operator or scan
operator with its output fields (``out=``) and domain (slices, ``domain=``)."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from pipeline.dsl.errors import DSLSyntaxError, DSLTypeError
from pipeline.dsl.frontend.annotations import evaluated_annotations, parameter_types
from pipeline.dsl.frontend.calls import call_arguments
from pipeline.dsl.frontend.direct_calls import direct_call_program
from pipeline.dsl.frontend.expressions import ExpressionParser
from pipeline.dsl.frontend.indices import bound
from pipeline.dsl.frontend.names import is_field_operator, is_scan_operator
from pipeline.dsl.frontend.operators import body_parser, parse_field_operator, parse_scan_operator
from pipeline.dsl.frontend.program_tuples import ProgramTuples, resolved_leaves
from pipeline.dsl.frontend.source import FunctionSource, function_source
from pipeline.dsl.frontend.statements import without_docstring
from pipeline.dsl.frontend.tuples import (
    Names,
    as_tuple_shape,
    describe_shape,
    flat_items,
    shape,
)
from pipeline.dsl.ir.nodes import (
    Expr,
    FieldOperatorIR,
    Literal,
    OperatorCall,
    OutputTarget,
    Param,
    ProgramIR,
    Ref,
    Scan,
    ScanOperatorIR,
    Stencil,
    Type,
    UnaryOp,
)
from pipeline.dsl.regions import Bound
from pipeline.dsl.stages import ProgramDefinition
from pipeline.dsl.types import FieldType, ScalarType

__all__ = ["parse_program"]


def parse_program(definition: ProgramDefinition) -> ProgramIR:
    """Parse a program (or a field operator called directly) into untyped IR.

    A field operator or scan operator called directly becomes a program of one stencil whose
    outputs are extra parameters named ``__out0``, ``__out1``, ... (``direct_calls``).

    Raises:
        DSLError: (and subclasses) located in the user's source.
    """
    if definition.kind != "program":
        return direct_call_program(definition)
    function = definition.function
    source = function_source(function)
    tuples: dict[str, Names] = {}
    params = parameter_types(function, source, tuples=tuples, by_path=True)
    by_name = {p.name: p.type for p in params}
    if len(by_name) < len(params):
        clash = next(p.name for p in params if [q.name for q in params].count(p.name) > 1)
        raise source.error(
            DSLTypeError,
            f"the parameter {clash!r} has the name of a tuple parameter's leaf (a leaf "
            "t[1][0] is named t__1__0); rename it",
            source.function_def,
        )
    constants = _bound_constants(definition, source, params)
    params = tuple(p for p in params if p.name not in constants)
    by_name = {p.name: p.type for p in params}
    parser = body_parser(definition, source, by_name)
    # A bound parameter reads as its value wherever a constant goes (slices, domains).
    parser.names.captured.update({name: c.value for name, c in constants.items()})
    program_tuples = ProgramTuples(source, tuples, parser.names.resolve_constant)
    stencils = []
    for statement in without_docstring(source.function_def.body):
        if isinstance(statement, ast.Pass):
            continue
        if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
            raise source.error(
                DSLSyntaxError,
                "a program body is a sequence of field operator calls like "
                "op(a, b, out=out[1:-1, 1:-1, :])",
                statement,
            )
        stencils.append(
            _parse_stencil_call(statement.value, parser, by_name, program_tuples, constants)
        )
    if not stencils:
        raise source.error(
            DSLSyntaxError,
            f"program {function.__name__!r} calls no field operator",
            source.function_def,
        )
    if definition.static_shapes:
        stencils = [_with_static_domains(s, definition.static_shapes) for s in stencils]
    return ProgramIR(
        function.__name__,
        params,
        tuple(stencils),
        program_tuples.ir_tuples(),
        loc=source.location(source.function_def),
        origins=definition.located,
    )


def _bound_constants(
    definition: ProgramDefinition, source: FunctionSource, params: tuple[Param, ...]
) -> dict[str, Literal]:
    """The program's bound parameters (``Program.with_bound_args``) as constants of their
    dtypes.

    Raises:
        DSLTypeError: a bound parameter that is not a scalar, or a value that is not a number
            of its dtype (located at the program's definition).
    """
    types = {p.name: p.type for p in params}
    constants = {}
    for name, value in definition.bound.items():
        declared = types.get(name)
        if not isinstance(declared, ScalarType):
            raise source.error(
                DSLTypeError,
                f"with_bound_args({name}=...) binds a parameter that is "
                f"{'a field' if isinstance(declared, FieldType) else 'not a scalar'}; only "
                "scalar parameters can be bound",
                source.function_def,
            )
        number = _bound_number(declared.dtype, value)
        if number is None:
            raise source.error(
                DSLTypeError,
                f"{name}={value!r} (bound, or a static parameter's value): "
                f"{_a(type(value).__name__)} does not fit "
                f"parameter {name!r} of dtype {declared.dtype}; give "
                f"{_KIND_NAMES[declared.dtype.kind]} that fits it",
                source.function_def,
            )
        constants[name] = Literal(number, type=declared, loc=source.location(source.function_def))
    return constants


_KIND_NAMES = {"b": "a bool", "i": "an int", "u": "an int", "f": "a number"}


def _a(noun: str) -> str:
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


def _bound_number(dtype: np.dtype[Any], value: object) -> bool | int | float | None:
    """``value`` as a number of ``dtype``, or None where it is none (a bool for a number, a
    float for an int, an int out of the dtype's range: what the argument checks refuse)."""
    if isinstance(value, np.generic):
        value = value.item()
    if dtype.kind == "b":
        return value if isinstance(value, bool) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if dtype.kind in "iu":
        if not isinstance(value, int):
            return None
        info = np.iinfo(dtype)
        return value if info.min <= value <= info.max else None
    return float(dtype.type(value))


def _parse_stencil_call(
    node: ast.Call,
    parser: ExpressionParser,
    params: Mapping[str, Type],
    tuples: ProgramTuples,
    constants: Mapping[str, Literal],
) -> Stencil:
    """One call of a program: the stencil computing the callee into its ``out=`` fields."""
    source = parser.source
    callee = parser.names.callee(node.func)
    if not (is_field_operator(callee) or is_scan_operator(callee)):
        raise source.error(
            DSLTypeError,
            f"{ast.unparse(node.func)!r} is not a field operator; a program can only "
            "call field operators and scan operators",
            node.func,
        )
    operator: FieldOperatorIR | ScanOperatorIR
    if is_scan_operator(callee):
        operator = parse_scan_operator(callee.definition)  # type: ignore[attr-defined]
        result_count = len(operator.carry)
    else:
        operator = parse_field_operator(callee.definition)  # type: ignore[attr-defined]
        result_count = len(operator.result_types)
    declared = (
        {} if is_scan_operator(callee) else evaluated_annotations(callee.definition.function)  # type: ignore[attr-defined]
    )
    outputs = _outputs(
        node, operator.name, result_count, parser, params, tuples, declared.get("return")
    )
    args = _stencil_arguments(node, operator, parser, params, tuples, declared, constants)
    loc = source.location(node)
    results: tuple[Expr, ...]
    if isinstance(operator, ScanOperatorIR):
        results = tuple(Scan(operator, args, i, loc=loc) for i in range(result_count))
    else:
        results = (OperatorCall(operator, args, loc=loc),)
    return Stencil((), results, outputs, operator.name, loc=loc)


def _outputs(
    node: ast.Call,
    name: str,
    result_count: int,
    parser: ExpressionParser,
    params: Mapping[str, Type],
    tuples: ProgramTuples,
    returns: object = None,
) -> tuple[OutputTarget, ...]:
    """The output targets of a call of the operator ``name``, from its ``out=`` and
    ``domain=`` keywords; ``out=`` nested as the operator's ``returns`` annotation (a field
    operator's; None for a scan operator's carry)."""
    source = parser.source
    keywords = {k.arg: k for k in node.keywords}
    if "out" not in keywords:
        raise source.error(
            DSLTypeError,
            f"the call of {name!r} needs out=..., e.g. out=out[1:-1, 1:-1, :]",
            node,
        )
    out_node = keywords["out"].value
    resolved = tuples.resolve(out_node)
    outputs = tuple(
        _output_target(item, parser, params, tuples) for item in resolved_leaves(resolved)
    )
    if len(outputs) != result_count:
        raise source.error(
            DSLTypeError,
            f"{name!r} returns {result_count} field(s) but out= gives {len(outputs)}",
            out_node,
        )
    nesting = as_tuple_shape(shape(returns))
    if returns is not None and as_tuple_shape(shape(resolved)) != nesting:
        raise source.error(
            DSLTypeError,
            f"{name!r} returns {describe_shape(nesting)} but out= is nested as "
            f"{describe_shape(as_tuple_shape(shape(resolved)))}; nest out= as the results are, "
            "as in Python's unpacking",
            out_node,
        )
    if "domain" not in keywords:
        return outputs
    domain_node = keywords["domain"].value
    if isinstance(domain_node, ast.Tuple):
        return _with_domains(outputs, domain_node, shape(resolved), parser, params, tuples)
    return _with_domain(outputs, domain_node, parser, params, tuples)


def _with_domains(
    outputs: tuple[OutputTarget, ...],
    node: ast.Tuple,
    out_nesting: object,
    parser: ExpressionParser,
    params: Mapping[str, Type],
    tuples: ProgramTuples,
) -> tuple[OutputTarget, ...]:
    """``outputs`` each restricted to its own domain of ``domain=(dom_x, (dom_y, dom_z))``,
    nested like ``out=`` (whose nesting is ``out_nesting``).

    Raises:
        DSLTypeError: the domains are nested otherwise than ``out=``.
    """
    if _plain(shape(node)) != _plain(out_nesting):
        raise parser.error(
            DSLTypeError,
            f"domain= gives one domain per output, nested like out=, which is "
            f"{describe_shape(_plain(out_nesting))}; this domain= is nested as "
            f"{describe_shape(shape(node))}",
            node,
        )
    return tuple(
        _with_domain((target,), item, parser, params, tuples)[0]
        for target, item in zip(outputs, flat_items(node), strict=True)
    )


def _plain(nesting: object) -> object:
    """``nesting`` with named collections as plain tuples: a domain per field of a
    collection is written as a tuple."""
    return tuple(_plain(item) for item in nesting) if isinstance(nesting, tuple) else nesting


def _stencil_arguments(
    node: ast.Call,
    operator: FieldOperatorIR | ScanOperatorIR,
    parser: ExpressionParser,
    params: Mapping[str, Type],
    tuples: ProgramTuples,
    declared: Mapping[str, object],
    constants: Mapping[str, Literal],
) -> tuple[Expr, ...]:
    """The arguments of a program's call of ``operator``: program parameters (a tuple
    argument's leaves one by one, nested as the operator's annotation in ``declared``) or
    constants (a bound parameter is its typed constant in ``constants``). A tuple argument
    is written as a tuple, or is a program's tuple parameter or an item of one (``t``,
    ``t[1]``)."""
    source = parser.source
    keyword_args = [k for k in node.keywords if k.arg not in {"out", "domain"}]
    signature = (
        operator.signature
        if isinstance(operator, FieldOperatorIR)
        else tuple((p.name, None) for p in operator.params)
    )
    names = [name for name, _ in signature]
    grouped = call_arguments(node, operator.name, names, keyword_args, source)
    arguments: list[ast.expr] = []
    for (name, parts), arg in zip(signature, grouped, strict=True):
        value = tuples.resolve(arg)
        if parts is None:
            if isinstance(value, tuple):
                raise source.error(
                    DSLTypeError,
                    f"argument {name!r} of {operator.name!r} is one field or scalar, but "
                    f"{ast.unparse(arg)!r} is a tuple; pass one of its items",
                    arg,
                )
            arguments.append(value)
            continue
        items = resolved_leaves(value)
        if not isinstance(value, tuple) or len(items) != len(parts):
            raise source.error(
                DSLTypeError,
                f"argument {name!r} of {operator.name!r} is a tuple of {len(parts)} field(s); "
                "pass a tuple of program parameters, like (a, b), or a tuple parameter",
                arg,
            )
        nesting = shape(declared.get(name))
        if name in declared and shape(value) != nesting:
            raise source.error(
                DSLTypeError,
                f"argument {name!r} of {operator.name!r} is nested as "
                f"{describe_shape(nesting)}, but this tuple is nested as "
                f"{describe_shape(shape(value))}; nest it alike",
                arg,
            )
        arguments += items
    return tuple(
        constants[arg.id]
        if isinstance(arg, ast.Name) and arg.id in constants
        else _stencil_argument(arg, parser, params)
        for arg in arguments
    )


def _stencil_argument(arg: ast.expr, parser: ExpressionParser, params: Mapping[str, Type]) -> Expr:
    if isinstance(arg, ast.Name) and arg.id in params:
        return Ref(arg.id, loc=parser.source.location(arg))
    value = parser.expr(arg)
    if not isinstance(value, Literal):
        raise parser.error(
            DSLSyntaxError,
            "program arguments to a field operator must be program parameters or "
            "constants; compute expressions inside a field operator",
            arg,
        )
    return value


def _output_target(
    node: ast.expr, parser: ExpressionParser, params: Mapping[str, Type], tuples: ProgramTuples
) -> OutputTarget:
    source = parser.source
    base, slice_node = (node.value, node.slice) if isinstance(node, ast.Subscript) else (node, None)
    if not (isinstance(base, ast.Name) and base.id in params):
        raise source.error(DSLSyntaxError, "out= must name a field parameter of the program", node)
    target_type = params[base.id]
    shown = tuples.shown(base.id)
    if not isinstance(target_type, FieldType):
        raise source.error(DSLTypeError, f"out= names {shown!r}, which is a scalar", node)
    rank = len(target_type.dims)
    if slice_node is None:
        return OutputTarget(base.id, ((None, None),) * rank, loc=source.location(node))
    items = slice_node.elts if isinstance(slice_node, ast.Tuple) else [slice_node]
    if len(items) > rank:
        raise source.error(
            DSLTypeError, f"{shown!r} has {rank} dimension(s) but is sliced in {len(items)}", node
        )
    slices = []
    for item in items:
        if not isinstance(item, ast.Slice) or item.step is not None:
            raise source.error(
                DSLSyntaxError, "the output domain is given with slices like out[1:-1, 2:, :]", item
            )
        slices.append((_slice_bound(item.lower, parser), _slice_bound(item.upper, parser)))
    slices.extend([(None, None)] * (rank - len(slices)))
    return OutputTarget(base.id, tuple(slices), loc=source.location(node))


def _slice_bound(node: ast.expr | None, parser: ExpressionParser) -> int | None:
    if node is None:
        return None
    value = parser.expr(node)
    if isinstance(value, UnaryOp) and value.op == "-" and isinstance(value.operand, Literal):
        value = Literal(-value.operand.value)
    if isinstance(value, Literal) and type(value.value) is int:
        return value.value
    raise parser.error(DSLSyntaxError, "slice bounds must be integer constants", node)


def _with_domain(
    outputs: tuple[OutputTarget, ...],
    node: ast.expr,
    parser: ExpressionParser,
    params: Mapping[str, Type],
    tuples: ProgramTuples,
) -> tuple[OutputTarget, ...]:
    """``outputs`` restricted to ``domain={I: (lo, hi), ...}``: absolute indices of the
    outputs, integers or integer scalar parameters (plus or minus an integer)."""
    bounds = _domain_bounds(node, parser)
    result = []
    for target in outputs:
        target_type = params[target.name]
        assert isinstance(target_type, FieldType)
        missing = sorted(set(bounds) - set(target_type.dim_names))
        if missing:
            raise parser.error(
                DSLTypeError,
                f"domain= bounds {', '.join(missing)}, but out field "
                f"{tuples.shown(target.name)!r} has "
                f"dimensions ({', '.join(target_type.dim_names)})",
                node,
            )
        slices = list(target.slices)
        for axis, name in enumerate(target_type.dim_names):
            if name not in bounds:
                continue
            if slices[axis] != (None, None):
                raise parser.error(
                    DSLSyntaxError,
                    f"{tuples.shown(target.name)!r} is sliced along {name} and domain= "
                    f"bounds {name} too; "
                    "give the output domain once",
                    node,
                )
            slices[axis] = bounds[name]
        result.append(attrs.evolve(target, slices=tuple(slices)))
    return tuple(result)


def _domain_bounds(node: ast.expr, parser: ExpressionParser) -> dict[str, tuple[Bound, Bound]]:
    """The (start, stop) of each dimension ``domain={I: (lo, hi), ...}`` bounds."""
    if not isinstance(node, ast.Dict):
        raise parser.error(DSLSyntaxError, "domain= is a dict like {I: (0, n), K: (1, 10)}", node)
    bounds: dict[str, tuple[Bound, Bound]] = {}
    for key, value in zip(node.keys, node.values, strict=True):
        dim = parser.names.dimension(key) if key is not None else None
        if dim is None:
            raise parser.error(
                DSLSyntaxError, "the keys of domain= are dimensions, like {I: (0, n)}", key or node
            )
        if not (isinstance(value, ast.Tuple) and len(value.elts) == 2):
            raise parser.error(
                DSLSyntaxError, f"give the domain along {dim} as (start, stop)", value
            )
        lo, hi = (bound(parser.names, e) for e in value.elts)
        for end, element in ((lo, value.elts[0]), (hi, value.elts[1])):
            if end.param is None and end.offset < 0:
                raise parser.error(
                    DSLTypeError,
                    f"domain= takes absolute indices; {end.offset} along {dim} is before the "
                    "first point",
                    element,
                )
        if lo.param is None and hi.param is None and lo.offset > hi.offset:
            raise parser.error(
                DSLTypeError, f"the domain along {dim} ends ({hi}) before it starts ({lo})", value
            )
        bounds[dim.name] = (lo, hi)
    return bounds


def _with_static_domains(stencil: Stencil, shapes: Mapping[str, tuple[int, ...]]) -> Stencil:
    """``stencil`` with each output's domain a constant, resolved against the output's
    static shape (``@program(static_domains=True)``): a slice ``out[1:-1]`` of a field of
    length 10 becomes the absolute bounds ``(1, 9)``, as ``domain={I: (1, 9)}`` would give;
    the translations emit these as constants and their domain checks refuse an output
    shorter than them. A bound of a scalar parameter stays as it is."""
    return attrs.evolve(
        stencil,
        outputs=tuple(
            attrs.evolve(target, slices=_static_slices(target.slices, shapes[target.name]))
            if target.name in shapes
            else target
            for target in stencil.outputs
        ),
    )


def _static_slices(
    slices: tuple[tuple[int | Bound | None, int | Bound | None], ...], shape: tuple[int, ...]
) -> tuple[tuple[int | Bound | None, int | Bound | None], ...]:
    fixed: list[tuple[int | Bound | None, int | Bound | None]] = []
    for (start, stop), length in zip(slices, shape, strict=True):
        if isinstance(start, Bound) or isinstance(stop, Bound):
            # domain=: absolute already; a missing end is the output's, now a constant.
            fixed.append(
                (Bound(0) if start is None else start, Bound(length) if stop is None else stop)
            )
            continue
        low, high, _ = slice(start, stop).indices(length)
        fixed.append((Bound(low), Bound(max(low, high))))
    return tuple(fixed)

