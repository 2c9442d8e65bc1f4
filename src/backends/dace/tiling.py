"""Recipe ``Fusion.TILED``: DaCe's stencil tiling and subgraph fusion of a stencil's maps.

The translation builds a stencil with temporaries as one state per variant: one map per
temporary over the domain plus its reach, writing a whole-domain transient, and the outputs'
map reading those transients at shifts. DaCe's ``StencilTiling`` strip-mines every map of
the state with the same tile and grows each inner tile by the halo its readers need (the
values at a tile's border are computed by both neighbours); ``SubgraphFusion`` then nests
the inner maps under one tile map and shrinks each transient to one tile, allocated in the
tile map's scope. The result is the classic tiled-temporaries schedule of the DaCe/GT4Py
papers: temporaries computed once per point (plus the halo), read back from a tile that
stays in cache.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["tile_stencils"]


def tile_stencils(dace: Any, sdfg: Any, tile_for: Callable[[int], tuple[int, ...]]) -> int:
    """Tile and fuse every state of ``sdfg`` whose top-level maps form a stencil DaCe can
    tile (``StencilTiling.can_be_applied``); return how many states were fused.

    ``tile_for(rank)`` gives the tile sizes for maps over ``rank`` dimensions. A state
    DaCe refuses keeps its maps and whole-domain transients (the ``NONE`` graph). The
    fused transients live on the stack of the tile's iteration; the tile map keeps the
    schedule of the maps it replaces, and a parallel one is collapsed over all its
    dimensions (the tiles are the units of work). The whole-domain transients the fusion
    replaced stay in ``sdfg.arrays``, unused, for the caller to remove.
    """
    from dace.sdfg.graph import SubgraphView  # noqa: PLC0415  (optional package)
    from dace.transformation.subgraph import (  # noqa: PLC0415  (optional package)
        StencilTiling,
        SubgraphFusion,
        helpers,
    )

    fused = 0
    for state in list(sdfg.states()):
        maps = [n for n in state.nodes() if isinstance(n, dace.nodes.MapEntry)]
        if len(maps) < 2 or any(state.entry_node(m) is not None for m in maps):
            continue
        schedule = maps[0].map.schedule
        whole = SubgraphView(state, state.nodes())
        tiling = StencilTiling()
        tiling.setup_match(whole, state.parent_graph.cfg_id, state.block_id)
        if not tiling.can_be_applied(sdfg, whole):
            continue
        tiling.strides = tile_for(len(maps[0].map.params))
        tiling.schedule = dace.ScheduleType.Sequential
        with warnings.catch_warnings():
            # It warns for every dimension without a stencil pattern (K in hdiff).
            warnings.filterwarnings("ignore", message="StencilTiling::")
            tiling.apply(sdfg)
        tiles = helpers.subgraph_from_maps(sdfg, state, tiling._outer_entries)
        fusion = SubgraphFusion()
        fusion.setup_match(tiles, state.parent_graph.cfg_id, state.block_id)
        if not fusion.can_be_applied(sdfg, tiles):
            raise RuntimeError(
                f"SubgraphFusion refused the maps StencilTiling tiled in {state.label!r} "
                f"of {sdfg.name!r}"
            )
        fusion.transient_allocation = dace.StorageType.Register
        fusion.schedule_innermaps = dace.ScheduleType.Sequential
        fusion.apply(sdfg)
        outer = fusion._global_map_entry.map
        outer.schedule = schedule
        if schedule == dace.ScheduleType.CPU_Multicore:
            outer.collapse = len(outer.params)
        fused += 1
    return fused
