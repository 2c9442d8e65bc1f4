"""What a DSL function's annotations (and a scan's ``init``) declare: typed parameters,
result types, carry dtypes.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from pipeline.dsl.errors import DSLNameError, DSLSyntaxError, DSLTypeError
from pipeline.dsl.frontend.source import FunctionSource, captured_values
from pipeline.dsl.frontend.tuples import (
    Names,
    component_names,
    is_tuple_type,
    name_leaves,
    path_names,
    record_types,
    shape,
)
from pipeline.dsl.ir.nodes import Param, Type
from pipeline.dsl.types import FieldType, ScalarType, as_dtype, record_of

__all__ = [
    "carry_types",
    "describe_dtypes",
    "evaluated_annotations",
    "parameter_nesting",
    "parameter_types",
    "result_types",
    "scan_carry_nesting",
    "scan_init",
    "scan_return_types",
]


def parameter_types(
    function: Callable[..., Any],
    source: FunctionSource,
    *,
    first: int = 0,
    tuples: dict[str, Names] | None = None,
    by_path: bool = False,
) -> tuple[Param, ...]:
    """The typed parameters of a DSL function from the ``first`` on, from its annotations.

    With ``tuples`` (a field operator's or a program's), a ``tuple[...]`` annotation is one
    parameter per leaf, named ``<name>__<i>`` (leaves numbered in order), or ``by_path``
    (a program's) ``<name>__<i>__<j>`` for ``name[i][j]``; ``tuples`` gets the names, nested
    like the annotation.

    Raises:
        DSLTypeError: a parameter without annotation, or with one that is not a field type
            or DSL dtype; ``*args``/``**kwargs``/defaults.
    """
    arguments = source.function_def.args
    if arguments.vararg or arguments.kwarg or arguments.posonlyargs or arguments.kwonlyargs:
        raise source.error(
            DSLSyntaxError,
            "DSL functions take plain positional parameters only",
            arguments.vararg or arguments.kwarg or source.function_def,
        )
    if arguments.defaults:
        raise source.error(
            DSLSyntaxError, "DSL parameters cannot have default values", arguments.defaults[0]
        )
    declared = evaluated_annotations(function)
    params = []
    for arg in arguments.args[first:]:
        if arg.arg not in declared:
            raise source.error(
                DSLTypeError,
                f"parameter {arg.arg!r} has no type annotation; annotate it with a field "
                "type like Field[[I, J, K], float64] or a dtype like float64",
                arg,
            )
        annotation = declared[arg.arg]
        node = arg.annotation or arg
        _check_collections(annotation, source, node)
        if not is_tuple_type(annotation):
            params.append(Param(arg.arg, _as_type(annotation, source, node)))
            continue
        if tuples is None:
            raise source.error(
                DSLTypeError,
                f"parameter {arg.arg!r} is a tuple: a scan operator's point values are "
                "scalars; pass the tuple's items one by one",
                node,
            )
        naming = path_names if by_path else component_names
        names = naming(arg.arg, shape(annotation))
        tuples[arg.arg] = names
        params += [
            Param(n, _as_type(t, source, node))
            for n, t in zip(name_leaves(names), _flatten_type(annotation), strict=True)
        ]
    return tuple(params)


def parameter_nesting(function: Callable[..., Any]) -> tuple[tuple[str, object], ...]:
    """Each parameter of ``function`` with the nesting of its annotation (``shape``: None
    for a field or scalar, a tuple of the items' nestings for a ``tuple[...]``), in order.

    What a program's call flattens its arguments by, read without the frontend; the
    frontend's IR nests its leaves (``ProgramIR.tuples``) alike.

    Raises:
        DSLNameError: a string annotation names something the namespace lacks.
    """
    code = function.__code__
    declared = evaluated_annotations(function)
    return tuple(
        (name, shape(declared.get(name))) for name in code.co_varnames[: code.co_argcount]
    )


def evaluated_annotations(function: Callable[..., Any]) -> dict[str, Any]:
    """``function``'s annotations, string ones evaluated in its namespace.

    Raises:
        DSLNameError: a string annotation names something the namespace lacks.
    """
    raw = dict(getattr(function, "__annotations__", {}))
    namespace = {**function.__globals__, **captured_values(function)}
    resolved = {}
    for name, value in raw.items():
        if not isinstance(value, str):
            resolved[name] = value
            continue
        try:
            resolved[name] = eval(value, namespace)  # the user's own annotation text
        except NameError as error:
            raise DSLNameError(
                f"the annotation {value!r} of {function.__name__!r} cannot be evaluated "
                f"({error}); with `from __future__ import annotations`, annotations are "
                "evaluated in the module's namespace, so define the types they name at module "
                "level (or drop the __future__ import)",
                filename=function.__code__.co_filename,
                line=function.__code__.co_firstlineno,
            ) from error
    return resolved


def _as_type(value: object, source: FunctionSource, node: ast.AST) -> Type:
    if isinstance(value, FieldType):
        return value
    dtype = as_dtype(value)
    if dtype is not None:
        return ScalarType(dtype)
    raise source.error(
        DSLTypeError,
        f"annotation {value!r} is neither a field type (Field[[I, J], float64]) nor a dtype",
        node,
    )


def _flatten_type(value: object) -> list[object]:
    """The leaves of a (nested) ``tuple[...]`` or named collection annotation, in order."""
    record = record_of(value)
    if record is not None:
        return [leaf for item in record_types(record) for leaf in _flatten_type(item)]
    if is_tuple_type(value):
        return [leaf for item in value.__args__ for leaf in _flatten_type(item)]  # type: ignore[attr-defined]
    return [value]


def _items(annotation: object) -> tuple[object, ...]:
    """The items of a flat ``tuple[...]`` annotation; anything else as a tuple of one."""
    if is_tuple_type(annotation) and record_of(annotation) is None:
        return annotation.__args__  # type: ignore[attr-defined, no-any-return]
    return (annotation,)


def _check_collections(annotation: object, source: FunctionSource, node: ast.AST) -> None:
    """Refuse a named collection in ``annotation`` (at any depth) whose field annotations
    cannot be read, are not field types, dtypes or tuples of them, or whose field names hold
    ``__`` (the separator of leaf names).

    Raises:
        DSLNameError: a field annotation names something the class's module lacks.
        DSLTypeError: any other such collection, naming the class and the field.
    """
    record = record_of(annotation)
    if record is None:
        for item in getattr(annotation, "__args__", ()) if is_tuple_type(annotation) else ():
            _check_collections(item, source, node)
        return
    try:
        types = record_types(record)
    except NameError as error:
        raise source.error(
            DSLNameError,
            f"the field annotations of {record.name!r} cannot be evaluated ({error}); define "
            "the types they name in the class's module",
            node,
        ) from error
    for field, item in zip(record.fields, types, strict=True):
        if "__" in field:
            raise source.error(
                DSLTypeError,
                f"field {field!r} of {record.name!r}: a collection's field names cannot hold "
                "'__' (it separates the leaves' names); rename it",
                node,
            )
        if is_tuple_type(item):
            _check_collections(item, source, node)
        elif not isinstance(item, FieldType) and as_dtype(item) is None:
            raise source.error(
                DSLTypeError,
                f"field {field!r} of {record.name!r} is annotated {item!r}: a collection "
                "passed to the DSL holds fields (Field[[I, J], float64]), scalars (float64) "
                "or tuples and collections of them",
                node,
            )


def result_types(function: Callable[..., Any], source: FunctionSource) -> tuple[FieldType, ...]:
    """The field types a field operator's return annotation declares, leaves in order.

    Raises:
        DSLTypeError: no return annotation, or a leaf that is not a field type.
    """
    declared = evaluated_annotations(function)
    node: ast.AST = source.function_def.returns or source.function_def
    if "return" not in declared:
        raise source.error(
            DSLTypeError,
            f"field operator {function.__name__!r} has no return annotation; add "
            "-> Field[[...], dtype] (or -> tuple[...] for several results)",
            node,
        )
    _check_collections(declared["return"], source, node)
    result = []
    for item in _flatten_type(declared["return"]):
        if not isinstance(item, FieldType):
            raise source.error(
                DSLTypeError,
                f"a field operator returns fields; {item!r} is not a field type",
                node,
            )
        result.append(item)
    return tuple(result)


def carry_types(
    arg: ast.arg, annotation: object, source: FunctionSource
) -> tuple[ScalarType, ...]:
    """The dtype of each carry component, from the carry's annotation.

    Raises:
        DSLTypeError: the annotation is neither a dtype nor a tuple of dtypes.
    """
    dtypes = [as_dtype(item) for item in _carry_items(annotation)]
    if annotation is None or any(d is None for d in dtypes):
        raise source.error(
            DSLTypeError,
            f"annotate the carry {arg.arg!r} of a scan operator with a dtype (float64), a "
            "tuple of dtypes (tuple[float64, float64]) or a dataclass or NamedTuple of dtypes",
            arg.annotation or arg,
        )
    return tuple(ScalarType(d) for d in dtypes if d is not None)


def scan_return_types(declared: object) -> tuple[np.dtype[Any], ...]:
    """The dtypes a scan operator's return annotation declares; () unless all are dtypes."""
    dtypes = tuple(as_dtype(item) for item in _carry_items(declared))
    return tuple(d for d in dtypes if d is not None) if all(d is not None for d in dtypes) else ()


def _carry_items(annotation: object) -> tuple[object, ...]:
    """The items of a carry's annotation: a flat tuple's, a named collection's fields'."""
    record = record_of(annotation)
    return record_types(record) if record is not None else _items(annotation)


def describe_dtypes(items: tuple[Any, ...]) -> str:
    """Dtypes (or typed things) as a message shows them: ``float64``, ``(float64, int32)``."""
    names = [str(getattr(item, "dtype", item)) for item in items]
    return names[0] if len(names) == 1 else f"({', '.join(names)})" if names else "no dtype"


def scan_init(
    init: object, carry: tuple[ScalarType, ...], name: str, source: FunctionSource
) -> tuple[bool | int | float, ...]:
    """``init`` as one number per carry component, each of its component's kind.

    Raises:
        DSLTypeError: a count or a kind that does not match the carry.
    """
    values = init if isinstance(init, tuple) else (init,)
    problem = None
    if len(values) != len(carry):
        problem = f"has {len(values)} value(s) for a carry of {len(carry)}"
    else:
        for value, carry_type in zip(values, carry, strict=True):
            if not _fits(value, carry_type.dtype.kind):
                problem = f"value {value!r} does not match the carry's {carry_type.dtype}"
                break
    if problem is not None:
        raise source.error(
            DSLTypeError,
            f"init of scan operator {name!r} {problem}; give init one "
            f"{'tuple of ' if len(carry) > 1 else ''}number(s) of the carry's dtype(s) "
            f"({describe_dtypes(carry)})",
            source.function_def,
        )
    return tuple(v.item() if isinstance(v, np.generic) else v for v in values)


def _fits(value: object, kind: str) -> bool:
    """Whether the number ``value`` is of the dtype kind ``kind`` (bool, integer, float)."""
    number = value.item() if isinstance(value, np.generic) else value
    if kind == "b":
        return isinstance(number, bool)
    if kind in "iu":
        return isinstance(number, int) and not isinstance(number, bool)
    return isinstance(number, float)


def scan_carry_nesting(function: Callable[..., Any]) -> object:
    """The nesting of a scan operator's carry as its annotation says (a ``Named`` for a
    named collection; None for a single value), as its callers receive its results."""
    parameters = list(inspect.signature(function).parameters)
    return shape(evaluated_annotations(function).get(parameters[0])) if parameters else None
