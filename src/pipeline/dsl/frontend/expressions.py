"""Python expressions of a DSL body -> untyped IR expressions.

Shifts become ``Ref`` offsets (a shift of a whole expression is pushed down to its reads),
and calls of other field operators become ``OperatorCall`` nodes for the inlining pass.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable

import attrs
import numpy as np

from pipeline.dsl.builtins import DType, builtin_name
from pipeline.dsl.errors import DSLError, DSLSyntaxError, DSLTypeError
from pipeline.dsl.frontend.annotations import evaluated_annotations, scan_carry_nesting
from pipeline.dsl.frontend.calls import builtin_call, call_arguments
from pipeline.dsl.frontend.choices import (
    ELEMENTWISE_BUILTINS,
    conditional,
    conversion,
    elementwise_builtin,
)
from pipeline.dsl.frontend.indices import offsets
from pipeline.dsl.frontend.names import MISSING, NameResolver, is_field_operator, is_scan_operator
from pipeline.dsl.frontend.shifts import shift_expr
from pipeline.dsl.frontend.symbols import BINARY_OPS, COMPARE_OPS, UNARY_OPS
from pipeline.dsl.frontend.tuples import (
    Names,
    Values,
    as_tuple_shape,
    describe_shape,
    leaves,
    like,
    name_leaves,
    nest,
    shape,
    tuple_index,
)
from pipeline.dsl.ir.nodes import (
    Assign,
    BinaryOp,
    Expr,
    FieldOperatorIR,
    Literal,
    OperatorCall,
    Ref,
    Scan,
    ScanOperatorIR,
    SourceLocation,
    UnaryOp,
)
from pipeline.dsl.passes.traversal import walk
from pipeline.dsl.stages import ProgramDefinition
from pipeline.dsl.types import Dimension, Named, Record, ScalarType, record_of

__all__ = ["ExpressionParser", "OperatorParsers", "not_a_tuple"]

@attrs.frozen
class OperatorParsers:
    """How a body's calls of other operators get those operators' IR (the operator parsers
    parse bodies with this module, so they are handed in rather than imported)."""

    field_operator: Callable[[ProgramDefinition], FieldOperatorIR]
    scan_operator: Callable[[ProgramDefinition], ScanOperatorIR]


class ExpressionParser:
    """Turns the expression ASTs of one DSL body into IR."""

    def __init__(
        self, names: NameResolver, operators: OperatorParsers, *, in_scan: bool = False
    ) -> None:
        self.names = names
        self.source = names.source
        self.scope = names.scope
        self.operators = operators
        # The statements parsed so far: a call of a field operator returning a tuple binds
        # its results to new locals here (the inliner unpacks such a call).
        self.body: list[Assign] = []
        # In a scan operator every value is per point: no `if` on them.
        self.in_scan = in_scan

    def error(self, cls: type[DSLError], message: str, node: ast.AST) -> DSLError:
        """An error of class ``cls`` located at ``node``."""
        return self.source.error(cls, message, node)

    def expr(self, node: ast.expr) -> Expr:
        """The IR of a single-valued expression.

        Raises:
            DSLSyntaxError: an expression the DSL does not support.
            DSLTypeError: a tuple where one value is needed, a non-number constant.
        """
        loc = self.source.location(node)
        match node:
            case ast.Constant(value=value):
                if isinstance(value, bool | int | float):
                    return Literal(value, loc=loc)
                raise self.error(DSLSyntaxError, f"literal {value!r} is not a number or bool", node)
            case ast.Name(id=name) if self.names.is_variable(name):
                return Ref(self.scope.current(name), loc=loc)
            case ast.Attribute(value=base) if self._holds_values(base):
                return self._single(node, self.structured(node))
            case ast.Name() | ast.Attribute():
                return self._constant(self.names.resolve_constant(node), node)
            case ast.UnaryOp() | ast.BinOp() | ast.Compare() | ast.BoolOp():
                return self._operation(node, loc)
            case ast.IfExp() if self.in_scan:
                raise self.error(
                    DSLSyntaxError,
                    "a scan operator's values are per point: choose with where(c, a, b)",
                    node,
                )
            case ast.IfExp():
                return self._single(node, self.structured(node))
            case ast.Subscript(slice=index) if tuple_index(index) is not None:
                return self._item(node)
            case ast.Subscript():
                raise self._subscript_error(node)
            case ast.Call():
                return self.call(node)
        raise self.error(
            DSLSyntaxError,
            f"{type(node).__name__} expressions are not supported in a field operator",
            node,
        )

    def _operation(self, node: ast.expr, loc: SourceLocation) -> Expr:
        """An arithmetic, comparison or logical operation."""
        match node:
            case ast.UnaryOp(op=ast.Not()) if self.in_scan:
                raise self.error(
                    DSLSyntaxError,
                    "a scan operator's values are per point (whole planes when run embedded), "
                    "so `not` is not supported in it; use ~ on a bool value",
                    node,
                )
            case ast.UnaryOp(op=ast.Not(), operand=operand):
                # Logical on a bool scalar (typing checks it and makes it ``~``): in the
                # embedded run Python's ``not`` is, while ``~`` of a Python bool is -2.
                return UnaryOp("not", self.expr(operand), loc=loc)
            case ast.UnaryOp(op=op, operand=operand):
                return UnaryOp(UNARY_OPS[type(op)], self.expr(operand), loc=loc)
            case ast.BinOp(op=op, left=left, right=right) if type(op) in BINARY_OPS:
                return BinaryOp(BINARY_OPS[type(op)], self.expr(left), self.expr(right), loc=loc)
            case ast.BinOp(op=op):
                raise self.error(
                    DSLSyntaxError, f"operator {type(op).__name__} is not supported", node
                )
            case ast.Compare(left=left, ops=[op], comparators=[right]) if type(op) in COMPARE_OPS:
                return BinaryOp(COMPARE_OPS[type(op)], self.expr(left), self.expr(right), loc=loc)
            case ast.Compare(ops=[op]):
                raise self.error(
                    DSLSyntaxError, f"comparison {type(op).__name__} is not supported", node
                )
            case ast.Compare():
                raise self.error(
                    DSLSyntaxError,
                    "chained comparisons are not supported; combine with & or |",
                    node,
                )
        raise self.error(
            DSLSyntaxError,
            "`and`/`or` are not supported on fields; use & and | (with parentheses)",
            node,
        )

    def _item(self, node: ast.Subscript) -> Expr:
        """``t[i]`` of a tuple, where a single value is needed."""
        return self._single(node, self.structured(node))

    def _single(self, node: ast.expr, item: Expr | Values) -> Expr:
        """``item``, the value of ``node``, where a single value is needed."""
        if isinstance(item, tuple):
            text = ast.unparse(node)
            raise self.error(
                DSLTypeError,
                f"{text!r} is a tuple of {len(item)} value(s), not a single value (as "
                f"in Python, an inner tuple stays a tuple); index it again ({text}[0]) "
                f"or unpack it (a, b = {text})",
                node,
            )
        return item

    def _subscript_error(self, node: ast.Subscript) -> DSLError:
        return self.error(
            DSLSyntaxError,
            "subscripts are not supported inside a field operator; read neighbours "
            "with shifts like f(I + 1), and choose the output domain with out=out[...] "
            "in the program",
            node,
        )

    def _constant(self, value: object, node: ast.expr) -> Expr:
        if isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating):
            number = value.item() if isinstance(value, np.generic) else value
            if isinstance(number, float) and not math.isfinite(number):
                raise self.error(DSLTypeError, f"constant {value!r} is not finite", node)
            return Literal(number, loc=self.source.location(node))
        what = type(value).__name__
        hint = ""
        if is_field_operator(value) or builtin_name(value) is not None:
            hint = "; call it"
        elif isinstance(value, Dimension):
            hint = "; dimensions are used in shifts, like f(I + 1)"
        raise self.error(
            DSLTypeError, f"{ast.unparse(node)!r} is a {what}, not a field or number{hint}", node
        )

    def call(self, node: ast.Call) -> Expr:
        """A call: a shift, a conversion, a DSL builtin, or a call of an operator.

        Raises:
            DSLTypeError: a call of something else, or with the wrong arguments.
            DSLSyntaxError: a call the DSL does not support where it stands.
        """
        callee = node.func
        if isinstance(callee, ast.Name) and self.names.is_variable(callee.id):
            return self._shifted_variable(node, callee)
        if isinstance(callee, ast.Attribute) and self._holds_values(callee.value):
            return self._shifted_expression(node)  # a collection's field, shifted: s.u(I + 1)
        value = self.names.callee(callee)
        if value is MISSING:
            return self._shifted_expression(node)
        if is_scan_operator(value):
            return self._scan_value(node, value)
        if is_field_operator(value):
            if self.in_scan:
                raise self.error(
                    DSLSyntaxError,
                    "a scan operator cannot call field operators; write the computation in it",
                    node,
                )
            return self._operator_call(node, value)
        if isinstance(value, DType):
            return self._single(node, conversion(node, value, self.names, self.structured))
        if node.keywords:
            raise self.error(
                DSLSyntaxError,
                "keyword arguments are only supported in calls of field operators",
                node.keywords[0],
            )
        name = builtin_name(value)
        if name in ELEMENTWISE_BUILTINS:
            assert name is not None
            return self._single(node, elementwise_builtin(node, name, self.names, self.structured))
        return builtin_call(node, value, self.names, self.expr)

    def _shifted_variable(self, node: ast.Call, callee: ast.Name) -> Expr:
        """``f(I + 1)`` of a parameter or local ``f``."""
        if isinstance(self.names.params.get(callee.id), ScalarType):
            raise self.error(DSLTypeError, f"{callee.id!r} is a scalar and cannot be shifted", node)
        local = Ref(self.scope.current(callee.id), loc=self.source.location(callee))
        return shift_expr(local, offsets(self.names, node))

    def _shifted_expression(self, node: ast.Call) -> Expr:
        """``(expression)(I + 1)``: every read inside the expression shifted."""
        shifted = self.expr(node.func)
        if any(isinstance(n, Scan) for n in walk(shifted)):
            raise self.error(
                DSLTypeError,
                "a scan's result is only read where it is computed, not shifted; write "
                "it to a field with out= in the program and read that field shifted",
                node,
            )
        return shift_expr(shifted, offsets(self.names, node))

    def _scan_value(self, node: ast.Call, value: object) -> Expr:
        """A call of a scan operator, where a single value is needed."""
        operator, args = self.scan_call(node, value)
        if len(operator.carry) > 1:
            raise self.error(
                DSLTypeError,
                f"{operator.name!r} returns a tuple of {len(operator.carry)} values; unpack "
                f"it (a, b = {operator.name}(...)) or index it ({operator.name}(...)[0])",
                node,
            )
        return Scan(operator, args, 0, loc=self.source.location(node))

    def _operator_call(self, node: ast.Call, value: object) -> Expr:
        """A call of the field operator ``value``: its arguments, tuples flattened."""
        called = self.operators.field_operator(value.definition)  # type: ignore[attr-defined]
        names = [name for name, _ in called.signature]
        arguments = call_arguments(node, called.name, names, node.keywords, self.source)
        declared = evaluated_annotations(value.function)  # type: ignore[attr-defined]
        flat: list[Expr] = []
        for (name, parts), argument in zip(called.signature, arguments, strict=True):
            if parts is None:
                flat.append(self.expr(argument))
                continue
            items = self.structured(argument)
            nesting = shape(declared[name])
            if not isinstance(items, tuple) or shape(items) != nesting:
                raise self.error(
                    DSLTypeError,
                    f"argument {name!r} of {called.name!r} is "
                    + (
                        f"a {describe_shape(nesting)}; pass a {nesting.record.name}"
                        if isinstance(nesting, Named)
                        else f"a tuple {describe_shape(nesting)}; pass a tuple of that form, "
                        "like (a, b)"
                    ),
                    argument,
                )
            flat += leaves(items)
        return OperatorCall(called, tuple(flat), loc=self.source.location(node))

    def structured(self, node: ast.expr) -> Expr | Values:
        """The value of ``node``: a tuple value for a tuple-valued expression (a tuple
        literal, a tuple name, a call returning several values, an item of a tuple that is
        itself a tuple), nested as in Python; the expression otherwise.

        Raises:
            DSLTypeError: an index past the end of a tuple.
        """
        loc = self.source.location(node)
        match node:
            case ast.Tuple(elts=elements):
                return tuple(self.structured(element) for element in elements)
            case ast.Name(id=name) if name in self.scope.tuples:
                self.scope.check_bound(name, name_leaves(self.scope.tuples[name]), node)
                return self._reads(self.scope.tuples[name], loc)
            case ast.Subscript(value=base, slice=index_node) if (
                tuple_index(index_node) is not None
            ):
                return self._tuple_item(node, self.structured(base), tuple_index(index_node))
            case ast.Attribute(value=base, attr=field) if self._holds_values(base):
                return self._field(node, self.structured(base), field)
            case ast.IfExp() if not self.in_scan:
                return conditional(node, self.names, self.expr, self.structured)
            case ast.Call(func=ast.Name() | ast.Attribute() as callee) if not (
                isinstance(callee, ast.Attribute) and self._holds_values(callee.value)
            ):
                value = self.names.resolve_constant(callee)
                record = record_of(value)
                if record is not None:
                    return self._collection(node, record)
                if isinstance(value, DType):
                    return conversion(node, value, self.names, self.structured)
                builtin = builtin_name(value)
                if builtin in ELEMENTWISE_BUILTINS and not node.keywords:
                    assert builtin is not None
                    return elementwise_builtin(node, builtin, self.names, self.structured)
                results = self._tuple_results(node, value, loc)
                if results is not None:
                    return results
        return self.expr(node)

    def _tuple_item(
        self, node: ast.Subscript, items: Expr | Values, index: int | None
    ) -> Expr | Values:
        if not isinstance(items, tuple):
            raise self._subscript_error(node)
        if isinstance(items, Named) and not items.record.is_tuple:
            raise self.error(DSLTypeError, not_a_tuple(items, ast.unparse(node.value)), node)
        assert index is not None
        if not -len(items) <= index < len(items):
            raise self.error(
                DSLTypeError,
                f"index {index} of a tuple of {len(items)} value(s); an inner tuple "
                "counts as one value, as in Python",
                node,
            )
        return items[index]

    def _holds_values(self, node: ast.expr) -> bool:
        """Whether ``node`` is an expression of values (a local, a call, an item or field of
        one), not a chain of module attributes like ``math.pi``."""
        if isinstance(node, ast.Name):
            return self.names.is_variable(node.id) or node.id in self.scope.tuples
        if isinstance(node, ast.Call):
            return True
        if isinstance(node, ast.Subscript | ast.Attribute):
            return self._holds_values(node.value)
        return False

    def _field(self, node: ast.Attribute, items: Expr | Values, field: str) -> Expr | Values:
        """``s.u`` of a named collection ``s``."""
        if not isinstance(items, tuple):
            raise self.error(
                DSLSyntaxError,
                f"attribute access on fields is not supported (.{field}); fields have no "
                "attributes inside a field operator (a dataclass or NamedTuple of fields has "
                "its fields as attributes)",
                node,
            )
        if not isinstance(items, Named):
            raise self.error(
                DSLTypeError,
                f"{ast.unparse(node.value)!r} is a tuple: it has no attribute {field!r} (only "
                "a dataclass or NamedTuple of fields has its fields as attributes)",
                node,
            )
        if field not in items.record.fields:
            raise self.error(
                DSLTypeError,
                f"{items.record.name!r} has no field {field!r}; its fields are "
                f"{', '.join(items.record.fields)}",
                node,
            )
        item: Expr | Values = items[items.position(field)]
        return item

    def _collection(self, node: ast.Call, record: Record) -> Values:
        """``State(u=a, v=b)`` or ``State(a, b)``: a named collection of the values given."""
        fields = list(record.fields)
        arguments = call_arguments(node, record.name, fields, node.keywords, self.source)
        return Named([self.structured(a) for a in arguments], record)

    def _tuple_results(
        self, node: ast.Call, value: object, loc: SourceLocation
    ) -> Values | None:
        """The results of a call of an operator returning several values; else None."""
        if is_scan_operator(value):
            operator, args = self.scan_call(node, value)
            count = len(operator.carry)
            nesting = scan_carry_nesting(value.definition.function)  # type: ignore[attr-defined]
            if count > 1 or isinstance(nesting, Named):
                scans = [Scan(operator, args, i, loc=loc) for i in range(count)]
                return nest(as_tuple_shape(nesting), scans)
        elif is_field_operator(value) and not self.in_scan:
            return self._tuple_call(node, value, loc)
        return None

    def _reads(self, names: Names, loc: SourceLocation | None) -> Values:
        return like(names, [
            self._reads(n, loc) if isinstance(n, tuple) else Ref(self.scope.current(n), loc=loc)
            for n in names
        ])

    def scan_call(self, node: ast.Call, value: object) -> tuple[ScanOperatorIR, tuple[Expr, ...]]:
        """The scan operator ``value`` called by ``node``, and its point arguments."""
        if self.in_scan:
            raise self.error(DSLSyntaxError, "a scan operator cannot call another scan", node)
        operator = self.operators.scan_operator(value.definition)  # type: ignore[attr-defined]
        names = [p.name for p in operator.params]
        arguments = call_arguments(node, operator.name, names, node.keywords, self.source)
        return operator, tuple(self.expr(a) for a in arguments)

    def _tuple_call(
        self, node: ast.Call, callee: object, loc: SourceLocation | None
    ) -> Values | None:
        """For a call of a field operator returning several fields: bind them to new locals
        in ``body`` (the inliner unpacks such a call) and return reads of them, nested
        like the operator's return annotation; else None."""
        operator = self.operators.field_operator(callee.definition)  # type: ignore[attr-defined]
        function = callee.definition.function  # type: ignore[attr-defined]
        declared = evaluated_annotations(function)["return"]
        if len(operator.result_types) < 2 and record_of(declared) is None:
            return None
        call = self.expr(node)
        number = self.scope.fresh()
        names = tuple(f"{operator.name}__r{number}_{i}" for i in range(len(operator.result_types)))
        targets = self.scope.bind(names)
        self.body.append(Assign(targets, call, loc=loc))
        return nest(as_tuple_shape(shape(declared)), [Ref(t, loc=loc) for t in targets])


def not_a_tuple(items: Named, written: str) -> str:
    """Why a dataclass value is not indexed or unpacked: Python would refuse it too."""
    return (
        f"{written!r} is a {items.record.name}, a dataclass: read its fields by name "
        f"({written}.{items.record.fields[0]}); only a NamedTuple is indexed and unpacked "
        "as a tuple"
    )
