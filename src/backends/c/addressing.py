"""C text of an element's offset in a strided field, shared by the C and CUDA kernels.

Every C-like kernel names a field's data ``p_<name>``, its strides in elements
``s_<name>_<axis>`` and the point's index along a dimension ``x_<dim>``; a field known to be
contiguous in its last dimension is indexed there without a multiplication, which is what lets
a compiler vectorize (C) or coalesce (CUDA) the innermost loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from backends.c.expressions import ExpressionEmitter, convert
from pipeline.dsl.types import FieldType
from pipeline.ir.nodes import ProgramIR, Stencil

__all__ = ["element_offset", "output_stores"]


def element_offset(
    name: str, dims: Sequence[str], shift: Mapping[str, int], unit_stride: bool
) -> str:
    """The offset, in elements, of field ``name`` (over ``dims``) at the point moved by
    ``shift``; ``unit_stride``: the last dimension is contiguous. ``"0"`` for a 0-D field."""
    terms = []
    for axis, dim in enumerate(dims):
        position = f"(x_{dim} + {shift[dim]})" if shift.get(dim) else f"x_{dim}"
        last = axis == len(dims) - 1
        terms.append(position if last and unit_stride else f"{position} * s_{name}_{axis}")
    return " + ".join(terms) or "0"


def output_stores(
    program: ProgramIR,
    stencil: Stencil,
    unit_stride: Mapping[str, bool],
    body: ExpressionEmitter,
) -> list[str]:
    """The C statements storing ``stencil``'s results at the point, each converted to its
    output's dtype (the values computed in ``body``)."""
    stores = []
    for target, result in zip(stencil.outputs, stencil.results, strict=True):
        param = program.param(target.name)
        assert isinstance(param.type, FieldType) and result.type is not None
        value = convert(body.value(result, ()), result.type.dtype, param.type.dtype)
        offset = element_offset(
            target.name, param.type.dim_names, {}, unit_stride.get(target.name, False)
        )
        stores.append(f"p_{target.name}[{offset}] = {value};")
    return stores
