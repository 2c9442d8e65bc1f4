"""IR -> CUDA C: one ``__global__`` kernel per stencil.

A kernel's threads cover the stencil's *parallel* dimensions: the innermost on the grid's x
axis (so that a warp reads consecutive elements of a field contiguous along it), the next on
y, the others flattened on z; y and z are walked in grid-stride loops, so any domain fits the
grid's limits. Each thread computes its point with the same expression lowering as the C
backend (``backends.clike.expressions``: NumPy's casts, wrapping integers, ``concat_where`` as a
branch computed only where chosen), recomputing locals read at shifted positions at each use.

Two shapes of kernel::

    points:   a thread per point of every dimension          (no loop in the thread)
    columns:  a thread per point of all but one dimension,    for x_S in order: body
              looping over that one (the innermost, or a scan's axis)

A stencil that runs scans is always a columns kernel along the scan's axis: each pass of
``backends.loops.plan_sweeps`` walks the axis in its direction with the carries in registers,
and the values a later pass reads are kept in a scratch buffer laid out
``[level][thread]``, so that a warp's stores and loads of one level are contiguous.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from backends.clike.addressing import base_offset, output_stores, parameter_read
from backends.clike.expressions import C_TYPES, ExpressionEmitter, Offsets, PassStorage, literal
from backends.clike.generator import StencilGenerator, StencilSite
from backends.cuda.interface import KernelPlan
from backends.loops import SweepPlan, plan_sweeps
from pipeline.dsl.ir.nodes import Scan
from pipeline.dsl.types import FieldType, ScalarType

__all__ = [
    "PARALLELIZATIONS",
    "KernelCode",
    "KernelShape",
    "fold_block",
    "generate_kernel",
    "thread_axes",
]

#: The shapes a non-scan kernel may take (``CudaTranslation.parallelization``).
PARALLELIZATIONS = ("points", "columns")


@attrs.frozen
class KernelShape:
    """The shape of a program's kernels, shown in the first line of its source.

    Attributes:
        parallelization: ``"points"`` or ``"columns"``.
        narrow_indices: 32-bit indices and offsets.
        grid_covers: one point per thread along the grid's y and z, no grid-stride loops.
    """

    parallelization: str
    narrow_indices: bool = attrs.field(kw_only=True)
    grid_covers: bool = attrs.field(kw_only=True)

    def describe(self) -> str:
        """``points``, ``points, 32-bit indices, one point per thread`` ..."""
        parts = [self.parallelization]
        if self.narrow_indices:
            parts.append("32-bit indices")
        if self.grid_covers:
            parts.append("one point per thread")
        return ", ".join(parts)


@attrs.frozen
class KernelCode:
    """A kernel's CUDA text and how to launch it."""

    plan: KernelPlan
    text: str


