"""The SDFG translation step: ``CompilableProgram -> ProgramSource`` (an SDFG as JSON).

The SDFG is built with DaCe's graph API, not ``@dace.program``:

- every field parameter is an array whose sizes and strides are symbols (a stride is the
  constant 1 where the compile-time arguments say the last dimension is contiguous, so the
  inner loop vectorizes); every scalar parameter is a scalar argument;
- every stencil is one map over its output domain (symbols ``lo<k>_<dim>``/``hi<k>_<dim>``)
  with one C++ tasklet; a local read at shifted positions becomes a transient array computed
  by its own map over the domain plus the local's extent, like ``c_cpu``'s temporaries, which
  the recipe (``backends.dace.recipe``: DaCe's fusion or tiling) may then transform; on CPUs
  the memory of transients that remain whole-domain is external, a buffer the loader keeps
  (``backends.dace.loading``). With the default recipe, ``Fusion.INLINE`` (and with
  ``temporaries=False`` everywhere), such a local is computed inline where it is read;
- on CPUs the maps of a stencil without temporaries span the outer dimensions and each
  tasklet computes a row along the innermost one in a loop marked ``omp simd``, its reads
  and writes being row pointers (DaCe emits no such pragma; per point, gcc versioned every
  row for aliasing: 15% slower on laplacian); the maps of a stencil with temporaries span
  every dimension with one point per tasklet, as DaCe's fusion and tiling want (the recipe's
  ``tasklets``), OpenMP taking all but the innermost; GPU tasklets compute one point each;
- the outer memlets of every map are the exact union of its accesses, computed here: DaCe's
  propagation (SymPy) was half of a cold translation;
- a symbol ``mode<k>`` per stencil skips it (empty domain), or picks a sequential or an
  OpenMP-parallel copy of its maps (small domains run faster on one thread).

The source text is the SDFG's JSON, so it is picklable and can live in the disk cache. The
SDFG is named after the fingerprint of what determines it: DaCe keys its build folders and
loaded libraries by SDFG name, and a changed program that kept its name would load a stale
binary.
"""

from __future__ import annotations

import copy
import itertools
import json
import sys
import threading
from collections.abc import Mapping, Sequence
from importlib import metadata as importlib_metadata
from typing import Any

import attrs
import numpy as np

from allocators import DeviceType
from backends import loops
from backends.clike import expressions, generator, runtime, source
from backends.clike.generator import StencilGenerator, StencilSite
from backends.clike.runtime import RUNTIME_C
from backends.clike.source import unit_stride_flags
from backends.dace import naming, otf, recipe, tasklets, tiling
from backends.dace.naming import SDFGInterface
from backends.dace.recipe import SDFGRecipe, apply_recipe
from backends.dace.tasklets import Offsets, TaskletBody
from backends.loops import plan_sweeps
from pipeline.dsl.ir.nodes import FieldExtent, ProgramIR, Scan, Stencil
from pipeline.dsl.stages import CompilableProgram
from pipeline.dsl.types import FieldType, ScalarType
from pipeline.fingerprint import fingerprint, source_digest
from pipeline.stages import ProgramSource, SourceFormat

__all__ = ["SDFG_CPU", "SDFG_CUDA", "SDFGTranslation", "build_sdfg"]

SDFG_CPU = SourceFormat("sdfg", DeviceType.CPU)
SDFG_CUDA = SourceFormat("sdfg", DeviceType.CUDA)

_GENERATOR_VERSION = source_digest(
    loops,
    tasklets,
    expressions,
    generator,
    runtime,
    source,
    naming,
    recipe,
    otf,
    tiling,
    sys.modules[__name__],
)


#: DaCe's configuration is process-wide: translations and builds that change it take turns.
DACE_CONFIG_LOCK = threading.RLock()


def _dace_version() -> str:
    try:
        return importlib_metadata.version("dace")
    except importlib_metadata.PackageNotFoundError:
        return "unknown"


def _dace() -> Any:
    import dace  # noqa: PLC0415  (an optional package, imported when a translation runs)

    return dace


def _gpu_runtime() -> str:
    """The NumPy-semantics helpers, callable from host and device code."""
    return RUNTIME_C.replace("static inline", "static inline __host__ __device__")


def _cpu_runtime(dace: Any, sdfg: Any) -> str:
    """The helpers and headers the tasklets of a CPU SDFG name (``runtime.runtime_for``):
    a unit that calls no math function does not parse ``<math.h>``.

    Without the C-only pragma that makes an undeclared function an error: in C++ it always
    is one.
    """
    code = "\n".join(
        node.code.as_string
        for node, _ in sdfg.all_nodes_recursive()
        if isinstance(node, dace.nodes.Tasklet)
    )
    lines = runtime.runtime_for(code).splitlines()
    kept = [line for line in lines if not line.startswith("#pragma GCC diagnostic")]
    return "\n".join(kept) + "\n"  # DaCe joins global code blocks as they are


