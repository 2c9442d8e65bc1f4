"""C for a tiled stencil's entry function ``sf_stencil_<index>``: it allocates the
temporaries and hands out the tiles of the domain to ``<name>_tile``, on OpenMP threads when
the domain is large enough. The tile body exists once, so the compiler optimizes (and the
build pays for) it once."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from backends.c.scratch import SCRATCH_C, agree_on_blocks
from backends.c.stencil_code import StencilCode
from backends.c.streaming import STREAM_FENCE_C, STREAM_ROW_C
from backends.c.tile_function import TileFunction, domain_bounds, temporary_width
from backends.c.tile_plan import Temporary, TileLayout
from backends.c.vectors import VECTOR_C
from backends.clike.expressions import C_TYPES

__all__ = ["TileDriver"]


@attrs.frozen
class TileDriver:
    """Writes one tiled stencil's code: its entry function and its tile function.

    Attributes:
        tiles: the emitter of the tile function (and its layout).
    """

    tiles: TileFunction

    @property
    def _layout(self) -> TileLayout:
        return self.tiles.sweeps.layout

    def emit(self) -> StencilCode:
        """Two functions: ``<name>_tile`` computes one tile (temporaries, then outputs);
        ``<name>`` allocates the temporaries and hands out the tiles, on OpenMP threads when
        the domain is large enough."""
        layout = self._layout
        name = layout.name
        temps = list(layout.temporaries.values())
        lines, edges = self.tiles.emit(f"{name}_tile")
        # Hidden: called from the program's own run function, never from outside the object.
        signature = (
            f'__attribute__((visibility("hidden"))) int {name}'
            "(const sf_args* restrict a, const int64_t* lo, const int64_t* hi)"
        )
        lines.append(f"{signature} {{")
        lines += domain_bounds(layout)
        lines.append("    int failed = 0;")
        lines += self._parallel_path(temps)
        lines.append("    } else {")
        lines += self._serial_path(temps)
        lines.append("    }")
        lines.append("    return failed ? -1 : 0;")
        lines.append("}")
        helpers = [SCRATCH_C] if temps else []
        if layout.streamed:
            helpers += [STREAM_FENCE_C, STREAM_ROW_C]
        if layout.vectorized:
            helpers.append(VECTOR_C)
        return StencilCode(
            name, signature, "\n".join(lines), layout.dims, tuple(helpers),
            layout.inner_extent, edges,
        )

    def _parallel_path(self, temps: Sequence[Temporary]) -> list[str]:
        """The test for a large domain and the tiles handed out to OpenMP threads (the
        ``if`` branch, left open for the serial path's ``else``)."""
        layout = self._layout
        outer = layout.dims[:-1]
        tiles = dict.fromkeys(outer, 1)
        for d, size in zip(reversed(outer), reversed(layout.tile_sizes), strict=False):
            tiles[d] = size
        points = " * ".join(f"(hi_{d} - lo_{d})" for d in layout.dims)
        # Small domains skip OpenMP: entering a parallel region costs more than a small
        # stencil, and one tile covering the whole domain fits in cache anyway.
        # One-dimensional stencils have no outer dimension to share among threads: they
        # always take the single-thread path.
        threshold = f"{points} >= {layout.parallel_min_points}" if outer else "0"
        lines = [f"    if ({threshold}) {{"]
        if layout.streamed:
            widths = " + ".join(
                f"(int64_t)sizeof({C_TYPES[layout.field_type(o).dtype]})" for o in layout.streamed
            )
            # Outputs that fit in the cache stay there for whatever reads them next.
            lines.append(
                f"        const int nt = {points} * ({widths}) >= "
                f"(int64_t){layout.streaming_min_bytes};"
            )
        sizes = ", ".join(str(tiles[d]) for d in outer) or "1"
        lines.append(f"        const int64_t tile[{max(1, len(outer))}] = {{{sizes}}};")
        nt_arg = ", nt" if layout.streamed else ""
        temp_args = "".join(f", t_{t.name}" for t in temps)
        # Prefetch on this path only: the single-tile path's data is in cache already.
        call = f"{layout.name}_tile(a, lo, hi, tile, tb, te, 1{nt_arg}{temp_args});"
        if not temps:
            return lines + self._tile_loop(
                "        ", "#pragma omp parallel for schedule(static)", call
            )
        return lines + self._threads_with_temporaries(temps, call)

    def _threads_with_temporaries(self, temps: Sequence[Temporary], call: str) -> list[str]:
        """The parallel region where each thread allocates its temporaries' buffers, then
        takes tiles, unless some thread could not allocate."""
        lines = ["        #pragma omp parallel", "        {"]
        lines += self._allocate(temps, "            ")
        lines += agree_on_blocks("            ", "!sf_block")
        # Tiles with temporaries are compute-heavy: a thread that loses part of its core
        # (another process, the kernel) would hold the whole call back under a static
        # split, so idle threads take the next tile instead. Streams without temporaries
        # keep the static split: a thread's tiles stay contiguous for the prefetchers,
        # and dynamic tiles measured slower there (ADR 0009).
        lines += self._tile_loop("            ", "#pragma omp for schedule(dynamic)", call)
        lines.append("            }")
        lines += _release(temps, "            ")
        lines.append("        }")
        return lines

    def _serial_path(self, temps: Sequence[Temporary]) -> list[str]:
        """The whole domain as one tile, on the calling thread."""
        layout = self._layout
        outer = layout.dims[:-1]
        whole = ", ".join(f"hi_{d} - lo_{d}" for d in outer) or "1"
        lines = [f"        const int64_t tile[{max(1, len(outer))}] = {{{whole}}};"]
        temp_args = "".join(f", t_{t.name}" for t in temps)
        serial = (
            f"{layout.name}_tile(a, lo, hi, tile, lo, hi, 0"
            f"{', 0' if layout.streamed else ''}{temp_args});"
        )
        if not temps:
            return [*lines, f"        {serial}"]
        lines += self._allocate(temps, "        ")
        lines.append("        if (sf_block) {")
        lines.append(f"            {serial}")
        lines.append("        } else { failed = 1; }")
        lines += _release(temps, "        ")
        return lines

    def _tile_loop(self, indent: str, pragma: str, call: str) -> list[str]:
        """One loop over the tiles of the domain (``tile`` per outer dimension, in row-major
        order) that runs ``call`` with ``tb``/``te`` set, under ``pragma``.

        One loop over the tiles' linear index rather than ``collapse`` of one loop per outer
        dimension: OpenMP's schedules split both the same way, but gcc's code for a
        collapsed nest (trip counts, empty-loop tests) costs more to build (ADR 0018).
        """
        outer = self._layout.dims[:-1]
        lines = [
            f"{indent}const int64_t tiles_{d} = (hi_{d} - lo_{d} + tile[{i}] - 1) / tile[{i}];"
            for i, d in enumerate(outer)
        ]
        count = " * ".join(f"tiles_{d}" for d in outer) or "1"
        lines.append(f"{indent}{pragma}")
        lines.append(f"{indent}for (int64_t sf_t = 0; sf_t < {count}; ++sf_t) {{")
        body = indent + "    "
        if outer:
            lines.append(f"{body}int64_t sf_rest = sf_t; (void)sf_rest;")
        for i, d in reversed(list(enumerate(outer))):
            if i == 0:
                lines.append(f"{body}const int64_t tb_{d} = lo_{d} + sf_rest * tile[{i}];")
            else:
                lines.append(
                    f"{body}const int64_t tb_{d} = lo_{d} + sf_rest % tiles_{d} * tile[{i}]; "
                    f"sf_rest /= tiles_{d};"
                )
        starts = ", ".join(f"tb_{d}" for d in outer) or "0"
        ends = (
            ", ".join(
                f"(tb_{d} + tile[{i}] < hi_{d} ? tb_{d} + tile[{i}] : hi_{d})"
                for i, d in enumerate(outer)
            )
            or "0"
        )
        n_outer = max(1, len(outer))
        lines.append(f"{body}const int64_t tb[{n_outer}] = {{{starts}}}, te[{n_outer}] = {{{ends}}};")
        lines.append(f"{body}{call}")
        lines.append(f"{indent}}}")
        return lines

    def _allocate(self, temps: Sequence[Temporary], indent: str) -> list[str]:
        """The thread's buffers of the temporaries, sized for one tile plus their extent, cut
        from its scratch block (``sf_block`` is NULL when out of memory)."""
        if not temps:
            return []
        lines = []
        for temp in temps:
            span = " * ".join(
                str(temp.slots) if d == temp.ring else temporary_width(self._layout, temp, d)
                for d in temp.kept
            )
            lines.append(
                f"{indent}const size_t z_{temp.name} = sf_round64(sizeof({temp.ctype}) * {span});"
            )
        total = " + ".join(f"z_{t.name}" for t in temps)
        lines.append(f"{indent}int sf_owned;")
        lines.append(f"{indent}char* sf_block = sf_scratch({total}, &sf_owned);")
        offset = "0"
        for temp in temps:
            lines.append(
                f"{indent}{temp.ctype}* t_{temp.name} = "
                f"sf_block ? ({temp.ctype}*)(sf_block + {offset}) : NULL;"
            )
            offset = f"{offset} + z_{temp.name}" if offset != "0" else f"z_{temp.name}"
        return lines


def _release(temps: Sequence[Temporary], indent: str) -> list[str]:
    return [f"{indent}if (sf_owned) sf_scratch_free(sf_block);"] if temps else []
