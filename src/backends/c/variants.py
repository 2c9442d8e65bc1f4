"""The code variants of a tiled stencil, and the record of which one a build uses.

A stencil whose locals are read at shifted positions (hdiff's ``lap``, ``flx``, ``fly``) can
be computed two ways: *temporaries*, each local stored once per tile into a buffer and read
back, or *recomputation*, each local computed again at every use. Which is faster depends on
the machine (ADR 0009): buffers save arithmetic, recomputation saves loads, stores and the
tile edges. The tile shape matters as well. Every tiled stencil, one without such locals
(laplacian) included, also has a memory side: whether the sweep prefetches the rows ahead
(``prefetch_distance``) and whether its outputs are written with *streaming* (non-temporal)
stores on large domains, which skip reading each output line into the cache before it is
overwritten. ``candidates`` lists the variants worth measuring for one stencil, within what
the translation's options fix; a ``Choice`` says which variant a stencil's code uses and why,
and is what a choice record stores.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from backends.loops import StencilLayout
from pipeline.dsl.ir.nodes import ProgramIR, Stencil

__all__ = [
    "DEFAULT_PREFETCH_DISTANCE",
    "DEFAULT_TILE_SIZES",
    "DEFAULT_VARIANT",
    "OUTER_PREFETCH_DISTANCE",
    "OUTER_PREFETCH_TILE_SIZES",
    "PREFETCH_CANDIDATES",
    "ROW_PREFETCH_DISTANCE",
    "ROW_TILE_CANDIDATES",
    "TILE_CANDIDATES",
    "Choice",
    "Variant",
    "VariantOptions",
    "candidates",
    "choose_unmeasured",
]

#: The tile extents of the two innermost outer dimensions when nothing else decides.
DEFAULT_TILE_SIZES = (8, 32)

#: The tile shapes measured for whole-tile temporaries and for recomputation (ADR 0009
#: gives the figures). 8x32 was measured too until it had lost or tied on both machines
#: measured (temporaries 16x64 ahead by 4-11 %, recomputation within 1-3 %): each shape is
#: two more candidates to compile in a stencil's first build.
TILE_CANDIDATES: tuple[tuple[int, ...], ...] = ((16, 64),)

#: The tile shapes measured for temporaries kept in rows: the rows cost no more memory for a
#: longer tile along the outermost outer dimension, where a longer tile recomputes less of
#: the temporaries' reach.
ROW_TILE_CANDIDATES: tuple[tuple[int, ...], ...] = ((256, 32),)

#: Rows ahead along the outermost outer dimension that temporaries in rows prefetch, when
#: nothing else decides (their sweep crosses a tile's width per row: ADR 0009).
ROW_PREFETCH_DISTANCE = 2

#: Sweep positions the rows are prefetched ahead when nothing else decides.
DEFAULT_PREFETCH_DISTANCE = 4

#: The prefetch distances measured for a stencil without shifted locals (with them, the
#: default only: ADR 0009 found prefetching neutral to helpful there, and the candidates'
#: compilation is what a first build pays for).
PREFETCH_CANDIDATES = (DEFAULT_PREFETCH_DISTANCE, 0)

#: The tiles of the candidate of a stencil without shifted locals that prefetches rows ahead
#: along the tile's outermost dimension into L2 (``Variant.prefetch_outer``): long along it,
#: so that the rows ahead are the tile's own, and narrow along the next, so that the rows of
#: the positions just behind stay in L1 (on the Zen 4 VM one thread ran laplacian's large
#: grid 1.6x faster than with the default tiles and prefetch: ADR 0009, 2026-12-05 notes).
OUTER_PREFETCH_TILE_SIZES = (64, 16)

#: Rows ahead, beyond the farthest row read, that ``OUTER_PREFETCH_TILE_SIZES`` prefetches.
OUTER_PREFETCH_DISTANCE = 1


@attrs.frozen
class Variant:
    """One way to generate a tiled stencil.

    Attributes:
        temporaries: locals read at shifted positions go through per-tile buffers (True) or
            are recomputed at every use (False).
        tile_sizes: tile extents of the outer dimensions (the last ones).
        prefetch_distance: sweep positions ahead that the parallel path prefetches the rows
            it will touch first (0: no software prefetching): along the innermost outer
            dimension into L1, or with ``temporary_rows`` (the outermost) or
            ``prefetch_outer`` (the tile's outermost) along another one into L2.
        streaming_stores: on the parallel path of a domain whose outputs exceed half the
            last-level cache, outputs contiguous along the inner dimension are written with
            non-temporal stores (and not prefetched).
        temporary_rows: with ``temporaries``, each buffer holds only the rows the tile's
            sweep still reads (``backends.c.tile_plan``: a ring of a few positions along the
            outermost outer dimension where a read lags its store), instead of the whole
            tile: small enough for L1/L2 whatever the tile's length along that dimension.
        prefetch_outer: prefetch rows ahead into L2 along the first outer dimension the
            tile covers (the outermost, for a stencil over two outer dimensions), instead of
            positions ahead along the innermost outer one into L1. A demand miss waits in
            the core's window; an L2 prefetch far enough ahead lets the sweep's arithmetic
            run while the next rows arrive.
    """

    temporaries: bool
    tile_sizes: tuple[int, ...]
    prefetch_distance: int = DEFAULT_PREFETCH_DISTANCE
    streaming_stores: bool = False
    temporary_rows: bool = False
    prefetch_outer: bool = False

    def describe(self) -> str:
        """In words: ``temporaries, tiles 8x32, prefetch 4``, ``temporary rows, tiles
        256x32, prefetch 4, streaming stores``, ``temporaries, tiles 64x16, prefetch 1 along
        the outermost`` or ``recompute, tiles 16x64, no prefetch``."""
        if not self.temporaries:
            how = "recompute"
        else:
            how = "temporary rows" if self.temporary_rows else "temporaries"
        text = f"{how}, tiles {'x'.join(str(size) for size in self.tile_sizes)}, "
        text += f"prefetch {self.prefetch_distance}" if self.prefetch_distance else "no prefetch"
        if self.prefetch_outer and self.prefetch_distance:
            text += " along the outermost"
        if self.streaming_stores:
            text += ", streaming stores"
        return text


#: The variant of an automatic translation that measures nothing (no tuning given), for a
#: stencil without shifted locals; one with them takes the first of ``candidates``
#: (temporaries at ``TILE_CANDIDATES[0]``).
DEFAULT_VARIANT = Variant(True, DEFAULT_TILE_SIZES)


@attrs.frozen
class Choice:
    """Which variant one stencil's code uses, and how that was decided.

    Attributes:
        variant: the variant used.
        how: ``"given"`` (the translation's options fix it), ``"measured"``, ``"default"``
            (automatic, but nothing was measured: ``reason`` says why).
        reason: why nothing was measured, or on what the measurement ran.
        timings: for ``"measured"``, each candidate with its best wall-clock and median
            processor time per call in seconds (processor time: all threads together), in
            the order measured. They stay in the choice record: the generated code and its
            key hold ``decision()`` only, so machines of one identity that measured apart
            build the same code.
    """

    variant: Variant
    how: str
    reason: str = ""
    timings: tuple[tuple[Variant, float, float], ...] = ()

    def decision(self) -> Choice:
        """This choice without its timings: what the generated code depends on."""
        return attrs.evolve(self, timings=())

    def describe(self) -> str:
        """One line for the generated code: the variant and how it was chosen (no figures:
        see ``figures``)."""
        text = f"{self.variant.describe()} ({self.how}"
        if self.reason:
            text += f": {self.reason}"
        return text + ")"

    def figures(self) -> str:
        """Each candidate's median processor time per call, in words (empty when nothing was
        measured)."""
        return "; ".join(
            f"{v.describe()} {cpu * 1e3:.2f} ms ({wall * 1e3:.2f} ms wall)"
            for v, wall, cpu in self.timings
        )


@attrs.frozen
class VariantOptions:
    """What a translation's options fix of a stencil's variant: each field as
    ``Variant``'s, None where the candidates (and the measurement) decide."""

    temporaries: bool | None = None
    tile_sizes: tuple[int, ...] | None = None
    prefetch_distance: int | None = None
    streaming_stores: bool | None = None
    temporary_rows: bool | None = None
    prefetch_outer: bool | None = None

    @property
    def settled(self) -> bool:
        """Whether the options fix the way, the tiles, the distance and the stores (a given
        tile shape settles ``temporary_rows``; ``prefetch_outer`` is then not a candidate)."""
        return None not in (
            self.temporaries, self.tile_sizes, self.prefetch_distance, self.streaming_stores
        )


def candidates(
    has_temporaries: bool,
    options: VariantOptions = VariantOptions(),
    tile_candidates: Sequence[tuple[int, ...]] = TILE_CANDIDATES,
    row_tile_candidates: Sequence[tuple[int, ...]] = ROW_TILE_CANDIDATES,
    outer_dimensions: int = 2,
) -> tuple[Variant, ...]:
    """The variants of a stencil worth measuring, within what ``options`` fix, the first one
    being what an unmeasured choice uses.

    Every stencil gets both store kinds (``streaming_stores``). A stencil with temporaries
    (``has_temporaries``) also gets three ways of computing its locals: whole-tile buffers
    and recomputation at the tile shapes of ``tile_candidates`` and the default prefetch
    distance, buffers of rows (``temporary_rows``) at those of ``row_tile_candidates`` and
    ``ROW_PREFETCH_DISTANCE``. ``temporary_rows`` True or False keeps one kind of buffer;
    left open with ``tile_sizes`` given, it means whole-tile buffers (rows have tile
    shapes of their own). One without them generates the same code either way and streams
    its fields once whatever the tiles: the default tiles, and the distances of
    ``PREFETCH_CANDIDATES`` instead (prefetching cost laplacian a tenth on one machine and
    gained hdiff a fifth on another, ADR 0009); with tiles, distance and ``prefetch_outer``
    open and two outer dimensions or more (``outer_dimensions``), also
    ``OUTER_PREFETCH_TILE_SIZES`` prefetching along the outermost dimension of the tile.
    ``prefetch_outer=True`` makes every candidate prefetch along it (at
    ``OUTER_PREFETCH_TILE_SIZES`` where the tiles are open for a stencil without shifted
    locals, and ``OUTER_PREFETCH_DISTANCE`` rows ahead where the distance is open).
    """
    stores = (False, True) if options.streaming_stores is None else (options.streaming_stores,)
    if not has_temporaries:
        return _without_shifted_locals(options, stores, outer_dimensions)
    ways: list[tuple[bool, bool]] = []
    for way in (True, False) if options.temporaries is None else (options.temporaries,):
        if not way:
            ways.append((False, False))
            continue
        # Rows have tile shapes of their own: a given shape means whole-tile buffers,
        # unless rows are asked for too.
        if options.temporary_rows is None:
            given = options.tile_sizes is not None
            ways += [(True, False)] if given else [(True, False), (True, True)]
        else:
            ways.append((True, options.temporary_rows))
    outer = bool(options.prefetch_outer)
    found = []
    for store in stores:
        for way, rows in ways:
            shapes = row_tile_candidates if rows else tile_candidates
            distance = options.prefetch_distance
            if distance is None and rows:
                distance = ROW_PREFETCH_DISTANCE
            elif distance is None:
                distance = OUTER_PREFETCH_DISTANCE if outer else DEFAULT_PREFETCH_DISTANCE
            for shape in tuple(shapes) if options.tile_sizes is None else (options.tile_sizes,):
                found.append(Variant(way, shape, distance, store, rows, outer))
    return tuple(found)


def _without_shifted_locals(
    options: VariantOptions, stores: tuple[bool, ...], outer_dimensions: int
) -> tuple[Variant, ...]:
    way = True if options.temporaries is None else options.temporaries
    if options.prefetch_outer:
        shape = options.tile_sizes or OUTER_PREFETCH_TILE_SIZES
        ahead = options.prefetch_distance
        ahead = OUTER_PREFETCH_DISTANCE if ahead is None else ahead
        return tuple(Variant(way, shape, ahead, store, prefetch_outer=True) for store in stores)
    shape = options.tile_sizes or DEFAULT_TILE_SIZES
    given = options.prefetch_distance
    distances = PREFETCH_CANDIDATES if given is None else (given,)
    outer = options.prefetch_outer is None and options.tile_sizes is None and given is None
    outer = outer and outer_dimensions > 1
    found = []
    for store in stores:
        found += [Variant(way, shape, distance, store) for distance in distances]
        if outer:
            found.append(
                Variant(way, OUTER_PREFETCH_TILE_SIZES, OUTER_PREFETCH_DISTANCE, store,
                        prefetch_outer=True)
            )
    return tuple(found)


def choose_unmeasured(
    program: ProgramIR, stencil: Stencil, options: VariantOptions
) -> Choice | tuple[Variant, ...]:
    """The choice for ``stencil`` when ``options`` leave one candidate, else the candidates
    to measure (the first is the default)."""
    layout = StencilLayout.of(program, stencil, temporaries=True)
    found = candidates(bool(layout.temporaries), options, outer_dimensions=len(layout.dims) - 1)
    if len(found) > 1:
        return found
    if options.settled:
        return Choice(found[0], "given")
    return Choice(found[0], "default", "one candidate")
