"""The code variants of a tiled stencil, and the record of which one a build uses.

A stencil whose locals are read at shifted positions (hdiff's ``lap``, ``flx``, ``fly``) can
be computed two ways: *temporaries*, each local stored once per tile into a buffer and read
back, or *recomputation*, each local computed again at every use. Which is faster depends on
the machine (ADR 0009): buffers save arithmetic, recomputation saves loads, stores and the
tile edges. The tile shape matters as well. ``candidates`` lists the variants worth
measuring for one stencil, within what the translation's options fix; a ``Choice`` says
which variant a stencil's code uses and why, and is what a choice record stores.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from backends.loops import StencilLayout
from pipeline.ir.nodes import ProgramIR, Stencil

__all__ = [
    "DEFAULT_TILE_SIZES",
    "DEFAULT_VARIANT",
    "TILE_CANDIDATES",
    "Choice",
    "Variant",
    "candidates",
    "choose_unmeasured",
]

#: The tile extents of the two innermost outer dimensions when nothing else decides.
DEFAULT_TILE_SIZES = (8, 32)

#: The tile shapes measured for each way of computing locals (ADR 0009 gives the figures).
TILE_CANDIDATES: tuple[tuple[int, ...], ...] = ((8, 32), (16, 64))


@attrs.frozen
class Variant:
    """One way to generate a tiled stencil.

    Attributes:
        temporaries: locals read at shifted positions go through per-tile buffers (True) or
            are recomputed at every use (False).
        tile_sizes: tile extents of the outer dimensions (the last ones).
    """

    temporaries: bool
    tile_sizes: tuple[int, ...]

    def describe(self) -> str:
        """In words: ``temporaries, tiles 8x32`` or ``recompute, tiles 16x64``."""
        how = "temporaries" if self.temporaries else "recompute"
        return f"{how}, tiles {'x'.join(str(size) for size in self.tile_sizes)}"


#: The variant of an automatic translation that measures nothing (no tuning given).
DEFAULT_VARIANT = Variant(True, DEFAULT_TILE_SIZES)


@attrs.frozen
class Choice:
    """Which variant one stencil's code uses, and how that was decided.

    Attributes:
        variant: the variant used.
        how: ``"given"`` (the translation's options fix it), ``"measured"``, ``"default"``
            (automatic, but nothing was measured: ``reason`` says why).
        reason: why nothing was measured, or on what the measurement ran.
        timings: for ``"measured"``, each candidate with its best wall-clock and processor
            time per call in seconds (processor time: all threads together), in the order
            measured.
    """

    variant: Variant
    how: str
    reason: str = ""
    timings: tuple[tuple[Variant, float, float], ...] = ()

    def describe(self) -> str:
        """One line for the generated code: the variant, how it was chosen, the figures."""
        text = f"{self.variant.describe()} ({self.how}"
        if self.reason:
            text += f": {self.reason}"
        text += ")"
        if self.timings:
            figures = "; ".join(
                f"{v.describe()} {cpu * 1e3:.2f} ms ({wall * 1e3:.2f} ms wall)"
                for v, wall, cpu in self.timings
            )
            text += f"; best processor time per call: {figures}"
        return text


def candidates(
    has_temporaries: bool,
    temporaries: bool | None,
    tile_sizes: tuple[int, ...] | None,
    tile_candidates: Sequence[tuple[int, ...]] = TILE_CANDIDATES,
) -> tuple[Variant, ...]:
    """The variants of a stencil worth measuring, within what the options fix (``None``:
    free), the first one being what an unmeasured choice uses.

    A stencil without temporaries (``has_temporaries`` False) generates the same code either
    way and streams its fields once whatever the tiles: it has one candidate, nothing to
    measure.
    """
    if not has_temporaries:
        return (Variant(True if temporaries is None else temporaries,
                        tile_sizes or DEFAULT_TILE_SIZES),)
    ways = (True, False) if temporaries is None else (temporaries,)
    shapes = tuple(tile_candidates) if tile_sizes is None else (tile_sizes,)
    return tuple(Variant(way, shape) for way in ways for shape in shapes)


def choose_unmeasured(
    program: ProgramIR,
    stencil: Stencil,
    temporaries: bool | None,
    tile_sizes: tuple[int, ...] | None,
) -> Choice | tuple[Variant, ...]:
    """The choice for ``stencil`` when the options leave one candidate, else the candidates
    to measure (the first is the default)."""
    layout = StencilLayout.of(program, stencil, temporaries=True)
    found = candidates(bool(layout.temporaries), temporaries, tile_sizes)
    if len(found) > 1:
        return found
    if temporaries is not None and tile_sizes is not None:
        return Choice(found[0], "given")
    if not layout.temporaries:
        return Choice(found[0], "default", "no local is read at a shift: one candidate")
    return Choice(found[0], "default", "one candidate")
