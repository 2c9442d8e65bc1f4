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

import itertools
import json
import threading
import uuid
from collections.abc import Mapping
from importlib import metadata as importlib_metadata
from typing import Any

import attrs

from allocators import DeviceType
from backends import loops
from backends.clike import runtime
from backends.clike.runtime import RUNTIME_C
from backends.clike.source import unit_stride_flags
from backends.dace.dataflow import SDFGBuilder
from backends.dace.entry import packed_entry
from backends.dace.naming import SDFGInterface
from backends.dace.recipe import SDFGRecipe, apply_recipe
from pipeline.dsl.ir.nodes import ProgramIR
from pipeline.dsl.stages import CompilableProgram
from pipeline.fingerprint import fingerprint, source_digest
from pipeline.stages import ProgramSource, SourceFormat

__all__ = ["SDFG_CPU", "SDFG_CUDA", "SDFGTranslation", "build_sdfg"]

SDFG_CPU = SourceFormat("sdfg", DeviceType.CPU)
SDFG_CUDA = SourceFormat("sdfg", DeviceType.CUDA)

#: What the generated text depends on, digested into every translation's key: backends.loops
#: and every module of these packages, the DSL's included (its IR helpers, types and regions,
#: and pipeline.dsl.arguments, whose overlap rules the bindings emit).
_GENERATOR_PACKAGES = ("backends.dace", "backends.clike", "pipeline.dsl")
_GENERATOR_VERSION = source_digest(loops, packages=_GENERATOR_PACKAGES)


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
        text = json.dumps(_numbered_guids(sdfg.to_json(), name), sort_keys=True)
        return ProgramSource(self.emits, text, name, metadata=interface)


def _numbered_guids(tree: Any, name: str) -> Any:
    """The SDFG's JSON ``tree`` with each element's guid (DaCe draws a random one for every
    node, edge and state it makes) replaced by one derived from ``name`` and the element's
    place in the tree: the same program translates to the same text in every process, as
    c_cpu's does, so machines that translate it apart share its builds."""
    count = itertools.count()

    def renumbered(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                key: str(uuid.uuid5(uuid.NAMESPACE_URL, f"{name}/{next(count)}"))
                if key == "guid" and isinstance(value, str)
                else renumbered(value)
                for key, value in node.items()
            }
        if isinstance(node, list):
            return [renumbered(item) for item in node]
        return node

    return renumbered(tree)


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
    builder = SDFGBuilder(
        dace, sdfg, ir, unit_stride, options.temporaries, options.device_type, options.recipe
    )
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
