"""C text of an element's offset in a strided field, shared by the C and CUDA kernels.

Every C-like kernel names a field's data ``p_<name>``, its strides in elements
``s_<name>_<axis>`` and the point's index along a dimension ``x_<dim>``; a field known to be
contiguous in its last dimension is indexed there without a multiplication, which is what lets
a compiler vectorize (C) or coalesce (CUDA) the innermost loop.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from backends.clike.expressions import C_TYPES, ExpressionEmitter, Offsets, convert
from pipeline.dsl.ir.nodes import ProgramIR, Stencil
from pipeline.dsl.types import FieldType, ScalarType

__all__ = ["base_offset", "element_offset", "output_stores", "parameter_read"]


def element_offset(
    name: str,
    dims: Sequence[str],
    shift: Mapping[str, int],
    unit_stride: bool,
    based_on: Collection[str] = (),
) -> str:
    """The offset, in elements, of field ``name`` (over ``dims``) at the point moved by
    ``shift``; ``unit_stride``: the last dimension is contiguous. ``"0"`` for a 0-D field.

    The dimensions in ``based_on`` are already in ``o_<name>`` (``base_offset``): along them
    only the shift is added, a constant times a stride, so that a kernel computes the point's
    offset once per field rather than once per read."""
    terms = [f"o_{name}"] if any(d in based_on for d in dims) else []
    for axis, dim in enumerate(dims):
        unit = unit_stride and axis == len(dims) - 1
        step = shift.get(dim, 0)
        if dim in based_on:
            if step:
                terms.append(str(step) if unit else f"{step} * s_{name}_{axis}")
            continue
        position = f"(x_{dim} + {step})" if step else f"x_{dim}"
        terms.append(position if unit else f"{position} * s_{name}_{axis}")
    return " + ".join(terms) or "0"


def base_offset(name: str, dims: Sequence[str], unit_stride: bool, along: Collection[str]) -> str:
    """The C text of ``o_<name>``: the offset of the point in field ``name`` (over ``dims``)
    counting only the dimensions in ``along``, for ``element_offset``'s ``based_on``."""
    terms = []
    for axis, dim in enumerate(dims):
        if dim in along:
            unit = unit_stride and axis == len(dims) - 1
            terms.append(f"x_{dim}" if unit else f"x_{dim} * s_{name}_{axis}")
    return " + ".join(terms) or "0"


def parameter_read(
    program: ProgramIR,
    unit_stride: Mapping[str, bool],
    body: ExpressionEmitter,
    name: str,
    offsets: Offsets,
    based_on: Collection[str] = (),
) -> str:
    """The C text of parameter ``name`` read at the point moved by ``offsets``: a scalar's
    ``sc_<name>``, or the element of field ``p_<name>`` loaded into ``body`` (``based_on`` as
    in ``element_offset``)."""
    param = program.param(name)
    if isinstance(param.type, ScalarType):
        return f"sc_{name}"
    offset = element_offset(
        name, param.type.dim_names, dict(offsets), unit_stride.get(name, False), based_on
    )
    return body.load(C_TYPES[param.type.dtype], f"p_{name}[{offset}]")


def output_stores(
    program: ProgramIR,
    stencil: Stencil,
    unit_stride: Mapping[str, bool],
    body: ExpressionEmitter,
    based_on: Collection[str] = (),
) -> list[str]:
    """The C statements storing ``stencil``'s results at the point, each converted to its
    output's dtype (the values computed in ``body``); ``based_on`` as in ``element_offset``."""
    stores = []
    for target, result in zip(stencil.outputs, stencil.results, strict=True):
        param = program.param(target.name)
        assert isinstance(param.type, FieldType) and result.type is not None
        value = convert(body.value(result, ()), result.type.dtype, param.type.dtype)
        offset = element_offset(
            target.name, param.type.dim_names, {}, unit_stride.get(target.name, False), based_on
        )
        stores.append(f"p_{target.name}[{offset}] = {value};")
    return stores
