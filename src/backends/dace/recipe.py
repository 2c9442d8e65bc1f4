"""How the SDFG translation lays out a CPU stencil's temporaries, and the DaCe transformations
it applies to the SDFG after building it.

The translation builds each stencil as a dataflow graph in one state (its parallel variant;
the sequential one is a copy of it once transformed). Where it keeps temporaries, that graph
is one map per temporary writing a transient over the domain plus the temporary's reach,
read by the maps after it, then the outputs' map: the graph a DaCe user starts from.
``SDFGRecipe`` says what becomes of it:

- ``Fusion.INLINE`` (the default): no transients; each stencil is one map whose row tasklet
  computes every temporary where it is read, in the same loop as the outputs, each distinct
  (temporary, shift) value once per point (the expression emitter shares them), like the
  translation's ``temporaries=False``. DaCe has nothing to transform: the fastest call and
  the shortest cold compile measured (ADR 0008).
- ``Fusion.OTF`` (with ``Tasklets.POINTS``, named ``otf``): DaCe's ``OTFMapFusion`` ("on the
  fly" map fusion), applied consumers first until nothing matches (``backends.dace.otf``):
  each producer map is replicated into its consumer, once per distinct access, so a stencil
  becomes one map over every dimension whose body recomputes its temporaries point by point,
  through scalars in the map's scope; the whole-domain transients disappear. The compiler
  vectorizes the innermost dimension behind run-time alias checks: hdiff at 0.8-1.0x the
  speed of ``INLINE``, its cold compile 1.2-1.7x (ADR 0008, fourth amendment).
  With ``Tasklets.ROWS`` (``otf+stack``, ``otf+heap``) every replica is a row loop of its
  own, its row stored in the fused map's scope (``row_storage``): half the speed.
- ``Fusion.TILED``: DaCe's ``StencilTiling`` and ``SubgraphFusion`` (``backends.dace
  .tiling``): every map strip-mined by ``tile``, the inner tiles grown by the halo their
  readers need and nested under one tile map, each transient shrunk to one tile on the stack.
  Temporaries are computed once per point plus the halo: about 0.7x the speed of ``INLINE`` on
  the 2-core Zen 4 of ADR 0008 (recomputing is cheaper there than the round trip through the
  cache), and the longest cold compile.
- ``Fusion.NONE``: the graph as built (one map per temporary, whole-domain transients in the
  memory the loader provides).

The recipe is part of the translation's fingerprint and its name is recorded in the lowered
source's metadata (``SDFGInterface.recipe``).
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

__all__ = ["Fusion", "RowStorage", "SDFGRecipe", "Tasklets", "apply_recipe"]


class Fusion(enum.Enum):
    """How a stencil's maps are fused."""

    #: one map per temporary, whole-domain transients
    NONE = "none"
    #: ``OTFMapFusion``: producers recomputed inside their consumers
    OTF = "otf"
    #: temporaries computed where they are read, in the outputs' loop (no transients)
    INLINE = "inline"
    #: ``StencilTiling`` + ``SubgraphFusion``: one tiled map, transients of one tile
    TILED = "tiled"


class Tasklets(enum.Enum):
    """What one tasklet of a CPU stencil with temporaries computes."""

    #: one point: every map spans all the stencil's dimensions, and the compiler vectorizes
    #: the innermost one, a plain loop inside the OpenMP-parallel outer dimensions
    POINTS = "points"
    #: a row along the innermost dimension, in a loop marked ``omp simd`` (the map spans the
    #: outer dimensions; the connectors are row pointers)
    ROWS = "rows"


class RowStorage(enum.Enum):
    """Where the rows that fusion leaves in a fused map's scope live (``Tasklets.ROWS``)."""

    #: on the stack (DaCe's ``StorageType.Register(force=True)``: a variable-length array
    #: per iteration of the map, as long as the row)
    STACK = "stack"
    #: DaCe's default for a transient with a symbolic size in a map's scope: allocated and
    #: freed on the heap at every iteration
    HEAP = "heap"


