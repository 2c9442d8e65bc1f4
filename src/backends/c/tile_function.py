"""C for the function that computes one tile of a stencil (``<name>_tile``: its bounds, its
arguments unpacked, its temporaries' widths and bases, its sweep) and for the edge function
it calls at the tile's edges (``<name>_edges``), which the program builds as a translation
unit of its own."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from backends.c.tile_plan import Temporary, TileLayout, plan_tile
from backends.c.tile_sweep import STREAM_CHUNK, SweepEmitter
from backends.clike.expressions import C_TYPES

__all__ = ["TileFunction", "domain_bounds", "temporary_width"]


@attrs.frozen
class TileFunction:
    """Writes one stencil's tile function and edge function.

    Attributes:
        sweeps: the emitter of the tile's sweep (and its layout).
        unpacked: the lines that unpack the argument struct ``a`` into locals.
    """

    sweeps: SweepEmitter
    unpacked: Sequence[str]

    def emit(self, function: str) -> tuple[list[str], str]:
        """The function ``function`` computing one tile (temporaries, then outputs), and the
        definition of the edge function it calls (``""``: none)."""
        layout = self.sweeps.layout
        temps = list(layout.temporaries.values())
        streaming = ", const int nt" if layout.streamed else ""
        lines = [
            f"SF_NOCLONE __attribute__((noinline)) static void {function}(const sf_args* restrict a, "
            "const int64_t* lo, const int64_t* hi, const int64_t* tile, const int64_t* tb, "
            f"const int64_t* te, const int pf{streaming}{_temp_params(temps)}) {{",
            "    (void)pf;",
        ]
        lines += self._prologue(temps)
        plan = plan_tile(layout)
        if plan.prefetches:
            lines += self.sweeps.prefetch_bytes(plan.prefetches)
        sweep, edge_loops, edges_stream = self.sweeps.sweep(plan, "    ")
        lines += sweep
        if layout.streamed:
            # Streaming stores are weakly ordered: make them visible before the tile ends.
            lines.append("    if (nt) sf_stream_fence();")
        lines.append("}")
        if not edge_loops:
            return lines, ""
        r = layout.dims[-2]
        edges = [
            f"{self._edges_signature(temps)} {{",
            *self._prologue(temps, streamed=edges_stream),
            *(
                self.sweeps.prefetch_bytes(plan.prefetches)
                if plan.prefetches
                else ["    (void)pf;"]
            ),
            f"    for (int64_t x_{r} = from_{r}; x_{r} < to_{r}; ++x_{r}) {{",
            *self.sweeps.prefetch_rows(plan.prefetches, "        "),
            *edge_loops,
            "    }",
            "}",
        ]
        return [f"{self._edges_signature(temps)};", *lines], "\n".join(edges)

    def _edges_signature(self, temps: Sequence[Temporary]) -> str:
        """The edge function: the statements active at the tile's edges, for the sweep
        positions ``[from_r, to_r)`` along the innermost outer dimension ``r`` (at ``x_<d>``
        along the others). Not inlined into the tile (it is meant for a unit of its own)."""
        layout = self.sweeps.layout
        *others, r = layout.dims[:-1]
        positions = "".join(f", const int64_t x_{d}" for d in others)
        positions += f", const int64_t from_{r}, const int64_t to_{r}"
        streaming = ", const int nt" if layout.streamed else ""
        return (
            'SF_NOCLONE __attribute__((noinline, visibility("hidden"))) void '
            f"{layout.name}_edges(const sf_args* restrict a, const int64_t* lo, "
            "const int64_t* hi, const int64_t* tile, const int64_t* tb, const int64_t* te, "
            f"const int pf{positions}{streaming}{_temp_params(temps)})"
        )

    def _prologue(self, temps: Sequence[Temporary], streamed: bool = True) -> list[str]:
        """The tile's bounds, the unpacked arguments, the temporaries' widths and bases,
        and (``streamed``) the streamed outputs' row buffers."""
        layout = self.sweeps.layout
        outer, inner = layout.dims[:-1], layout.dims[-1]
        lines = domain_bounds(layout)
        lines += [
            f"    const int64_t tb_{d} = tb[{i}], te_{d} = te[{i}];" for i, d in enumerate(outer)
        ]
        lines += self.unpacked
        for temp in temps:
            for d in temp.kept:
                if d == temp.ring:
                    continue
                width = temporary_width(layout, temp, d)
                lines.append(
                    f"    const int64_t w_{temp.name}_{d} = {width}; (void)w_{temp.name}_{d};"
                )
        block_lo = {d: f"tb_{d}" for d in outer} | {inner: f"lo_{inner}"}
        for temp in temps:
            lines += [
                f"    const int64_t b_{temp.name}_{d} = {block_lo[d]} + {temp.extent[d][0]};"
                for d in temp.kept
                if d != temp.ring
            ]
        for output in layout.streamed if streamed else ():
            lines.append(
                f"    {C_TYPES[layout.field_type(output).dtype]} o_{output}[{STREAM_CHUNK}] "
                "__attribute__((aligned(64)));"
            )
        return lines


def _temp_params(temps: Sequence[Temporary]) -> str:
    return "".join(f", {t.ctype}* restrict t_{t.name}" for t in temps)


def domain_bounds(layout: TileLayout) -> list[str]:
    """``lo_<d>``/``hi_<d>``: the domain's bounds, with ``hi`` of the inner dimension a
    constant distance from ``lo`` when the extent is fixed (the check refuses others)."""
    inner = layout.dims[-1]
    lines = []
    for i, d in enumerate(layout.dims):
        high = (
            f"lo_{d} + {layout.inner_extent}" if d == inner and layout.inner_extent else f"hi[{i}]"
        )
        lines.append(f"    const int64_t lo_{d} = lo[{i}], hi_{d} = {high};")
    return lines


def temporary_width(layout: TileLayout, temp: Temporary, dim: str) -> str:
    """The points of ``temp``'s buffer along ``dim`` (not its ring dimension): the
    tile's, or the domain's along the inner dimension, plus the temporary's reach."""
    grow = temp.extent[dim][1] - temp.extent[dim][0]
    if dim == layout.dims[-1]:
        return f"(hi_{dim} - lo_{dim} + {grow})"
    return f"(tile[{layout.dims.index(dim)}] + {grow})"
