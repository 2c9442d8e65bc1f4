"""Running a definition embedded: wrap the (checked) arguments as fields, call the function."""

from __future__ import annotations

from typing import Any

import attrs

from allocators import namespace_name
from backends.embedded.fields import EmbeddedField, field_parameter
from pipeline.dsl.types import FieldType
from pipeline.frontend.source import with_captured_globals
from pipeline.ir.nodes import ProgramIR
from pipeline.stages import ProgramDefinition

__all__ = ["EmbeddedExecutable"]


def _is_functional(namespace: Any) -> bool:
    return namespace_name(namespace).startswith("jax")


@attrs.frozen
class EmbeddedExecutable:
    """The executable of an embedded backend: the Python definition over array fields.

    Called, as every executable is, on arguments the dispatcher has checked. Returns ``None``
    for namespaces that update in place, and the tuple of written output arrays (in parameter
    order) for functional ones (JAX).
    """

    definition: ProgramDefinition
    ir: ProgramIR = attrs.field(repr=False)
    namespace: Any = attrs.field(repr=namespace_name)
    function: Any = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        # The definition runs against the globals captured on first use, as compiled code does.
        frozen = with_captured_globals(self.definition.function, dict(self.definition.captured))
        object.__setattr__(self, "function", frozen)

    def __call__(self, *args: Any) -> Any:
        functional = _is_functional(self.namespace)
        values: list[Any] = []
        for param, value in zip(self.ir.params, args, strict=True):
            if isinstance(param.type, FieldType):
                values.append(
                    field_parameter(value, param.type.dim_names, self.namespace, functional)
                )
            elif param.type.dtype.kind == "b":
                # A 0-d array, so that ~flag is logical (~True is -2 on a Python bool).
                values.append(self.namespace.asarray(bool(value), dtype=self.namespace.bool))
            else:
                values.append(value.item() if hasattr(value, "item") else value)
        if self.definition.kind == "program":
            self.function(*values)
        else:
            self._run_field_operator(values)
        if not functional:
            return None
        written = {t.name for s in self.ir.stencils for t in s.outputs}
        return tuple(
            v.cell.array
            for p, v in zip(self.ir.params, values, strict=True)
            if p.name in written and isinstance(v, EmbeddedField) and v.cell is not None
        )

    def _run_field_operator(self, values: list[Any]) -> None:
        (stencil,) = self.ir.stencils
        outputs = {t.name: t for t in stencil.outputs}
        names = [p.name for p in self.ir.params]
        inputs = [v for n, v in zip(names, values, strict=True) if n not in outputs]
        result = self.function(*inputs)
        results = result if isinstance(result, tuple) else (result,)
        for target, value in zip(stencil.outputs, results, strict=True):
            field = values[names.index(target.name)]
            field[tuple(slice(a, b) for a, b in target.slices)].__dsl_assign__(value)
