"""A program's stencils as straight NumPy slicing: the fast path of embedded NumPy runs.

Running the definition builds an ``EmbeddedField`` per operation and intersects domains on
every call. A program whose stencils use only pointwise arithmetic, builtins, casts and
shifted reads has a fixed sequence of array operations instead: ``plan_program`` writes it
as one Python function from the typed IR, once per program, and each call only slices::

    SlicePlan(*args)
      key = field shapes + the scalars named by domain= bounds
      table = slices per read, made once per key       (_slice_table)
      run(*args, table)                                 generated: v1 = inp[S[0]]; ...

Each stencil's expressions are evaluated over its output domain; a local read at offsets is
computed once over its extent around the domain (``Stencil.local_extents``) and sliced, and
deleted after its last read. Each operation converts its operands to the dtype the IR gives
it, as the C translation does. A stencil has two blocks where its outputs allow: on small
domains its values go through temporaries and are stored once (fewest Python calls), on
large ones (``LARGE_DOMAIN`` points) each output is evaluated in place
(``np.add(o, x, out=o)``), sparing a temporary and a copy per output. A scan is a loop over
its axis calling its generated step on whole planes, storing them with the axis outermost.
``concat_where`` and scans read at a shift along their axis have no plan (the definition
runs): ``plan_program`` returns ``None``, and says why in ``unplanned_reason``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from backends.arrayapi.elementwise import gamma
from backends.arrayapi.plan.expressions import StencilCode
from backends.arrayapi.plan.lines import free_after_last_use, inline_single_uses
from backends.arrayapi.plan.sweep import sweep
from backends.arrayapi.plan.writer import PlanWriter, Read, Unplanned
from pipeline.dsl.arguments import resolve_domain
from pipeline.dsl.ir.nodes import ProgramIR, Stencil
from pipeline.dsl.regions import Bound
from pipeline.dsl.types import FieldType

__all__ = ["LARGE_DOMAIN", "SlicePlan", "plan_program", "unplanned_reason"]

#: Points of a stencil's domain from which it is evaluated in its outputs (``np.add(o, x,
#: out=o)``) rather than in temporaries stored once: at that size (256 KiB of float64) a
#: temporary costs page faults and a pass over memory, below it the ufuncs' keyword calls
#: and strided outputs cost more than they save.
LARGE_DOMAIN = 1 << 15


@attrs.frozen
class SlicePlan:
    """The generated function of one program and the slices it takes.

    Called with the checked arguments, in parameter order; writes the outputs in place.

    Attributes:
        source: the generated Python (what ``run`` is), for reading and debugging.
        large_domain: the number of points from which a stencil's domain counts as large,
            so that it runs its block that evaluates in the outputs (where it has one).
    """

    ir: ProgramIR = attrs.field(repr=False)
    source: str = attrs.field(repr=False)
    run: Callable[..., None] = attrs.field(repr=False)
    reads: tuple[Read, ...] = attrs.field(repr=False)
    large_domain: int = LARGE_DOMAIN
    # The parameters whose shape (fields) or value (named by domain= bounds) decide the slices.
    _fields: tuple[int, ...] = attrs.field(init=False, repr=False, eq=False)
    _bounds: tuple[int, ...] = attrs.field(init=False, repr=False, eq=False)
    _tables: dict[tuple[Any, ...], tuple[Any, ...]] = attrs.field(
        init=False, factory=dict, repr=False, eq=False
    )

    def __attrs_post_init__(self) -> None:
        params = self.ir.params
        bounds = _bound_params(self.ir)
        fields = tuple(i for i, p in enumerate(params) if isinstance(p.type, FieldType))
        object.__setattr__(self, "_fields", fields)
        object.__setattr__(
            self, "_bounds", tuple(i for i, p in enumerate(params) if p.name in bounds)
        )

    def __call__(self, *args: Any) -> None:
        key = (*(args[i].shape for i in self._fields), *(int(args[i]) for i in self._bounds))
        table = self._tables.get(key)
        if table is None:
            table = _slice_table(self, args)
            if len(self._tables) < 64:  # a program called on ever new shapes stays bounded
                self._tables[key] = table
        self.run(*args, table)


def _bound_params(ir: ProgramIR) -> frozenset[str]:
    names: set[str] = set()
    for stencil in ir.stencils:
        for target in stencil.outputs:
            for pair in target.slices:
                names.update(b.param for b in pair if isinstance(b, Bound) and b.param)
    return frozenset(names)


def _slice_table(plan: SlicePlan, args: Sequence[Any]) -> tuple[Any, ...]:
    """Per stencil, 0 when its domain is empty, 1 when it is small, 2 when large (at least
    ``plan.large_domain`` points); then per read its index tuple."""
    ir = plan.ir
    values = {p.name: a for p, a in zip(ir.params, args, strict=True)}
    domains: list[tuple[tuple[int, int], ...] | None] = []
    for stencil in ir.stencils:
        target = stencil.outputs[0]
        domain = resolve_domain(target.slices, values[target.name].shape, values)
        domains.append(None if any(b <= a for a, b in domain) else domain)
    table: list[Any] = [
        0 if d is None else 1 + (math.prod(b - a for a, b in d) >= plan.large_domain)
        for d in domains
    ]
    for read in plan.reads:
        found = domains[read.stencil]
        if found is None:
            table.append(None)
            continue
        index: list[slice | None] = []
        for (start, stop), offset, (lower, upper), present, origin in zip(
            found, read.offsets, read.box, read.axes,
            read.origin or (0,) * len(found), strict=True,
        ):
            if not present:
                # A parameter lacking the dimension gets a new axis; a local has one of size 1.
                index.append(None if read.origin is None else slice(None))
                continue
            base = (start if read.origin is None else 0) + lower + offset - origin
            index.append(slice(base, base + (stop - start) + upper - lower))
        table.append(tuple(index))
    return tuple(table)


def plan_program(ir: ProgramIR, *, large_domain: int = LARGE_DOMAIN) -> SlicePlan | None:
    """The slicing plan of ``ir``, or None when a construct needs the definition to run.

    ``large_domain``: see ``SlicePlan.large_domain`` (0 evaluates every stencil that can be
    in its outputs, whatever its size).
    """
    plan = _plan(ir)[0]
    return None if plan is None else attrs.evolve(plan, large_domain=large_domain)


def unplanned_reason(ir: ProgramIR) -> str | None:
    """Why ``ir`` has no plan (None: it has one)."""
    return _plan(ir)[1]


def _plan(ir: ProgramIR) -> tuple[SlicePlan | None, str | None]:
    writer = PlanWriter(ir)
    try:
        for number, stencil in enumerate(ir.stencils):
            _write_stencil(writer, number, stencil)
    except Unplanned as reason:
        return None, str(reason)
    params = ", ".join(f"a_{p.name}" for p in ir.params)
    body = free_after_last_use(inline_single_uses(writer.lines))
    source = "\n".join([
        *inline_single_uses(writer.functions),
        f"def run({params}, T):",
        *body,
        "    return None",
        "",
    ])
    namespace: dict[str, Any] = {"np": np, "_gamma": gamma, "_sweep": sweep}
    namespace.update(writer.constants)
    exec(compile(source, f"<slice plan of {ir.name}>", "exec"), namespace)
    return SlicePlan(ir, source, namespace["run"], tuple(writer.reads)), None


def _write_stencil(writer: PlanWriter, number: int, stencil: Stencil) -> None:
    """The block of ``stencil``; two when some output can be evaluated in place (for
    small domains in temporaries stored once, for large ones in the outputs)."""
    dims = _output_dims(writer.ir, stencil)
    name = stencil.operator_name
    if not any(StencilCode(writer, number, stencil, dims).in_place(stencil)):
        writer.lines.append(f"    if T[{number}]:  # {name}")
        _write_block(writer, number, stencil, dims, in_place=False)
        return
    writer.lines.append(f"    if T[{number}] == 1:  # {name}, on a small domain")
    _write_block(writer, number, stencil, dims, in_place=False)
    writer.lines.append(f"    elif T[{number}]:  # {name}, on a large one: in its outputs")
    _write_block(writer, number, stencil, dims, in_place=True)


def _write_block(
    writer: PlanWriter, number: int, stencil: Stencil, dims: tuple[str, ...], in_place: bool
) -> None:
    code = StencilCode(writer, number, stencil, dims)
    where = code.in_place(stencil) if in_place else (False,) * len(stencil.results)
    values = [
        None if inside else code.value(result, code.zero)
        for result, inside in zip(stencil.results, where, strict=True)
    ]
    for target, result, value in zip(stencil.outputs, stencil.results, values, strict=True):
        slot = writer.slot(Read(number, (0,) * len(dims), code.zero, None, (True,) * len(dims)))
        if value is not None:
            code.emit(f"a_{target.name}[T[{slot}]] = {value}")
            continue
        view = f"o{slot}"
        code.emit(f"{view} = a_{target.name}[T[{slot}]]")
        code.into(result, code.zero, view)
    if code.empty:
        code.emit("pass")


def _output_dims(ir: ProgramIR, stencil: Stencil) -> tuple[str, ...]:
    dims: tuple[str, ...] | None = None
    for target in stencil.outputs:
        target_type = ir.param(target.name).type
        assert isinstance(target_type, FieldType)
        if dims is not None and target_type.dim_names != dims:
            raise Unplanned(f"the outputs of {stencil.operator_name!r} differ in dimensions")
        dims = target_type.dim_names
    assert dims is not None
    return dims
