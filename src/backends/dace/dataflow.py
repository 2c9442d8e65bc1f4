"""The dataflow of a program's SDFG: its arrays and symbols, and per stencil the states whose
maps and C++ tasklets compute it (the layout ``backends.dace.translation`` describes).

``SDFGBuilder`` adds them to an SDFG; the recipe (``backends.dace.recipe``) transforms them
afterwards, and ``SDFGBuilder.add_sequential_variants`` then copies each CPU stencil's
parallel state into its sequential one.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from allocators import DeviceType
from backends.clike import expressions
from backends.clike.generator import StencilGenerator, StencilSite
from backends.dace import naming, tasklets
from backends.dace.recipe import SDFGRecipe
from backends.dace.tasklets import Offsets, TaskletBody
from backends.loops import plan_sweeps
from pipeline.dsl.ir.nodes import ProgramIR, Scan, Stencil
from pipeline.dsl.types import FieldType, ScalarType

__all__ = ["SDFGBuilder"]


@attrs.define
class SDFGBuilder:
    """Adds the arrays, symbols and per-stencil states of one program to an SDFG.

    Attributes:
        dace: the ``dace`` module (an optional package, imported by the caller).
        sdfg: the SDFG to add to.
        ir: the program.
        unit_stride: per field parameter, whether its last dimension is contiguous.
        temporaries: ``SDFGTranslation.temporaries``.
        device_type: ``SDFGTranslation.device_type``.
        recipe: ``SDFGTranslation.recipe``.
        symbols: the symbols added so far, by name.
        parallel_variants: per CPU stencil: its index, the state before it, its parallel
            variant, the state after it (``add_sequential_variants`` copies the parallel one).
    """

    dace: Any
    sdfg: Any
    ir: ProgramIR
    unit_stride: Mapping[str, bool]
    temporaries: bool
    device_type: DeviceType
    recipe: SDFGRecipe
    symbols: dict[str, Any] = attrs.field(factory=dict, init=False)
    parallel_variants: list[tuple[int, Any, Any, Any]] = attrs.field(factory=list, init=False)

    def symbol(self, name: str) -> Any:
        """The ``int64`` symbol ``name``, added to the SDFG when first asked for."""
        if name not in self.symbols:
            self.sdfg.add_symbol(name, self.dace.int64)
            self.symbols[name] = self.dace.symbol(name, self.dace.int64)
        return self.symbols[name]

    def build(self) -> tuple[tuple[str, ...], ...]:
        """Add the program's arrays and its stencils' states; return each stencil's
        iteration dimensions."""
        dace = self.dace
        arg_names = []
        for param in self.ir.params:
            if isinstance(param.type, ScalarType):
                self.sdfg.add_scalar(naming.scalar(param.name), _dace_type(dace, param.type.dtype))
                arg_names.append(naming.scalar(param.name))
                continue
            rank = len(param.type.dims)
            shape: list[Any] = [self.symbol(naming.size(param.name, a)) for a in range(rank)]
            strides: list[Any] = [self.symbol(naming.stride(param.name, a)) for a in range(rank)]
            if self.unit_stride.get(param.name, False) and rank:
                strides[-1] = 1
            if not rank:  # a 0-D field: one element
                shape, strides = [1], [1]
            self.sdfg.add_array(
                naming.array(param.name),
                shape,
                _dace_type(dace, param.type.dtype),
                strides=strides,
            )
            arg_names.append(naming.array(param.name))
        self.sdfg.arg_names = arg_names
        last = self.sdfg.add_state("start", is_start_block=True)
        all_dims = []
        for index, stencil in enumerate(self.ir.stencils):
            generator = _StencilStates(self, stencil, index)
            last = generator.add(last)
            all_dims.append(generator.dims)
        return tuple(all_dims)

    def add_sequential_variants(self) -> None:
        """Give every CPU stencil its sequential variant: a copy of the parallel state as
        the recipe left it, with its maps sequential and transients of its own (DaCe would
        allocate a transient shared by two states outside both, where the threads of a
        parallel map would share it).

        Transforming one variant and copying it halves the recipe's work (DaCe's fusion
        solves its index equations with SymPy: most of a cold translation)."""
        dace, sdfg = self.dace, self.sdfg
        for index, previous, parallel, done in self.parallel_variants:
            sequential = copy.deepcopy(parallel)
            sequential.label = f"stencil{index}_seq"
            sdfg.add_node(sequential)
            used = {n.data for n in parallel.nodes() if isinstance(n, dace.nodes.AccessNode)}
            renames = {}
            for name in sorted(used):
                data = sdfg.arrays[name]
                if not data.transient:
                    continue
                wanted = name.replace(f"t{index}par_", f"t{index}seq_", 1)
                if wanted == name:
                    wanted = f"{name}_seq"
                renames[name] = sdfg.add_datadesc(wanted, copy.deepcopy(data), find_new_name=True)
            sequential.replace_dict(renames)
            for node in sequential.nodes():
                if isinstance(node, dace.nodes.MapEntry):
                    node.map.schedule = dace.ScheduleType.Sequential
                    node.map.collapse = 1
            condition = f"{naming.mode(index)} == {naming.SEQUENTIAL}"
            sdfg.add_edge(previous, sequential, dace.InterstateEdge(condition=condition))
            sdfg.add_edge(sequential, done, dace.InterstateEdge())


class _StencilStates(StencilGenerator):
    """The states of one stencil: temporaries first, then the outputs, guarded by its mode."""

    def __init__(self, builder: SDFGBuilder, stencil: Stencil, index: int) -> None:
        self.b = builder
        # A stencil that runs scans sweeps its axis inside each tasklet: the axis is the row.
        self.sweep = plan_sweeps(stencil)
        temporaries = (
            builder.temporaries
            and self.sweep is None
            and (builder.device_type != DeviceType.CPU or builder.recipe.keeps_temporaries)
        )
        site = StencilSite(builder.ir, stencil, index, builder.unit_stride)
        super().__init__(site, temporaries=temporaries)
        if self.sweep is not None:
            axis = self.sweep.axis
            self.dims = (*(d for d in self.layout.dims if d != axis), axis)
        self.temporaries: dict[str, dict[str, tuple[int, int]]] = {
            name: dict(extent) for name, extent in self.layout.temporaries.items()
        }
        # On CPUs each tasklet computes a whole row along the innermost dimension in a loop
        # marked ``omp simd`` (DaCe emits no such pragma for a map): the row's reads and
        # writes are pointer connectors, so the compiler needs no alias checks per row.
        # Recipe ``TILED`` wants one point per tasklet where there are temporaries to tile.
        self.rows = self.sweep is not None or (
            builder.device_type == DeviceType.CPU
            and len(self.layout.dims) > 1
            and (builder.recipe.tasklet_rows or not self.temporaries)
        )
        self.lo = {d: builder.symbol(naming.domain_low(index, d)) for d in self.dims}
        self.hi = {d: builder.symbol(naming.domain_high(index, d)) for d in self.dims}
        self.mode = builder.symbol(naming.mode(index))

    def _add_temporaries(self, tag: str) -> None:
        """Declare the transients of the variant ``tag``."""
        builder = self.b
        for name, bounds in self.temporaries.items():
            local_type = self.definitions[name].type
            assert local_type is not None
            shape = [self.hi[d] - self.lo[d] + (bounds[d][1] - bounds[d][0]) for d in self.dims]
            cpu = builder.device_type == DeviceType.CPU
            dace = builder.dace
            builder.sdfg.add_transient(
                naming.temporary(self.index, name, tag),
                shape,
                _dace_type(dace, local_type.dtype),
                # On CPUs the loader hands DaCe one reused buffer for them (External): a
                # fresh allocation per call page-faulted through every transient.
                storage=dace.StorageType.CPU_Heap if cpu else dace.StorageType.Default,
                lifetime=(
                    dace.AllocationLifetime.External if cpu else dace.AllocationLifetime.SDFG
                ),
                # Indexed like the fields (absolute indices): memlets of temporaries and of
                # fields then depend on the map's variables alone, as DaCe's stencil tiling
                # and fusion require.
                offset=[-(self.lo[d] + bounds[d][0]) for d in self.dims],
            )

    def add(self, previous: Any) -> Any:
        """Append this stencil's states after ``previous``; return the state that ends it."""
        dace, sdfg = self.b.dace, self.b.sdfg
        k = self.index
        done = sdfg.add_state(f"stencil{k}_done")
        mode = naming.mode(k)
        # On CPUs the parallel variant is built here, the sequential one is a copy of it
        # once the recipe has transformed it (``SDFGBuilder.add_sequential_variants``).
        if self.b.device_type == DeviceType.CPU:
            value: int | None = naming.PARALLEL
            first, last = self._variant(dace.ScheduleType.CPU_Multicore, "par")
            assert first is last  # one state per variant: the copy is that state's
            self.b.parallel_variants.append((k, previous, first, done))
        else:
            value = None
            first, last = self._variant(dace.ScheduleType.Default, "par")
        condition = f"{mode} != {naming.SKIP}" if value is None else f"{mode} == {value}"
        sdfg.add_edge(previous, first, dace.InterstateEdge(condition=condition))
        sdfg.add_edge(last, done, dace.InterstateEdge())
        sdfg.add_edge(previous, done, dace.InterstateEdge(condition=f"{mode} == {naming.SKIP}"))
        return done

    def _variant(self, schedule: Any, tag: str) -> tuple[Any, Any]:
        sdfg = self.b.sdfg
        k = self.index
        states = []
        state = sdfg.add_state(f"stencil{k}_{tag}")
        self._nodes: dict[str, Any] = {}
        self._tag = tag
        self._add_temporaries(tag)
        for name, bounds in self.temporaries.items():
            reach = {
                d: (f"{self.lo[d]} + ({bounds[d][0]})", f"{self.hi[d]} + ({bounds[d][1]})")
                for d in self.dims
            }
            target = naming.temporary(k, name, tag)
            index = self._subset(self.dims, {}, {}, self._row(reach))
            self._map(
                state,
                f"s{k}_{tag}_{name}",
                reach,
                schedule,
                lambda body, name=name: [("o_0", body.value(self.definitions[name], ()), None)],
                {"o_0": f"{target}[{index}]"},
                {"o_0": self._element("o_0", name, self.dims)},
            )
        reach = {d: (f"{self.lo[d]}", f"{self.hi[d]}") for d in self.dims}
        outputs, elements = {}, {}
        for position, output in enumerate(self.stencil.outputs):
            param = self.program.param(output.name)
            assert isinstance(param.type, FieldType)
            index = self._subset(param.type.dim_names, {}, {}, self._row(reach))
            outputs[f"o_{position}"] = f"{naming.array(output.name)}[{index}]"
            elements[f"o_{position}"] = self._element(
                f"o_{position}", output.name, param.type.dim_names
            )

        def results(body: TaskletBody) -> list[tuple[str, str, Any]]:
            stores = []
            for position, (target, result) in enumerate(
                zip(self.stencil.outputs, self.stencil.results, strict=True)
            ):
                param_type = self.program.param(target.name).type
                assert result.type is not None
                stores.append(
                    (
                        f"o_{position}",
                        body.typed(result, (), param_type.dtype),
                        None,
                    )
                )
            return stores

        self._map(state, f"s{k}_{tag}", reach, schedule, results, outputs, elements)
        states.append(state)
        for before, after in itertools.pairwise(states):
            sdfg.add_edge(before, after, self.b.dace.InterstateEdge())
        return states[0], states[-1]

    def _sweep_lines(
        self, reader: _TaskletReads, emit: Any, elements: Mapping[str, str]
    ) -> list[str]:
        """The tasklet of a stencil that runs scans, over one column (the row, along the
        axis): each pass in its direction, keeping what later passes read in buffers."""
        plan = self.sweep
        assert plan is not None
        read, row = reader.read, reader.row
        count = f"(({row[1]}) - ({row[0]}))"
        keys = [key for _, phase in plan.phases for key in phase]
        numbers = {key: n for n, key in enumerate(keys)}
        last = len(plan.phases) - 1
        lines = []
        for key, n in numbers.items():
            if plan.phase_of(key) < last:
                for i, param in enumerate(key[0].carry):
                    ctype = expressions.C_TYPES[param.type.dtype]
                    lines.append(f"{ctype}* k{n}_{i} = new {ctype}[{count}];")
        for phase, (forward, phase_keys) in enumerate(plan.phases):
            scans = expressions.PassStorage(plan, phase, numbers, "k")
            body = TaskletBody(read, scans=scans, index=self._index(row))
            for key in phase_keys:
                body.sweep(Scan(key[0], key[1]))
            stores = [(elements[o], v) for o, v, _ in emit(body)] if phase == last else []
            for key in phase_keys:
                for i, (param, init) in enumerate(zip(key[0].carry, key[0].init, strict=True)):
                    ctype = expressions.C_TYPES[param.type.dtype]
                    lines.append(
                        f"{ctype} c{numbers[key]}_{i} = {tasklets.literal(init, param.type.dtype)};"
                    )
            lines.append(
                f"for (int64_t k = 0; k < {count}; ++k) {{"
                if forward
                else f"for (int64_t k = {count} - 1; k >= 0; --k) {{"
            )
            lines += [f"    {line.strip()}" for line in body.lines]
            lines += [f"    {target} = {value};" for target, value in stores]
            lines += [f"    {store}" for store in scans.stores(body.sweeps)]
            lines.append("}")
        for key, n in numbers.items():
            if plan.phase_of(key) < last:
                lines += [f"delete[] k{n}_{i};" for i in range(len(key[0].carry))]
        return lines

    def _index(self, row: tuple[str, str]) -> Any:
        """The tasklet's text for the point's index along a dimension: the map's variable,
        or the row's start plus ``k`` along the row."""
        inner = self.dims[-1] if self.dims else None

        def index(dim: str) -> str:
            if self.rows and dim == inner:
                return f"(({row[0]}) + k)"
            return f"x_{dim}"

        return index

    def _row(self, reach: Mapping[str, tuple[str, str]]) -> tuple[str, str]:
        """The span of the innermost iteration dimension (nothing, for a 0-D stencil)."""
        return reach[self.dims[-1]] if self.dims else ("0", "1")

    def _subset(
        self,
        dims: Sequence[str],
        shift: Mapping[str, int],
        base: Mapping[str, str],
        row: tuple[str, str],
    ) -> str:
        """The memlet subset of an array over ``dims`` read at ``shift`` from a map point,
        relative to ``base`` (a transient's origin); in row mode the innermost iteration
        dimension spans the map's ``row``."""
        if not dims:
            return "0"
        inner = self.dims[-1]
        parts = []
        for d in dims:
            offset = f" + ({shift[d]})" if shift.get(d) else ""
            origin = f" - ({base[d]})" if d in base else ""
            if self.rows and d == inner:
                parts.append(f"{row[0]}{offset}{origin}:{row[1]}{offset}{origin}")
            else:
                parts.append(f"x_{d}{offset}{origin}")
        return ", ".join(parts)

    def _outer_subset(
        self,
        dims: Sequence[str],
        shifts: Sequence[Mapping[str, int]],
        reach: Mapping[str, tuple[str, str]],
    ) -> str | None:
        """The subset of an array over ``dims`` that a map over ``reach`` accesses at
        ``shifts`` (None where an array dimension is not one the map iterates)."""
        if not dims:
            return "0"
        parts = []
        for d in dims:
            if d not in reach:
                return None
            low = min(shift.get(d, 0) for shift in shifts)
            high = max(shift.get(d, 0) for shift in shifts)
            parts.append(f"{reach[d][0]} + ({low}):{reach[d][1]} + ({high})")
        return ", ".join(parts)

    def _dims_of(self, data: str) -> Sequence[str]:
        """The dimensions of an array the stencil writes (an output field or a temporary)."""
        for name in self.temporaries:
            if data == naming.temporary(self.index, name, self._tag):
                return self.dims
        for output in self.stencil.outputs:
            if data == naming.array(output.name):
                param_type = self.program.param(output.name).type
                assert isinstance(param_type, FieldType)
                return param_type.dim_names
        raise AssertionError(f"{data} is not written by stencil {self.index}")

    def _element(self, connector: str, name: str, dims: Sequence[str]) -> str:
        """How the tasklet reads element ``k`` of a row connector (or the connector's value
        when the array has no innermost iteration dimension)."""
        if not self.rows or not self.dims or self.dims[-1] not in dims:
            return connector
        axis = list(dims).index(self.dims[-1])
        if name in self.temporaries or (
            axis == len(dims) - 1 and self.unit_stride.get(name, False)
        ):
            return f"{connector}[k]"
        return f"{connector}[k * {naming.stride(name, axis)}]"

    def _map(
        self,
        state: Any,
        label: str,
        reach: Mapping[str, tuple[str, str]],
        schedule: Any,
        emit: Any,
        outputs: Mapping[str, str],
        elements: Mapping[str, str],
    ) -> None:
        """One map over ``reach`` (the outer dimensions only, in row mode) with one tasklet
        writing ``outputs`` (connector -> memlet); ``elements`` says how the tasklet names the
        element of each output connector it writes."""
        dace = self.b.dace
        reader = _TaskletReads(self, self._row(reach))
        lines, ranges = self._tasklet_code(reader, emit, elements, reach)
        # The stencil's maps share one state: a temporary is one access node, written by
        # its map and read by the maps after it (a dataflow graph DaCe can transform).
        written = {m.partition("[")[0]: m for m in outputs.values()}
        subsets = {
            data: self._outer_subset(dims, shifts, reach)
            for data, (dims, shifts) in reader.reads.items()
        }
        for data in written:
            subsets[data] = self._outer_subset(self._dims_of(data), [{}], reach)
        # DaCe's memlet propagation runs SymPy over every memlet: half of a cold
        # translation. Each outer memlet here is the exact union of the map's accesses.
        exact = all(subset is not None for subset in subsets.values())
        _, entry, exit_ = state.add_mapped_tasklet(
            label,
            ranges,
            inputs={c: dace.Memlet(m) for c, m in reader.inputs.items()},
            code="\n".join(lines),
            outputs={c: dace.Memlet(m) for c, m in outputs.items()},
            schedule=schedule,
            language=dace.Language.CPP,
            external_edges=True,
            input_nodes=self._nodes,
            propagate=not exact,
        )
        if exact:
            for edge in [*state.in_edges(entry), *state.out_edges(exit_)]:
                edge.data = dace.Memlet(f"{edge.data.data}[{subsets[edge.data.data]}]")
        for edge in state.out_edges(exit_):
            if edge.dst.data in self.b.sdfg.arrays and self.b.sdfg.arrays[edge.dst.data].transient:
                self._nodes[edge.dst.data] = edge.dst
        # OpenMP takes the outer dimensions; with one point per tasklet the innermost one
        # stays the plain loop the compiler vectorizes.
        outer = len(ranges) if self.rows or len(ranges) < 2 else len(ranges) - 1
        if schedule == dace.ScheduleType.CPU_Multicore and outer > 1:
            entry.map.collapse = outer

    def _tasklet_code(
        self,
        reader: _TaskletReads,
        emit: Any,
        elements: Mapping[str, str],
        reach: Mapping[str, tuple[str, str]],
    ) -> tuple[list[str], dict[str, str]]:
        """The tasklet's code (reading through ``reader``, storing what ``emit`` computes)
        and its map's ranges: a column swept per pass, a row in a SIMD loop, or a point."""
        if self.sweep is not None:
            lines = self._sweep_lines(reader, emit, elements)
            ranges = {f"x_{d}": f"{reach[d][0]}:{reach[d][1]}" for d in self.dims[:-1]}
            return lines, ranges or {"x_": "0:1"}  # one column: a map over one point
        row = reader.row
        body = TaskletBody(reader.read, index=self._index(row))
        stores = emit(body)
        if self.rows:
            # Outputs are rows too: element k of each.
            lines = [
                "#pragma omp simd",
                f"for (int64_t k = 0; k < ({row[1]}) - ({row[0]}); ++k) {{",
                *(f"    {line.strip()}" for line in body.lines),
                *(f"    {elements[out]} = {value};" for out, value, _ in stores),
                "}",
            ]
            return lines, {f"x_{d}": f"{reach[d][0]}:{reach[d][1]}" for d in self.dims[:-1]}
        lines = [*body.lines, *(f"{out} = {value};" for out, value, _ in stores)]
        # A 0-D stencil is a map over one point.
        ranges = {f"x_{d}": f"{reach[d][0]}:{reach[d][1]}" for d in self.dims}
        return lines, ranges or {"x_": "0:1"}