@attrs.frozen
class SDFGTranslation:
    """IR -> DaCe SDFG (serialized as JSON), for the CPU or, with DaCe's GPU transformation,
    for CUDA.

    Attributes:
        temporaries: keep locals read at shifted positions in transient arrays (True) or
            recompute them at every use (False). On CPUs the recipe decides too: with
            ``Fusion.INLINE`` (its default) they are recomputed whatever this says.
        parallel_min_points: CPU domains with fewer points run on one thread.
        device_type: ``DeviceType.CPU`` (OpenMP maps) or ``DeviceType.CUDA`` (GPU kernels
            over ``GPU_Global`` arrays, for CuPy arguments).
        recipe: whether a CPU SDFG keeps temporaries (default: computed inline) and the
            DaCe transformations applied to it once built (``backends.dace.recipe``); GPU
            SDFGs get DaCe's GPU transformation only.
    """

    temporaries: bool = True
    parallel_min_points: int = 32768
    device_type: DeviceType = DeviceType.CPU
    recipe: SDFGRecipe = attrs.field(factory=SDFGRecipe)

    def __attrs_post_init__(self) -> None:
        if self.device_type not in (DeviceType.CPU, DeviceType.CUDA):
            raise ValueError(
                f"SDFGTranslation generates code for CPU or CUDA, not {self.device_type.name}"
            )

    @property
    def emits(self) -> SourceFormat:
        """``sdfg`` for the translation's device type."""
        return SDFG_CPU if self.device_type == DeviceType.CPU else SDFG_CUDA

    def __fingerprint__(self) -> object:
        return (
            self.temporaries,
            self.parallel_min_points,
            self.device_type.name,
            self.recipe,
            _GENERATOR_VERSION,
            _dace_version(),
        )

    def __call__(self, program: CompilableProgram, /) -> ProgramSource:
        ir: ProgramIR = program.ir
        unit = unit_stride_flags(ir, program.compile_time_args)
        name = f"sf_{ir.name}_{fingerprint((ir, sorted(unit.items()), self))[:16]}"
        sdfg, interface = build_sdfg(ir, name, unit, self)
        text = json.dumps(sdfg.to_json(), sort_keys=True)
        return ProgramSource(self.emits, text, name, metadata=interface)


def build_sdfg(
    ir: ProgramIR, name: str, unit_stride: Mapping[str, bool], options: SDFGTranslation
) -> tuple[Any, SDFGInterface]:
    """The SDFG called ``name`` for ``ir``, and the interface loading needs to call it."""
    dace = _dace()
    from dace.config import Config, temporary_config  # noqa: PLC0415  (optional package)

    with DACE_CONFIG_LOCK, temporary_config():
        # Otherwise DaCe walks the Python stack (``inspect``) for every node it adds, ours
        # and the transformations': a third of hdiff's translation.
        Config.set("compiler", "lineinfo", value="none")
        return _build_sdfg(dace, ir, name, unit_stride, options)


def _build_sdfg(
    dace: Any, ir: ProgramIR, name: str, unit_stride: Mapping[str, bool], options: SDFGTranslation
) -> tuple[Any, SDFGInterface]:
    sdfg = dace.SDFG(name)
    builder = _Builder(dace, sdfg, ir, unit_stride, options)
    dims = builder.build()
    gpu = options.device_type == DeviceType.CUDA
    if gpu:
        for data in sdfg.arrays.values():
            if not data.transient and isinstance(data, dace.data.Array):
                data.storage = dace.StorageType.GPU_Global
        sdfg.append_global_code(_gpu_runtime(), "cuda")
        sdfg.apply_gpu_transformations()
        _set_gpu_block_sizes(dace, sdfg)
    else:
        apply_recipe(dace, sdfg, options.recipe)
        builder.add_sequential_variants()
    if gpu:
        sdfg.append_global_code(RUNTIME_C)
    else:
        sdfg.append_global_code(_cpu_runtime(dace, sdfg))
        sdfg.append_global_code(packed_entry(sdfg))
    sdfg.validate()
    interface = SDFGInterface(
        ir,
        tuple(sorted(unit_stride.items())),
        dims,
        options.parallel_min_points,
        "gpu" if gpu else options.recipe.name,
    )
    return sdfg, interface


