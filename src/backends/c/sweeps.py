"""IR -> C for stencils that run scans: one sweep along the scan's axis per column block.

A scan's value at a point depends on every point before it along the axis, so the axis is
swept in order, while the other dimensions stay independent: the outer ones are shared among
OpenMP threads, and the innermost other dimension is the vector loop inside each step of the
sweep, with the carry of each of its points in a per-thread array::

    for x_P (parallel):                      # the other dimensions but the last
        carry[v] = init                      # for every v
        for x_K in the axis (either way):    # sequential
            for x_V (omp simd):              # the last other dimension
                point values -> new carry -> outputs; carry[v] = new carry

Locals are computed inline at each step (no temporaries: a sweep has no tiles to fill them
over). A stencil whose outputs span only the axis runs one column, on one thread.
"""

from __future__ import annotations

from collections.abc import Mapping

from backends.c.codegen import StencilCode, _StencilGenerator
from backends.c.expressions import C_TYPES, ExpressionEmitter, literal
from backends.loops import scan_axis
from pipeline.dsl.types import float64
from pipeline.ir.nodes import ProgramIR, Stencil

__all__ = ["generate_sweep"]


class _SweepGenerator(_StencilGenerator):
    block = 16

    def generate(self) -> StencilCode:
        sweep = scan_axis(self.stencil)
        assert sweep is not None
        axis, forward = sweep
        others = [d for d in self.dims if d != axis]
        vector = others[-1] if others else None
        parallel = others[:-1]
        slot = f"x_{vector} - b_{vector}" if vector else "0"
        # The loops: over the parallel dimensions and the vector dimension's blocks, the
        # sweep's steps, the block's points (with the body).
        loop_indent = "            " + "    " * (len(parallel) + (1 if vector else 0))
        inner = loop_indent + "    "
        body = ExpressionEmitter(self.read, inner + "    ", carry=lambda n, i: f"c{n}_{i}[{slot}]")
        stores = self._store_outputs(body)
        carries = [
            (f"c{sweep.index}_{i}", C_TYPES[param.type.dtype], value, sweep.operator.init[i])
            for sweep in body.sweeps
            for i, (param, value) in enumerate(
                zip(sweep.operator.carry, sweep.new_carry, strict=True)
            )
        ]
        name = f"sf_stencil_{self.index}"
        signature = (
            f'__attribute__((visibility("hidden"))) int {name}'
            "(const sf_args* restrict a, const int64_t* lo, const int64_t* hi)"
        )
        lines = [f"{signature} {{"]
        lines += [
            f"    const int64_t lo_{d} = lo[{i}], hi_{d} = hi[{i}];" for i, d in enumerate(self.dims)
        ]
        lines += self._unpack()
        points = " * ".join(f"(hi_{d} - lo_{d})" for d in self.dims)
        threaded = f"{points} >= {self.parallel_min_points}" if others else "0"
        lines += [
            "    int failed = 0;",
            f"    #pragma omp parallel if ({threaded})",
            "    {",
        ]
        for carry, ctype, _, _ in carries:
            lines.append(
                f"        {ctype}* restrict {carry} = ({ctype}*)malloc(sizeof({ctype}) * {self.block});"
            )
        have = " && ".join(f"{carry} != NULL" for carry, *_ in carries) or "1"
        lines += [
            f"        if (!({have})) {{",
            "            #pragma omp atomic write",
            "            failed = 1;",
            "        }",
            # Every thread must reach the work-sharing loop or none may.
            "        #pragma omp barrier",
            "        int failed_now;",
            "        #pragma omp atomic read",
            "        failed_now = failed;",
            "        if (!failed_now) {",
        ]
        outer = "            "
        loops = [f"for (int64_t x_{d} = lo_{d}; x_{d} < hi_{d}; ++x_{d}) {{" for d in parallel]
        if vector:
            loops.append(
                f"for (int64_t b_{vector} = lo_{vector}; b_{vector} < hi_{vector}; "
                f"b_{vector} += {self.block}) {{"
            )
        if loops:
            lines.append(f"{outer}#pragma omp for collapse({len(loops)}) schedule(static)")
        for depth, loop in enumerate(loops):
            lines.append(f"{outer}{'    ' * depth}{loop}")
        if vector:
            lines.append(
                f"{loop_indent}const int64_t e_{vector} = b_{vector} + {self.block} < hi_{vector} "
                f"? b_{vector} + {self.block} : hi_{vector};"
            )
        count = f"e_{vector} - b_{vector}" if vector else "1"
        lines.append(f"{loop_indent}for (int64_t v = 0; v < {count}; ++v) {{")
        for carry, ctype, _, init in carries:
            lines.append(f"{loop_indent}    {carry}[v] = ({ctype}){_init_text(init)};")
        lines.append(f"{loop_indent}}}")
        if forward:
            lines.append(
                f"{loop_indent}for (int64_t x_{axis} = lo_{axis}; x_{axis} < hi_{axis}; ++x_{axis}) {{"
            )
        else:
            lines.append(
                f"{loop_indent}for (int64_t x_{axis} = hi_{axis} - 1; x_{axis} >= lo_{axis}; --x_{axis}) {{"
            )
        if vector:
            lines.append(f"{inner}#pragma omp simd")
            lines.append(
                f"{inner}for (int64_t x_{vector} = b_{vector}; x_{vector} < e_{vector}; ++x_{vector}) {{"
            )
        else:
            lines.append(f"{inner}{{")
        lines += body.lines
        lines += [f"{inner}    {store}" for store in stores]
        lines += [f"{inner}    {carry}[{slot}] = {value};" for carry, _, value, _ in carries]
        lines.append(f"{inner}}}")
        lines.append(f"{loop_indent}}}")
        for depth in reversed(range(len(loops))):
            lines.append(f"{outer}{'    ' * depth}}}")
        lines.append("        }")
        lines += [f"        free({carry});" for carry, *_ in carries]
        lines += ["    }", "    return failed ? -1 : 0;", "}"]
        return StencilCode(name, signature, "\n".join(lines), self.dims)


def _init_text(value: bool | int | float) -> str:
    """C text of an initial carry value (cast to the carry's type by the caller)."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return f"{value}LL"
    return literal(value, float64)


def generate_sweep(
    program: ProgramIR,
    stencil: Stencil,
    index: int,
    *,
    unit_stride: Mapping[str, bool],
    parallel_min_points: int,
) -> StencilCode:
    """The C function ``sf_stencil_<index>`` computing ``stencil``, which runs scans, over a
    domain (the same signature and return value as ``codegen.generate_stencil``'s)."""
    return _SweepGenerator(
        program,
        stencil,
        index,
        unit_stride=unit_stride,
        temporaries=False,
        tile_sizes=(1,),
        parallel_min_points=parallel_min_points,
        prefetch_distance=0,
    ).generate()