class _TaskletReads:
    """The reads of one tasklet of a stencil's map over a ``row``: one input connector per
    array and shift read, made as the tasklet's code is emitted.

    Attributes:
        inputs: each input connector's memlet.
        reads: per array read, its dimensions and every shift it is read at (for the map's
            outer memlet).
    """

    def __init__(self, states: _StencilStates, row: tuple[str, str]) -> None:
        self.states = states
        self.row = row
        self.inputs: dict[str, str] = {}
        self.reads: dict[str, tuple[Sequence[str], list[Mapping[str, int]]]] = {}
        self._connectors: dict[tuple[str, Offsets], str] = {}

    def read(self, body: TaskletBody, name: str, offsets: Offsets) -> str:
        """The tasklet's text of ``name`` at ``offsets`` (``ExpressionEmitter``'s ``read``)."""
        states = self.states
        shift = dict(offsets)
        if name in states.temporaries:
            index = states._subset(states.dims, shift, {}, self.row)
            data = naming.temporary(states.index, name, states._tag)
            found = self._connector(f"{data}[{index}]", (name, offsets), data, states.dims)
            return states._element(found, name, states.dims)
        if name in states.definitions:
            return body.value(states.definitions[name], offsets)
        param = states.program.param(name)
        if isinstance(param.type, ScalarType):
            scalar = naming.scalar(name)
            return self._connector(f"{scalar}[0]", (name, ()), scalar, ())
        dims = param.type.dim_names
        index = states._subset(dims, shift, {}, self.row)
        data = naming.array(name)
        found = self._connector(f"{data}[{index}]", (name, offsets), data, dims)
        return states._element(found, name, dims)

    def _connector(
        self, memlet: str, key: tuple[str, Offsets], data: str, dims: Sequence[str]
    ) -> str:
        if key not in self._connectors:
            self._connectors[key] = f"i_{len(self._connectors)}"
            self.inputs[self._connectors[key]] = memlet
            self.reads.setdefault(data, (dims, []))[1].append(dict(key[1]))
        return self._connectors[key]


def _dace_type(dace: Any, dtype: np.dtype[Any]) -> Any:
    return dace.dtypes.typeclass(dtype.type)
