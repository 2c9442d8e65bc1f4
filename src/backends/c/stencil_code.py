"""The C code generated for one stencil: what the program's translation unit and bindings
need to define it and call it."""

from __future__ import annotations

import attrs

__all__ = ["StencilCode"]


@attrs.frozen
class StencilCode:
    """The C function of one stencil and what the bindings need to call it.

    Attributes:
        name: the function's name.
        signature: its declaration (without the ``;``), for the unit that calls it.
        text: its definition and the helpers it needs.
        iteration_dims: the dimensions of its domain, outermost first.
        helpers: the shared C helpers its text calls (``scratch.SCRATCH_C``, the
            ``streaming`` texts), which its translation unit defines once, before the
            stencils: each one is parsed on every cold build, so only where it is used.
        inner_extent: None, or the only extent of the domain's innermost dimension the code
            runs for (a compile-time constant): the check refuses a domain of another.
        edges: the definition of ``<name>_edges`` (``text`` declares it and calls it), or
            ``""``: the loops at a tile's edges, beside its fused loop. The program builds
            it as a translation unit of its own, at the same time as the rest.
    """

    name: str
    signature: str
    text: str
    iteration_dims: tuple[str, ...]
    helpers: tuple[str, ...] = ()
    inner_extent: int | None = None
    edges: str = ""
