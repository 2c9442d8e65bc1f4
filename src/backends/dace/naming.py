"""The names the SDFG gives to program arguments, symbols and temporaries.

Translation and loading agree through these functions only: translation declares an array,
scalar or symbol under one of these names, loading computes its value from the call's
arguments under the same name. Every name carries a prefix, so no user identifier can clash
with a C++ keyword or a DaCe-internal name.
"""

from __future__ import annotations

import attrs

from pipeline.dsl.ir.nodes import ProgramIR

__all__ = [
    "SDFGInterface",
    "array",
    "domain_high",
    "domain_low",
    "mode",
    "scalar",
    "size",
    "stride",
    "temporary",
]

#: Values of a stencil's ``mode`` symbol: skip it (empty domain), run it on one thread, or
#: run it in parallel (OpenMP on CPU; every non-empty domain on GPU).
SKIP, SEQUENTIAL, PARALLEL = 0, 1, 2


def array(param: str) -> str:
    """The SDFG array of field parameter ``param``."""
    return f"f_{param}"


def scalar(param: str) -> str:
    """The SDFG scalar of scalar parameter ``param``."""
    return f"sc_{param}"


def size(param: str, axis: int) -> str:
    """The symbol for the extent of field ``param`` along ``axis``."""
    return f"n_{param}_{axis}"


def stride(param: str, axis: int) -> str:
    """The symbol for the stride (in elements) of field ``param`` along ``axis``."""
    return f"s_{param}_{axis}"


def domain_low(stencil: int, dim: str) -> str:
    """The symbol for the first index of stencil ``stencil``'s domain along ``dim``."""
    return f"lo{stencil}_{dim}"


def domain_high(stencil: int, dim: str) -> str:
    """The symbol for one past the last index of stencil ``stencil``'s domain along ``dim``."""
    return f"hi{stencil}_{dim}"


def mode(stencil: int) -> str:
    """The symbol that selects how stencil ``stencil`` runs (``SKIP``/``SEQUENTIAL``/...)."""
    return f"mode{stencil}"


def temporary(stencil: int, local: str, variant: str) -> str:
    """The transient array holding local ``local`` of stencil ``stencil`` in its
    ``variant`` (``seq``/``par``/``gpu``): each variant has its own, so that DaCe's fusion
    sees every transient used inside one state only."""
    return f"t{stencil}{variant}_{local}"


@attrs.frozen
class SDFGInterface:
    """What loading needs to call a built SDFG: carried as ``ProgramSource.metadata``.

    Attributes:
        ir: the program's typed IR (for the argument checks and the domains).
        unit_stride: per field parameter, whether the SDFG assumes its last dimension is
            contiguous (its last stride is the constant 1).
        iteration_dims: per stencil, the dimensions its maps iterate over, in order.
        parallel_min_points: domains with at least this many points run in parallel.
        recipe: the name of the DaCe transformations applied (``SDFGRecipe.name``), for
            whoever inspects a lowered program.
    """

    ir: ProgramIR
    unit_stride: tuple[tuple[str, bool], ...]
    iteration_dims: tuple[tuple[str, ...], ...]
    parallel_min_points: int
    recipe: str = "none"
