"""Running a definition embedded: wrap the (checked) arguments as fields, call the function."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np

from allocators import namespace_name
from backends.arrayapi.fields import EmbeddedField, field_parameter, input_field
from backends.arrayapi.plan import LARGE_DOMAIN, SlicePlan, plan_program
from pipeline.dsl.arguments import guarded_reach, resolve_domain
from pipeline.dsl.evaluation import current_output_domain, evaluating_embedded, output_domain
from pipeline.dsl.frontend.annotations import parameter_nesting
from pipeline.dsl.frontend.source import with_captured_globals
from pipeline.dsl.ir.nodes import ProgramIR
from pipeline.dsl.regions import Bound
from pipeline.dsl.stages import ProgramDefinition
from pipeline.dsl.types import FieldType, Named, record_of

__all__ = ["EmbeddedExecutable"]


def read_regions(ir: ProgramIR, args: tuple[Any, ...]) -> dict[str, tuple[tuple[int, int], ...]]:
    """Per field the program only reads: the box (start, stop per axis) its stencils read.

    The output domains plus each stencil's reach, unioned over the stencils. Embedded runs
    compute on these boxes only, so they touch what compiled code touches: an input far
    larger than the output (a huge broadcast view, say) costs what the output costs.
    """
    params = {p.name: (index, p.type) for index, p in enumerate(ir.params)}
    written = {t.name for s in ir.stencils for t in s.outputs}
    boxes: dict[str, list[tuple[int, int] | None]] = {}
    values = {p.name: args[index] for index, p in enumerate(ir.params)}
    for stencil in ir.stencils:
        domain: dict[str, tuple[int, int]] = {}
        for target in stencil.outputs:
            index, target_type = params[target.name]
            assert isinstance(target_type, FieldType)
            bounds = resolve_domain(target.slices, args[index].shape, values)
            domain.update(zip(target_type.dim_names, bounds, strict=True))
        if any(stop <= start for start, stop in domain.values()):
            continue  # an empty domain reads nothing
        reaches: list[tuple[str, dict[str, tuple[int, int]]]] = []
        for extent in stencil.extents:
            reaches.append((extent.name, {
                b.dim: (domain[b.dim][0] + b.lower, domain[b.dim][1] + b.upper)
                for b in extent.dims
                if b.dim in domain
            }))
        for read in stencil.guarded:
            reach = guarded_reach(read, domain, values)
            if reach is not None:
                reaches.append((read.name, reach))
        for name, reach in reaches:
            if name in written:
                continue
            index, field_type = params[name]
            assert isinstance(field_type, FieldType)
            shape = args[index].shape
            box = boxes.setdefault(name, [None] * len(shape))
            for axis, dim in enumerate(field_type.dim_names):
                # A dimension the outputs lack: the whole axis.
                needed = reach.get(dim, (0, shape[axis]))
                old = box[axis]
                box[axis] = needed if old is None else (min(old[0], needed[0]),
                                                         max(old[1], needed[1]))
    return {
        name: tuple(b if b is not None else (0, args[params[name][0]].shape[axis])
                    for axis, b in enumerate(box))
        for name, box in boxes.items()
    }


def _flattened(value: Any) -> list[Any]:
    """The leaves of nested tuple and named collection results, in order."""
    if isinstance(value, tuple):
        return [leaf for item in value for leaf in _flattened(item)]
    record = record_of(type(value))
    if record is not None:
        return [leaf for item in record.values(value) for leaf in _flattened(item)]
    return [value]


def _rebuilt(nesting: object, values: Iterator[Any]) -> Any:
    """The next values, as a parameter nested as ``nesting`` takes them: a tuple, or a named
    collection's instance, nested alike (``None``: one value)."""
    if not isinstance(nesting, tuple):
        return next(values)
    items = tuple(_rebuilt(item, values) for item in nesting)
    return nesting.record.build(items) if isinstance(nesting, Named) else items


def _as_written(ir: ProgramIR, values: list[Any]) -> list[Any]:
    """One value per leaf parameter as the program's function takes them: a tuple
    parameter's leaves as the tuple (or named collection) it was written as, nested alike."""
    if not ir.tuples:
        return values
    remaining = iter(values)
    return [_rebuilt(names, remaining) for _, names in ir.written]


def _scalar_value(namespace: Any, kind: str, value: Any) -> Any:
    """A scalar argument as the definition computes with it: a Python number (a literal's weak
    typing), a 0-d array for a bool (so that ~flag is logical: ~True is -2 on a Python bool).

    The checks let only numbers through, so an array here is a tracer: the definition is being
    traced by ``jax.jit`` (the ``jax_jit`` backend) and the value is not known yet; it is used as
    the 0-d array it is.
    """
    if hasattr(value, "shape") and not isinstance(value, np.generic):
        return value
    if kind == "b":
        return namespace.asarray(bool(value), dtype=namespace.bool)
    return value.item() if hasattr(value, "item") else value


def _is_functional(namespace: Any) -> bool:
    return namespace_name(namespace).startswith("jax")