def _check_tile(recipe: SDFGRecipe, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not value or any(not isinstance(size, int) or size < 1 for size in value):
        raise ValueError(f"SDFGRecipe.tile: expected positive integer sizes, got {value!r}")


def _check_tasklets(recipe: SDFGRecipe, attribute: attrs.Attribute[Any], value: Any) -> None:
    if recipe.fusion == Fusion.TILED and value != Tasklets.POINTS:
        raise ValueError(
            "SDFGRecipe(fusion=Fusion.TILED) needs tasklets=Tasklets.POINTS: StencilTiling "
            "requires every memlet dimension to be indexed by one map parameter"
        )


@attrs.frozen
class SDFGRecipe:
    """The transformations applied to a CPU SDFG (see the module's docstring).

    Attributes:
        fusion: how a stencil's maps are fused (``INLINE``: whether there are maps to fuse).
        tasklets: what one tasklet of a stencil with temporaries computes (a stencil
            without temporaries always gets row tasklets).
        row_storage: where the rows left in a fused map's scope live (``OTF`` with rows).
        tile: ``TILED`` only: the tile's size along the stencil's dimensions, innermost
            (contiguous) last; a stencil with more dimensions repeats the first size for the
            outer ones.

    Raises:
        ValueError: an empty ``tile`` or a size under 1; ``TILED`` with row tasklets.
    """

    fusion: Fusion = Fusion.INLINE
    tasklets: Tasklets = attrs.field(default=Tasklets.POINTS, validator=_check_tasklets)
    row_storage: RowStorage = RowStorage.STACK
    tile: tuple[int, ...] = attrs.field(default=(8, 8, 64), converter=tuple, validator=_check_tile)

    @property
    def name(self) -> str:
        """A short, readable name: ``otf``, ``inline``, ``none``, ``tiled8x8x64``, and with
        row tasklets ``otf+stack``, ``otf+heap``, ``none+rows``."""
        fusion: str = self.fusion.value
        if self.fusion == Fusion.TILED:
            return fusion + "x".join(map(str, self.tile))
        if self.fusion == Fusion.INLINE or self.tasklets == Tasklets.POINTS:
            return fusion
        if self.fusion == Fusion.OTF:
            return f"{fusion}+{self.row_storage.value}"
        return f"{fusion}+rows"

    @property
    def keeps_temporaries(self) -> bool:
        """Whether the translation builds temporaries as transients computed by their own
        maps (False: it computes them inline, in the outputs' tasklet)."""
        return self.fusion != Fusion.INLINE

    @property
    def tasklet_rows(self) -> bool:
        """Whether a CPU stencil with temporaries gets row tasklets."""
        return self.tasklets == Tasklets.ROWS

    def tile_for(self, rank: int) -> tuple[int, ...]:
        """The tile sizes for a stencil over ``rank`` dimensions, outermost first."""
        if rank <= len(self.tile):
            return self.tile[len(self.tile) - rank :]
        return (self.tile[0],) * (rank - len(self.tile)) + self.tile


def apply_recipe(dace: Any, sdfg: Any, recipe: SDFGRecipe) -> int:
    """Apply ``recipe`` to ``sdfg`` in place; return how many transformations were applied.

    Transients that no access node uses any more (the whole-domain ones after fusion) are
    removed, so that neither the SDFG nor the external memory the loader provides keeps them.
    ``NONE`` and ``INLINE`` apply nothing (``INLINE`` acts in the translation).
    """
    if recipe.fusion == Fusion.TILED:
        from backends.dace.tiling import tile_stencils  # noqa: PLC0415  (imports DaCe)

        fused = tile_stencils(dace, sdfg, recipe.tile_for)
        _remove_unused_transients(dace, sdfg)
        return fused
    if recipe.fusion != Fusion.OTF:
        return 0
    from backends.dace.otf import fuse_on_the_fly  # noqa: PLC0415  (imports DaCe)

    before = set(sdfg.arrays)
    applied = fuse_on_the_fly(dace, sdfg)
    _remove_unused_transients(dace, sdfg)
    if recipe.tasklet_rows and recipe.row_storage == RowStorage.HEAP:
        return applied
    # Left to its default, a scalar in a sequential map's scope lands on the heap: allocated
    # and freed at every point (a row: at every column).
    stack = (
        dace.StorageType.Register(force=True) if recipe.tasklet_rows else dace.StorageType.Register
    )
    for name in set(sdfg.arrays) - before:
        data = sdfg.arrays[name]
        if data.transient and data.lifetime == dace.AllocationLifetime.Scope:
            data.storage = stack
    return applied


def _remove_unused_transients(dace: Any, sdfg: Any) -> None:
    """Remove the transients of ``sdfg`` that no access node uses any more."""
    used = {
        node.data
        for node, _ in sdfg.all_nodes_recursive()
        if isinstance(node, dace.nodes.AccessNode)
    }
    for name, data in list(sdfg.arrays.items()):
        if data.transient and name not in used:
            sdfg.remove_data(name, validate=False)