class _Builder:
    """Adds the arrays, symbols and per-stencil states of one program to an SDFG."""

    def __init__(
        self,
        dace: Any,
        sdfg: Any,
        ir: ProgramIR,
        unit_stride: Mapping[str, bool],
        options: SDFGTranslation,
    ) -> None:
        self.dace = dace
        self.sdfg = sdfg
        self.ir = ir
        self.unit_stride = unit_stride
        self.options = options
        self.symbols: dict[str, Any] = {}
        #: per CPU stencil: its index, the state before it, its parallel variant, the state
        #: after it (``add_sequential_variants`` copies the parallel one)
        self.parallel_variants: list[tuple[int, Any, Any, Any]] = []

    def symbol(self, name: str) -> Any:
        if name not in self.symbols:
            self.sdfg.add_symbol(name, self.dace.int64)
            self.symbols[name] = self.dace.symbol(name, self.dace.int64)
        return self.symbols[name]

    def build(self) -> tuple[tuple[str, ...], ...]:
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


def packed_entry(sdfg: Any) -> str:
    """C++ of ``__sf_packed_<name>(state, words)``: the SDFG's entry function called with its
    arguments from one array of 64-bit words (pointers and integers as values, floats as
    their bits), in the entry's order.

    Through ctypes each argument costs about 0.15 us, and a stencil's entry has a dozen or
    more (pointers, sizes, strides, domain bounds, modes); one pointer to prepared words
    costs the same whatever their number.
    """
    name = sdfg.name
    typed = sdfg.signature_arglist(with_types=True, arglist=sdfg.arglist())
    values = []
    for index, declaration in enumerate(typed):
        ctype = declaration.rsplit(" ", 1)[0].strip()
        word = f"w[{index}]"
        if "*" in ctype:
            values.append(f"({ctype})(uintptr_t){word}")
        elif ctype == "double":
            values.append(f"sf_word_f64({word})")
        elif ctype == "float":
            values.append(f"sf_word_f32({word})")
        else:
            values.append(f"({ctype}){word}")
    arguments = ", ".join(["__state", *values])
    return "\n".join(
        [
            "#include <string.h>",
            f"DACE_EXPORTED void __program_{name}({name}_state_t *__state, "
            f"{sdfg.signature(with_types=True, for_call=False)});",
            "static inline double sf_word_f64(int64_t w) "
            "{ double v; memcpy(&v, &w, sizeof v); return v; }",
            "static inline float sf_word_f32(int64_t w) "
            "{ int32_t b = (int32_t)w; float v; memcpy(&v, &b, sizeof v); return v; }",
            f"DACE_EXPORTED void __sf_packed_{name}({name}_state_t *__state, const int64_t *w) {{",
            f"    __program_{name}({arguments});",
            "}",
        ]
    )


#: Threads per block of a GPU kernel, innermost (contiguous) dimension first: 32 along it,
#: so a warp reads 32 consecutive elements, and 8 along the next, for 256 threads a block.
#: DaCe's fallback is one warp per block (32x1x1), and a warning per kernel.
GPU_BLOCK_SIZE = (32, 8, 1)


def _set_gpu_block_sizes(dace: Any, sdfg: Any) -> None:
    """Give every GPU kernel map ``GPU_BLOCK_SIZE`` (one element along dimensions it lacks)."""
    for node, _ in sdfg.all_nodes_recursive():
        if isinstance(node, dace.nodes.MapEntry) and node.map.schedule in dace.dtypes.GPU_SCHEDULES:
            rank = len(node.map.params)
            node.map.gpu_block_size = [
                size if axis < rank else 1 for axis, size in enumerate(GPU_BLOCK_SIZE)
            ]


def _dace_type(dace: Any, dtype: np.dtype[Any]) -> Any:
    return dace.dtypes.typeclass(dtype.type)