def thread_axes(
    parallel: Sequence[str],
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The dimensions on the grid's x, y and z axes: the innermost parallel dimension on x,
    the next on y, the rest (outermost first) flattened on z."""
    dims = tuple(parallel)
    return dims[-1:], dims[-2:-1], dims[:-2]


def fold_block(
    block: tuple[int, int, int],
    threads: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]],
) -> tuple[int, int, int]:
    """``block`` for a kernel whose grid uses fewer axes: an unused axis's threads join the
    axis below it, so a block keeps its number of threads (1x1x1 without parallel dims)."""
    x, y, z = block
    if not threads[0]:
        return (1, 1, 1)
    if not threads[1]:
        return (x * y * z, 1, 1)
    if not threads[2]:
        return (x, y * z, 1)
    return block


class _KernelGenerator(StencilGenerator):
    def __init__(
        self,
        site: StencilSite,
        shape: KernelShape,
        block: tuple[int, int, int],
    ) -> None:
        super().__init__(site, temporaries=False)
        self.itype = "int32_t" if shape.narrow_indices else "int64_t"
        self.grid_covers = shape.grid_covers
        self.sweeps = plan_sweeps(self.stencil)
        if self.sweeps is not None:
            self.sequential: str | None = self.sweeps.axis
        elif shape.parallelization == "columns" and len(self.dims) >= 2:
            self.sequential = self.dims[-1]
        else:
            self.sequential = None
        self.parallel = tuple(d for d in self.dims if d != self.sequential)
        self.threads = thread_axes(self.parallel)
        self.block = fold_block(block, self.threads)
        self.name = f"sf_kernel_{self.index}"

    # -- reads and stores ---------------------------------------------------------------------
    def read(self, body: ExpressionEmitter, name: str, offsets: Offsets) -> str:
        if name in self.definitions:
            return body.value(self.definitions[name], offsets)
        return parameter_read(self.program, self.unit_stride, body, name, offsets, self.parallel)

    def store_outputs(self, body: ExpressionEmitter) -> list[str]:
        return output_stores(self.program, self.stencil, self.unit_stride, body, self.parallel)

    # -- the kernel ---------------------------------------------------------------------------
    def generate(self) -> KernelCode:
        threads = self.block[0] * self.block[1] * self.block[2]
        lines = [
            f'extern "C" __global__ void __launch_bounds__({threads}) '
            f"{self.name}(const sf_args a) {{",
            *self._unpack(),
        ]
        loops, indent = self._thread_loops()
        lines += loops
        lines += self._point_offsets(indent)
        kept: tuple[tuple[str, str], ...] = ()
        if self.sweeps is not None:
            body, kept = self._scan_body(self.sweeps, indent)
        elif self.sequential is not None:
            body = self._column_body(self.sequential, indent)
        else:
            body = self._point_body(indent)
        lines += body
        while indent != "    ":
            indent = indent[:-4]
            lines.append(f"{indent}}}")
        lines.append("}")
        plan = KernelPlan(
            self.name,
            self.index,
            self.dims,
            self.threads,
            self.block,
            self.sequential,
            kept,
            grid_covers=self.grid_covers,
        )
        return KernelCode(plan, "\n".join(lines))

    def _unpack(self) -> list[str]:
        it = self.itype
        narrow = "" if it == "int64_t" else f"({it})"  # the struct's members are 64-bit
        lines = [
            f"    const {it} lo_{d} = {narrow}a.lo{self.index}[{i}], "
            f"hi_{d} = {narrow}a.hi{self.index}[{i}]; (void)lo_{d}; (void)hi_{d};"
            for i, d in enumerate(self.dims)
        ]
        written = {t.name for t in self.stencil.outputs}
        used = self._used_fields()
        for param in self.program.params:
            name = param.name
            if isinstance(param.type, FieldType) and name not in used:
                continue
            if isinstance(param.type, ScalarType):
                ctype = C_TYPES[param.type.dtype]
                lines.append(f"    const {ctype} sc_{name} = a.sc_{name}; (void)sc_{name};")
                continue
            const = "" if name in written else "const "
            ctype = C_TYPES[param.type.dtype]
            lines.append(
                f"    {const}{ctype}* __restrict__ p_{name} = ({const}{ctype}*)a.p_{name}; "
                f"(void)p_{name};"
            )
            for axis in range(len(param.type.dims)):
                stride = f"s_{name}_{axis}"
                lines.append(
                    f"    const {it} {stride} = {narrow}a.s_{name}[{axis}]; (void){stride};"
                )
        return lines

    def _used_fields(self) -> set[str]:
        """The fields the stencil touches (its reads include those through locals)."""
        used = {t.name for t in self.stencil.outputs} | {e.name for e in self.stencil.extents}
        return used | {r.name for r in self.stencil.guarded}

    def _point_offsets(self, indent: str) -> list[str]:
        """``o_<field>``, the thread's point in each field along the parallel dimensions:
        reads add constant multiples of strides to it. Computing every read's offset from the
        indices instead cost the H200 a quarter of its bandwidth (72 registers a thread)."""
        used = self._used_fields()
        lines = []
        for param in self.program.params:
            dims = param.type.dim_names if isinstance(param.type, FieldType) else ()
            if param.name in used and any(d in self.parallel for d in dims):
                unit = self.unit_stride.get(param.name, False)
                offset = base_offset(param.name, dims, unit, self.parallel)
                lines.append(f"{indent}const {self.itype} o_{param.name} = {offset};")
        return lines

    def _thread_loops(self) -> tuple[list[str], str]:
        """The thread's point along the parallel dimensions: x by index (threads past the
        domain return); y and z by index too when the grid covers the domain, else in
        grid-stride loops. Returns the lines and the indentation of the body."""
        x, y, z = self.threads
        it = self.itype
        lines = []
        indent = "    "
        for d in x:
            lines += [
                f"{indent}const {it} x_{d} = lo_{d} + ({it})blockIdx.x * blockDim.x "
                "+ threadIdx.x;",
                f"{indent}if (x_{d} >= hi_{d}) return;",
            ]
        count = " * ".join(f"(hi_{d} - lo_{d})" for d in z)
        if self.grid_covers:
            for d in y:
                lines += [
                    f"{indent}const {it} x_{d} = lo_{d} + ({it})blockIdx.y * blockDim.y "
                    "+ threadIdx.y;",
                    f"{indent}if (x_{d} >= hi_{d}) return;",
                ]
            if z:
                lines += [
                    f"{indent}const {it} z = ({it})blockIdx.z * blockDim.z + threadIdx.z;",
                    f"{indent}if (z >= {count}) return;",
                ]
        else:
            # Past the grid's y and z limits a thread walks on; it almost always runs these
            # loops once: unrolled, nvcc set up four iterations (64-bit divisions and
            # multiplications) in every thread, which left the H200 at 0.3 of its copy
            # bandwidth.
            for d in y:
                lines.append(f"{indent}#pragma unroll 1")
                lines.append(
                    f"{indent}for ({it} x_{d} = lo_{d} + ({it})blockIdx.y * blockDim.y + "
                    f"threadIdx.y; x_{d} < hi_{d}; x_{d} += ({it})gridDim.y * blockDim.y) {{"
                )
                indent += "    "
            if z:
                lines.append(f"{indent}#pragma unroll 1")
                lines.append(
                    f"{indent}for ({it} z = ({it})blockIdx.z * blockDim.z + threadIdx.z; "
                    f"z < {count}; z += ({it})gridDim.z * blockDim.z) {{"
                )
                indent += "    "
        if z:
            lines.append(f"{indent}{it} rest = z; (void)rest;")
            for d in reversed(z[1:]):
                lines.append(f"{indent}const {it} x_{d} = lo_{d} + rest % (hi_{d} - lo_{d});")
                lines.append(f"{indent}rest /= hi_{d} - lo_{d};")
            lines.append(f"{indent}const {it} x_{z[0]} = lo_{z[0]} + rest;")
        return lines, indent

    def _emitter(self, indent: str, scans: PassStorage | None = None) -> ExpressionEmitter:
        return ExpressionEmitter(self.read, indent, scans=scans, index=lambda d: f"x_{d}")

    def _point_body(self, indent: str) -> list[str]:
        body = self._emitter(indent)
        stores = self.store_outputs(body)
        return [*body.lines, *(indent + store for store in stores)]

    def _column_body(self, dim: str, indent: str) -> list[str]:
        inner = indent + "    "
        body = self._emitter(inner)
        stores = self.store_outputs(body)
        return [
            f"{indent}for ({self.itype} x_{dim} = lo_{dim}; x_{dim} < hi_{dim}; ++x_{dim}) {{",
            *body.lines,
            *(inner + store for store in stores),
            f"{indent}}}",
        ]

    def _scan_body(
        self, plan: SweepPlan, indent: str
    ) -> tuple[list[str], tuple[tuple[str, str], ...]]:
        """Each pass along the axis in its direction, carries in registers; the values of
        passes that later ones read go to the kept buffers. Returns the lines and the kept
        buffers (struct member, dtype name)."""
        axis = plan.axis
        keys = [key for _, phase in plan.phases for key in phase]
        numbers = {key: n for n, key in enumerate(keys)}
        last = len(plan.phases) - 1
        lines: list[str] = []
        kept: list[tuple[str, str]] = []
        for key, n in numbers.items():
            if plan.phase_of(key) == last:
                continue
            for i, param in enumerate(key[0].carry):
                member = f"k{self.index}_{n}_{i}"
                kept.append((member, param.type.dtype.name))
                ctype = C_TYPES[param.type.dtype]
                lines.append(f"{indent}{ctype}* __restrict__ k{n}_{i} = ({ctype}*)a.{member};")
        if kept:
            # The thread's slot in a level of the kept buffers: its point, flattened.
            slot = "0"
            count = "1"
            for d in self.parallel:
                slot = f"({slot}) * (hi_{d} - lo_{d}) + (x_{d} - lo_{d})"
                count = f"{count} * (hi_{d} - lo_{d})"
            lines.append(f"{indent}const {self.itype} slot = {slot};")
            lines.append(f"{indent}const {self.itype} threads = {count};")
        kept_index = f"(x_{axis} - lo_{axis}) * threads + slot"
        for phase, (forward, phase_keys) in enumerate(plan.phases):
            inner = indent + "        "
            storage = PassStorage(plan, phase, numbers, kept_index)
            body = self._emitter(inner, storage)
            for key in phase_keys:
                body.sweep(Scan(key[0], key[1]))
            stores = self.store_outputs(body) if phase == last else []
            stores += storage.stores(body.sweeps)
            lines.append(f"{indent}{{")
            for key in phase_keys:
                for i, param in enumerate(key[0].carry):
                    init = literal(key[0].init[i], param.type.dtype)
                    ctype = C_TYPES[param.type.dtype]
                    lines.append(f"{indent}    {ctype} c{numbers[key]}_{i} = {init};")
            it = self.itype
            if forward:
                header = f"for ({it} x_{axis} = lo_{axis}; x_{axis} < hi_{axis}; ++x_{axis})"
            else:
                header = f"for ({it} x_{axis} = hi_{axis} - 1; x_{axis} >= lo_{axis}; --x_{axis})"
            lines.append(f"{indent}    {header} {{")
            lines += body.lines
            lines += [inner + store for store in stores]
            lines += [f"{indent}    }}", f"{indent}}}"]
        return lines, tuple(kept)


def generate_kernel(
    site: StencilSite, shape: KernelShape, *, block: tuple[int, int, int]
) -> KernelCode:
    """The kernel ``sf_kernel_<index>`` of ``shape`` computing ``site``'s stencil over the
    domain in ``a.lo<index>``/``a.hi<index>``, and its launch plan.

    Args:
        shape: how the kernel spreads over threads, the width of its indices (32-bit only
            where every offset the kernel can form fits: the arrays' spans, the caller knows
            them) and whether every launch's grid covers the domain along y and z (each
            extent at most the grid's limit), so that each thread computes one point and no
            grid-stride loops are emitted; the launcher refuses a launch it does not cover.
        block: threads per block along x, y and z.

    Raises:
        NotImplementedError: the stencil's outputs have different dimensions.
    """
    return _KernelGenerator(site, shape, block).generate()
