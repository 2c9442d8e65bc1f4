"""Field operators and scan operators -> untyped IR (calls of other operators not inlined),
parsed once per definition."""

from __future__ import annotations

import weakref

from pipeline.dsl.errors import DSLSyntaxError, DSLTypeError
from pipeline.dsl.frontend.annotations import (
    carry_types,
    describe_dtypes,
    evaluated_annotations,
    parameter_types,
    result_types,
    scan_carry_nesting,
    scan_init,
    scan_return_types,
)
from pipeline.dsl.frontend.expressions import ExpressionParser, OperatorParsers
from pipeline.dsl.frontend.names import NameResolver
from pipeline.dsl.frontend.source import FunctionSource, function_source
from pipeline.dsl.frontend.statements import parse_block, without_docstring
from pipeline.dsl.frontend.tuples import (
    Names,
    as_tuple_shape,
    describe_shape,
    leaves,
    like,
    name_leaves,
    shape,
)
from pipeline.dsl.ir.nodes import FieldOperatorIR, Param, ScanOperatorIR, Type
from pipeline.dsl.stages import ProgramDefinition
from pipeline.dsl.types import Named, ScalarType

__all__ = [
    "OPERATORS",
    "body_parser",
    "clear_caches",
    "parse_field_operator",
    "parse_scan_operator",
]

# Parsed operators by definition (identity); an entry goes when its definition is collected.
_OPERATOR_CACHE: weakref.WeakKeyDictionary[ProgramDefinition, FieldOperatorIR] = (
    weakref.WeakKeyDictionary()
)
_SCAN_CACHE: weakref.WeakKeyDictionary[ProgramDefinition, ScanOperatorIR] = (
    weakref.WeakKeyDictionary()
)


def clear_caches() -> None:
    """Forget every parsed operator (for measuring cold parses)."""
    _OPERATOR_CACHE.clear()
    _SCAN_CACHE.clear()


def parse_field_operator(definition: ProgramDefinition) -> FieldOperatorIR:
    """Parse a field operator's definition into untyped IR (calls of others not inlined).

    Raises:
        DSLError: (and subclasses) located in the user's source.
    """
    cached = _OPERATOR_CACHE.get(definition)
    if cached is not None:
        return cached
    function = definition.function
    source = function_source(function)
    tuples: dict[str, Names] = {}
    params = parameter_types(function, source, tuples=tuples)
    declared_types = result_types(function, source)
    parser = body_parser(definition, source, {p.name: p.type for p in params})
    parser.scope.tuples.update(tuples)
    statements = without_docstring(source.function_def.body)
    results = parse_block(statements, parser, parser.body)
    if results is None:
        raise source.error(
            DSLSyntaxError,
            f"field operator {function.__name__!r} must end with a return statement",
            source.function_def,
        )
    values = leaves(results)
    if len(values) != len(declared_types):
        raise source.error(
            DSLTypeError,
            f"{function.__name__!r} returns {len(values)} value(s) but its annotation declares "
            f"{len(declared_types)}",
            statements[-1],
        )
    # A caller indexes or unpacks the result by its annotation: the nesting must agree.
    declared = as_tuple_shape(shape(evaluated_annotations(function)["return"]))
    if shape(results) != declared:
        raise source.error(
            DSLTypeError,
            f"{function.__name__!r} returns {describe_shape(shape(results))} but its "
            f"annotation declares {describe_shape(declared)}; nest the returned tuple like "
            "the annotation",
            statements[-1],
        )
    operator = FieldOperatorIR(
        function.__name__,
        params,
        tuple(parser.body),
        values,
        declared_types,
        tuple((name, name_leaves(names)) for name, names in tuples.items()),
        loc=source.location(source.function_def),
    )
    _OPERATOR_CACHE[definition] = operator
    return operator