@attrs.frozen
class EmbeddedExecutable:
    """The executable of an embedded backend: the Python definition over array fields.

    Called, as every executable is, on arguments the dispatcher has checked. Returns ``None``
    for namespaces that update in place, and the tuple of written output arrays (in parameter
    order) for functional ones (JAX).

    Attributes:
        planned: on NumPy, run the program's slicing plan (``backends.arrayapi.plan``) where
            its constructs allow, instead of the definition; ``plan`` is that plan, or None
            where the definition runs (False, another namespace, or no plan).
        large_domain: the plan's ``SlicePlan.large_domain``.
    """

    definition: ProgramDefinition
    ir: ProgramIR = attrs.field(repr=False)
    namespace: Any = attrs.field(repr=namespace_name)
    planned: bool = True
    large_domain: int = LARGE_DOMAIN
    function: Any = attrs.field(init=False, repr=False)
    plan: SlicePlan | None = attrs.field(init=False, repr=False)
    # Per parameter, the grid index of its element 0 (a located array's, ADR 0026), or None:
    # the definition runs in grid indices, the IR (and the plan) in element indices.
    origins: tuple[tuple[int, ...] | None, ...] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        # The definition runs against the globals captured on first use, as compiled code does.
        frozen = with_captured_globals(self.definition.function, dict(self.definition.captured))
        object.__setattr__(self, "function", frozen)
        plan = (
            plan_program(self.ir, large_domain=self.large_domain)
            if self.planned and self.namespace is np
            else None
        )
        object.__setattr__(self, "plan", plan)
        located = dict(self.definition.located)
        origins = tuple(
            tuple(dict(located[p.name]).get(d, 0) for d in p.type.dim_names)
            if p.name in located and isinstance(p.type, FieldType)
            else None
            for p in self.ir.params
        )
        object.__setattr__(self, "origins", origins)

    def __call__(self, *args: Any) -> Any:
        if self.plan is not None:
            return self.plan(*args)
        functional = _is_functional(self.namespace)
        regions = read_regions(self.ir, args)
        values: list[Any] = []
        for param, value, origin in zip(self.ir.params, args, self.origins, strict=True):
            if param.name in regions:
                assert isinstance(param.type, FieldType)
                box = regions[param.name]
                dims = param.type.dim_names
                values.append(input_field(value, dims, box, self.namespace, origin))
            elif isinstance(param.type, FieldType):
                dims = param.type.dim_names
                values.append(field_parameter(value, dims, self.namespace, functional, origin))
            else:
                values.append(_scalar_value(self.namespace, param.type.dtype.kind, value))
        with evaluating_embedded():
            if self.definition.kind == "program":
                self._run_program(values)
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

    def _run_program(self, values: list[Any]) -> None:
        written = _as_written(self.ir, values)
        bound = self.definition.bound
        if not bound:
            self.function(*written)
            return
        # The bound parameters (constants of the IR) are the function's too: by name.
        names = [name for name, _ in self.ir.written]
        constants = {
            name: _scalar_value(self.namespace, np.dtype(type(value)).kind, value)
            for name, value in bound.items()
        }
        self.function(**dict(zip(names, written, strict=True)), **constants)

    def _run_field_operator(self, values: list[Any]) -> None:
        """A field operator or scan operator called directly: its function over the inputs,
        once per output domain (one, unless ``domain=`` gave each output its own)."""
        # One stencil, or one per group of outputs over the same dimensions (splitting).
        outputs = {t.name: t for s in self.ir.stencils for t in s.outputs}
        names = [p.name for p in self.ir.params]
        flat = iter([v for n, v in zip(names, values, strict=True) if n not in outputs])
        function = self.function
        if self.definition.scan is not None:
            inputs = list(flat)
        else:
            # Tuple parameters arrive one argument per leaf: the function takes them nested.
            inputs = [_rebuilt(nesting, flat) for _, nesting in parameter_nesting(function)]
        ordered = sorted(outputs.values(), key=lambda t: names.index(t.name))
        targets = tuple(
            values[names.index(target.name)][
                tuple(slice(_index(a), _index(b)) for a, b in target.slices)
            ]
            for target in ordered
        )
        bounds = self.definition.output_bounds
        groups = (
            [tuple(range(len(targets)))]
            if bounds is None or len(bounds) == 1
            else _domain_groups(tuple(t.bounds() for t in targets))
        )
        for group in groups:
            with output_domain(tuple(targets[i] for i in group)):
                results = _flattened(self._evaluate(inputs))
            for i in group:
                targets[i].__dsl_assign__(results[i])

    def _evaluate(self, inputs: list[Any]) -> Any:
        """The operator's result over the current output domain."""
        settings = self.definition.scan
        if settings is None:
            return self.function(*inputs)
        field = next(v for v in inputs if isinstance(v, EmbeddedField))
        return field.__dsl_scan__(self.function, settings, tuple(inputs), current_output_domain())


def _domain_groups(domains: tuple[dict[str, tuple[int, int]], ...]) -> list[tuple[int, ...]]:
    """The outputs (by position) grouped by their domains: one evaluation per domain, as the
    compiled program runs one stencil per domain."""
    groups: dict[tuple[tuple[str, int, int], ...], list[int]] = {}
    for position, domain in enumerate(domains):
        key = tuple(sorted((d, lo, hi) for d, (lo, hi) in domain.items()))
        groups.setdefault(key, []).append(position)
    return [tuple(group) for group in groups.values()]


def _index(bound: int | Bound | None) -> int | None:
    """A slice bound of a direct call's output: ``domain={I: (lo, hi)}`` gives absolute
    bounds of no scalar, which index the whole output parameter as they are."""
    return bound.offset if isinstance(bound, Bound) else bound