class _StencilStates(StencilGenerator):
    """The states of one stencil: temporaries first, then the outputs, guarded by its mode."""

    def __init__(self, builder: _Builder, stencil: Stencil, index: int) -> None:
        self.b = builder
        # A stencil that runs scans sweeps its axis inside each tasklet: the axis is the row.
        self.sweep = plan_sweeps(stencil)
        options = builder.options
        temporaries = (
            options.temporaries
            and self.sweep is None
            and (options.device_type != DeviceType.CPU or options.recipe.keeps_temporaries)
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
            builder.options.device_type == DeviceType.CPU
            and len(self.layout.dims) > 1
            and (options.recipe.tasklet_rows or not self.temporaries)
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
            cpu = builder.options.device_type == DeviceType.CPU
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

    def _bounds(self, extent: FieldExtent) -> dict[str, tuple[int, int]]:
        bounds = {d.dim: (d.lower, d.upper) for d in extent.dims}
        return {d: bounds.get(d, (0, 0)) for d in self.dims}

    def add(self, previous: Any) -> Any:
        """Append this stencil's states after ``previous``; return the state that ends it."""
        dace, sdfg = self.b.dace, self.b.sdfg
        k = self.index
        done = sdfg.add_state(f"stencil{k}_done")
        mode = naming.mode(k)
        # On CPUs the parallel variant is built here, the sequential one is a copy of it
        # once the recipe has transformed it (``_Builder.add_sequential_variants``).
        if self.b.options.device_type == DeviceType.CPU:
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
        self,
        read: Any,
        emit: Any,
        row: tuple[str, str],
        elements: Mapping[str, str],
    ) -> list[str]:
        """The tasklet of a stencil that runs scans, over one column (the row, along the
        axis): each pass in its direction, keeping what later passes read in buffers."""
        plan = self.sweep
        assert plan is not None
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
        row = self._row(reach)
        inputs: dict[str, str] = {}
        connectors: dict[tuple[str, Offsets], str] = {}
        # Per array read: its dimensions and every shift it is read at (the outer memlet).
        reads: dict[str, tuple[Sequence[str], list[Mapping[str, int]]]] = {}

        def connector(memlet: str, key: tuple[str, Offsets], data: str, dims: Sequence[str]) -> str:
            if key not in connectors:
                connectors[key] = f"i_{len(connectors)}"
                inputs[connectors[key]] = memlet
                reads.setdefault(data, (dims, []))[1].append(dict(key[1]))
            return connectors[key]

        def read(body: TaskletBody, name: str, offsets: Offsets) -> str:
            shift = dict(offsets)
            if name in self.temporaries:
                index = self._subset(self.dims, shift, {}, row)
                data = naming.temporary(self.index, name, self._tag)
                found = connector(f"{data}[{index}]", (name, offsets), data, self.dims)
                return self._element(found, name, self.dims)
            if name in self.definitions:
                return body.value(self.definitions[name], offsets)
            param = self.program.param(name)
            if isinstance(param.type, ScalarType):
                return connector(f"{naming.scalar(name)}[0]", (name, ()), naming.scalar(name), ())
            dims = param.type.dim_names
            index = self._subset(dims, shift, {}, row)
            data = naming.array(name)
            found = connector(f"{data}[{index}]", (name, offsets), data, dims)
            return self._element(found, name, dims)

        if self.sweep is not None:
            lines = self._sweep_lines(read, emit, row, elements)
            ranges = {f"x_{d}": f"{reach[d][0]}:{reach[d][1]}" for d in self.dims[:-1]}
            ranges = ranges or {"x_": "0:1"}  # one column: a map over one point
        elif self.rows:
            body = TaskletBody(read, index=self._index(row))
            stores = emit(body)
            # Outputs are rows too: element k of each.
            lines = [
                "#pragma omp simd",
                f"for (int64_t k = 0; k < ({row[1]}) - ({row[0]}); ++k) {{",
                *(f"    {line.strip()}" for line in body.lines),
                *(f"    {elements[out]} = {value};" for out, value, _ in stores),
                "}",
            ]
            ranges = {f"x_{d}": f"{reach[d][0]}:{reach[d][1]}" for d in self.dims[:-1]}
        else:
            body = TaskletBody(read, index=self._index(row))
            stores = emit(body)
            lines = [*body.lines, *(f"{out} = {value};" for out, value, _ in stores)]
            # A 0-D stencil is a map over one point.
            ranges = {f"x_{d}": f"{reach[d][0]}:{reach[d][1]}" for d in self.dims} or {"x_": "0:1"}
        # The stencil's maps share one state: a temporary is one access node, written by
        # its map and read by the maps after it (a dataflow graph DaCe can transform).
        written = {m.partition("[")[0]: m for m in outputs.values()}
        subsets = {
            data: self._outer_subset(dims, shifts, reach) for data, (dims, shifts) in reads.items()
        }
        for data in written:
            subsets[data] = self._outer_subset(self._dims_of(data), [{}], reach)
        # DaCe's memlet propagation runs SymPy over every memlet: half of a cold
        # translation. Each outer memlet here is the exact union of the map's accesses.
        exact = all(subset is not None for subset in subsets.values())
        _, entry, exit_ = state.add_mapped_tasklet(
            label,
            ranges,
            inputs={c: dace.Memlet(m) for c, m in inputs.items()},
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
