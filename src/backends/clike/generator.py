"""What every C-like generator of one stencil's code starts from.

``backends.c`` (a C loop nest), ``backends.cuda`` (a CUDA kernel) and ``backends.dace`` (an
SDFG's maps and tasklets) each write the code of one stencil of a program: each is given a
``StencilSite`` and lays the stencil out from it the same way, in ``StencilGenerator``.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from backends.loops import StencilLayout
from pipeline.dsl.ir.nodes import Expr, ProgramIR, Stencil

__all__ = ["StencilGenerator", "StencilSite"]


@attrs.frozen
class StencilSite:
    """A stencil to write the code of, and where it stands.

    Attributes:
        program: the program whose parameters the code reads and writes.
        stencil: the stencil.
        index: its number in the generated code: the name of its function (or kernel, or
            states) and of its domain's arguments carry it.
        unit_stride: per field parameter, whether the code may assume its last dimension
            contiguous (``backends.clike.source.unit_stride_flags``).
    """

    program: ProgramIR
    stencil: Stencil
    index: int
    unit_stride: Mapping[str, bool]


class StencilGenerator:
    """The start of every C-like generator of a stencil's code: the site, and the stencil's
    layout (``backends.loops.StencilLayout``).

    Attributes:
        program: the site's program.
        stencil: the site's stencil.
        index: the site's index.
        unit_stride: the site's unit strides.
        layout: the stencil's layout, with temporaries where the generator keeps them.
        dims: the iteration dimensions, outermost first.
        definitions: each local's defining expression.
    """

    def __init__(self, site: StencilSite, *, temporaries: bool) -> None:
        """Lay out ``site``'s stencil, its locals read at shifted positions kept as
        temporaries when ``temporaries`` (else recomputed where read).

        Raises:
            NotImplementedError: the stencil's outputs have different dimensions.
        """
        self.program = site.program
        self.stencil = site.stencil
        self.index = site.index
        self.unit_stride = site.unit_stride
        self.layout = StencilLayout.of(site.program, site.stencil, temporaries=temporaries)
        self.dims: tuple[str, ...] = self.layout.dims
        self.definitions: dict[str, Expr] = dict(self.layout.definitions)