def parse_scan_operator(definition: ProgramDefinition) -> ScanOperatorIR:
    """Parse a scan operator's definition into untyped IR.

    Raises:
        DSLTypeError: a parameter that is not a dtype, a return annotation or ``init`` that
            does not match the carry.
    """
    cached = _SCAN_CACHE.get(definition)
    if cached is not None:
        return cached
    settings = definition.scan
    assert settings is not None
    function = definition.function
    source = function_source(function)
    where = source.function_def
    if not where.args.args:
        raise source.error(
            DSLTypeError, f"scan operator {function.__name__!r} needs a carry parameter", where
        )
    carry_arg = where.args.args[0]
    declared = evaluated_annotations(function)
    carry_dtypes = carry_types(carry_arg, declared.get(carry_arg.arg), source)
    point_params = _point_parameters(definition, source)
    returned = scan_return_types(declared.get("return"))
    if returned != tuple(t.dtype for t in carry_dtypes):
        raise source.error(
            DSLTypeError,
            f"scan operator {function.__name__!r} returns "
            f"{describe_dtypes(returned)} but its carry is {describe_dtypes(carry_dtypes)}; "
            "annotate the return like the carry",
            source.function_def.returns or where,
        )
    init = scan_init(settings.init, carry_dtypes, function.__name__, source)
    nesting = _carry_nesting(definition, carry_arg.arg, source)
    tuple_carry = isinstance(settings.init, tuple)
    carry = (
        tuple(Param(f"{carry_arg.arg}__{i}", t) for i, t in enumerate(carry_dtypes))
        if tuple_carry
        else (Param(carry_arg.arg, carry_dtypes[0]),)
    )
    env = {p.name: p.type for p in (*carry, *point_params)}
    parser = body_parser(definition, source, env, in_scan=True)
    if tuple_carry:
        parser.scope.tuples[carry_arg.arg] = like(nesting, [p.name for p in carry])
    new_carry = parse_block(without_docstring(where.body), parser, parser.body)
    if new_carry is None:
        raise source.error(
            DSLSyntaxError, f"scan operator {function.__name__!r} must return the new carry", where
        )
    results = leaves(new_carry)
    if len(results) != len(carry):
        raise source.error(
            DSLTypeError,
            f"{function.__name__!r} returns {len(results)} value(s) but its carry has {len(carry)}",
            where.body[-1],
        )
    if isinstance(nesting, Named) and shape(new_carry) != nesting:
        raise source.error(
            DSLTypeError,
            f"{function.__name__!r} returns {describe_shape(shape(new_carry))} but its carry is "
            f"{describe_shape(nesting)}; return {nesting.record.name}(...)",
            where.body[-1],
        )
    operator = ScanOperatorIR(
        function.__name__,
        settings.axis,
        settings.forward,
        init,
        carry,
        tuple(point_params),
        tuple(parser.body),
        results,
        loc=source.location(where),
    )
    _SCAN_CACHE[definition] = operator
    return operator


def _carry_nesting(definition: ProgramDefinition, name: str, source: FunctionSource) -> object:
    """The carry's nesting; a named collection only with an ``init`` of that class.

    Raises:
        DSLTypeError: a carry annotated with a named collection and an ``init`` of another
            kind, or the other way round.
    """
    nesting = scan_carry_nesting(definition.function)
    init = definition.scan.init if definition.scan is not None else None
    annotated = nesting.record if isinstance(nesting, Named) else None
    given = init.record if isinstance(init, Named) else None
    if annotated != given:
        raise source.error(
            DSLTypeError,
            f"the carry {name!r} of scan operator {definition.function.__name__!r} is "
            f"annotated {annotated.name if annotated else 'without a named collection'} but "
            f"init is {given.name + '(...)' if given else repr(init)}; give init an instance "
            "of the carry's class",
            source.function_def,
        )
    return nesting


def _point_parameters(definition: ProgramDefinition, source: FunctionSource) -> tuple[Param, ...]:
    """A scan operator's point values, typed as any DSL parameter is (the carry set aside).

    Raises:
        DSLTypeError: one that is not a dtype.
    """
    point_params = parameter_types(definition.function, source, first=1)
    point_args = source.function_def.args.args[1:]
    for param, node in zip(point_params, point_args, strict=True):
        if not isinstance(param.type, ScalarType):
            raise source.error(
                DSLTypeError,
                f"parameter {param.name!r} of a scan operator is a value at one point: "
                "annotate it with a dtype like float64 (the call passes fields)",
                node,
            )
    return point_params


# The operator parsers a body's calls of other operators go through.
OPERATORS = OperatorParsers(parse_field_operator, parse_scan_operator)


def body_parser(
    definition: ProgramDefinition,
    source: FunctionSource,
    params: dict[str, Type],
    *,
    in_scan: bool = False,
) -> ExpressionParser:
    """A parser of the body of ``definition``'s function, whose parameters are ``params``.

    A scan operator's body (``in_scan``) is not inlined, and its translations read each
    local as assigned once: a name bound again binds a new local.
    """
    names = NameResolver.of(definition.function, source, params, single_assignment=in_scan)
    return ExpressionParser(names, OPERATORS, in_scan=in_scan)
