"""The C translation step: ``CompilableProgram -> ProgramSource`` (a plain-C program with its
launcher descriptor, ``backends.c.bindings``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from backends import loops
from backends.c import specialization
from backends.c.bindings import generate_module
from backends.c.codegen import generate_stencil
from backends.c.machine import l1_data_cache_bytes, last_level_cache_bytes
from backends.c.stencil_code import StencilCode
from backends.c.sweeps import generate_sweep
from backends.c.variants import Choice, VariantOptions, choose_unmeasured
from backends.clike.generator import StencilSite
from backends.clike.runtime import runtime_for
from backends.clike.source import C_SOURCE, unit_stride_flags
from backends.loops import plan_sweeps
from pipeline.dsl.ir.nodes import ProgramIR, Stencil
from pipeline.dsl.stages import CompilableProgram
from pipeline.fingerprint import fingerprint, source_digest
from pipeline.stages import ProgramSource, SourceFormat

if TYPE_CHECKING:
    from backends.c.tuning import Tuning

__all__ = ["CTranslation"]

#: What the generated text depends on, digested into every translation's key: backends.loops
#: and every module of these packages, the DSL's included (its IR helpers, types and regions,
#: and pipeline.dsl.arguments, whose overlap rules the bindings emit).
_GENERATOR_PACKAGES = ("backends.c", "backends.clike", "pipeline.dsl")
_GENERATOR_VERSION = source_digest(loops, packages=_GENERATOR_PACKAGES)


def _positive_sizes(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if not (
        isinstance(value, tuple)
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        raise ValueError(
            f"{attribute.name} must be None (chosen per machine) or a non-empty tuple of "
            f"positive ints, got {value!r}"
        )


@attrs.frozen
class CTranslation:
    """IR -> C with OpenMP, as one plain-C shared object per program (called through the
    launcher).

    Attributes:
        temporaries: compute locals read at shifted positions once per tile into buffers
            (True) or recompute them at every use (False); None: chosen per stencil and
            machine (see ``tuning``).
        tile_sizes: tile extents of the outer dimensions (the last two outer dimensions);
            None: chosen per stencil and machine.
        parallel_min_points: domains smaller than this run on one thread (OpenMP's fork costs
            more than a small stencil).
        prefetch_distance: on the parallel path, each sweep position prefetches the rows it
            will touch first this many positions later (0: no software prefetching); None:
            chosen per stencil and machine.
        temporary_rows: with temporaries, keep only the rows of each buffer that the sweep
            still reads (``backends.c.variants.Variant``); None: chosen per stencil and
            machine when ``tile_sizes`` is open too, else whole-tile buffers. True with
            ``temporaries=False`` is a ``ValueError``.
        streaming_stores: write the outputs of large domains with non-temporal stores
            (``backends.c.variants.Variant``); None: chosen per stencil and machine.
        streaming_min_bytes: the outputs' size over the domain from which streaming stores
            are used; None: half this machine's last-level cache.
        sweep_block: in stencils that run scans, how many points of the innermost other
            dimension each step computes together; None: chosen per stencil from the rows
            it reads and this machine's L1 data cache
            (``backends.c.sweep_blocks.choose_block``; the generated C says which).
        sweep_prefetch: in stencils that run scans whose copy-in is not chunked (fewer than
            eight levels, or fields not all float64), the first pass over each block
            prefetches the columns of the block after it into L2 while it computes (chunked
            copy-ins always ask for them: ``backends.c.sweep_ahead``).
        tuning: decides what ``temporaries``, ``tile_sizes``, ``prefetch_distance``,
            ``streaming_stores`` and ``prefetch_outer`` leave open (None), by measuring the
            candidates once per machine (``backends.c.tuning.Tuning``, ADR 0009); without it,
            an open option takes the value of the first candidate
            (``backends.c.variants.candidates``: for a stencil without shifted locals and
            ``prefetch_outer`` open, ``DEFAULT_VARIANT``'s). Explicit options always win.
            The generated C names each stencil's variant and how it was chosen.
        prefetch_outer: prefetch rows ahead along the outermost dimension of the tile into
            L2 (``backends.c.variants.Variant``); None: a candidate of a stencil without
            shifted locals over two outer dimensions or more where the tiles and the distance
            are open too, else not. True with ``prefetch_distance=0`` keeps the tiles that go
            with it (64x16 where open) and prefetches nothing.
    """

    temporaries: bool | None = None
    tile_sizes: tuple[int, ...] | None = attrs.field(default=None, validator=_positive_sizes)
    parallel_min_points: int = attrs.field(default=32768, validator=attrs.validators.ge(0))
    prefetch_distance: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(0))
    )
    streaming_stores: bool | None = None
    temporary_rows: bool | None = None
    streaming_min_bytes: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(0))
    )
    sweep_block: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(1))
    )
    sweep_prefetch: bool = False
    tuning: Tuning | None = None
    prefetch_outer: bool | None = None
    emits: SourceFormat = attrs.field(default=C_SOURCE, init=False)

    def __attrs_post_init__(self) -> None:
        if self.temporary_rows and self.temporaries is False:
            raise ValueError(
                "CTranslation(temporary_rows=True) keeps temporaries in rows, and "
                "temporaries=False recomputes them instead: drop one of the two options"
            )

    @property
    def variant_options(self) -> VariantOptions:
        """What the options fix of each tiled stencil's variant."""
        return VariantOptions(
            self.temporaries,
            self.tile_sizes,
            self.prefetch_distance,
            self.streaming_stores,
            self.temporary_rows,
            self.prefetch_outer,
        )

    @property
    def automatic(self) -> bool:
        """Whether a variant option is left to the machine (``temporaries``,
        ``tile_sizes``, ``prefetch_distance`` or ``streaming_stores`` None)."""
        return not self.variant_options.settled

    def __fingerprint__(self) -> object:
        # The automatic sweep block depends on the machine's L1 data cache, where outputs
        # are streamed on its last-level cache; automatic variants on what was measured on
        # this machine (the tuning's key names it).
        machine = (
            l1_data_cache_bytes() if self.sweep_block is None else None,
            last_level_cache_bytes() if self.streaming_min_bytes is None else None,
        )
        tuning = self.tuning if self.automatic else None
        return (self._options(), machine, tuning, _GENERATOR_VERSION)

    def _options(self) -> tuple[object, ...]:
        # sweep_prefetch and prefetch_outer only when set: the units' names (keyed on these
        # options) of every program translated without them stay those they had before the
        # options existed.
        prefetch: tuple[object, ...] = ("sweep_prefetch",) if self.sweep_prefetch else ()
        if self.prefetch_outer is not None:
            prefetch += (("prefetch_outer", self.prefetch_outer),)
        return (
            self.temporaries,
            self.tile_sizes,
            self.parallel_min_points,
            self.prefetch_distance,
            self.streaming_stores,
            self.temporary_rows,
            self.streaming_min_bytes,
            self.sweep_block,
            *prefetch,
        )

    def __call__(self, program: CompilableProgram, /) -> ProgramSource:
        ir: ProgramIR = program.ir
        unit = unit_stride_flags(ir, program.compile_time_args)
        extents = specialization.inner_extents(ir, program.compile_time_args)
        stencils = []
        choices = []
        for index, stencil in enumerate(ir.stencils):
            code, choice = self._generate(ir, stencil, index, unit, extents)
            stencils.append((stencil, code))
            choices.append(choice)
        # What the code depends on: the options as given and the choices made, not where
        # the choice records live nor the figures a measurement found.
        decisions = [None if choice is None else choice.decision() for choice in choices]
        fixed = [code.inner_extent for _, code in stencils]
        key = fingerprint((ir, sorted(unit.items()), self._options(), decisions, fixed))[:16]
        module_name = f"sf_{ir.name}_{key}"
        helpers = dict.fromkeys(helper for _, code in stencils for helper in code.helpers)
        used = "\n".join([*helpers, *(code.text for _, code in stencils)])
        text = generate_module(
            ir, module_name, stencils, unit, "\n".join([runtime_for(used), *helpers])
        )
        return ProgramSource(C_SOURCE, text, module_name, metadata=ir)

    def choose(self, ir: ProgramIR, stencil: Stencil, unit: dict[str, bool]) -> Choice:
        """The variant of a tiled ``stencil`` (not one that runs scans): what the options
        fix, else the tuning's measured choice, else the default."""
        found = choose_unmeasured(ir, stencil, self.variant_options)
        if isinstance(found, Choice):
            return found
        if self.tuning is None:
            return Choice(found[0], "default", "not measured: the translation has no tuning")
        return self.tuning.choose(
            ir,
            stencil,
            unit_stride=unit,
            options=self.variant_options,
            parallel_min_points=self.parallel_min_points,
            streaming_min_bytes=self._streaming_min_bytes(),
        )

    def _streaming_min_bytes(self) -> int:
        if self.streaming_min_bytes is not None:
            return self.streaming_min_bytes
        return last_level_cache_bytes() // 2

    def _generate(
        self,
        ir: ProgramIR,
        stencil: Stencil,
        index: int,
        unit: dict[str, bool],
        extents: dict[str, int],
    ) -> tuple[StencilCode, Choice | None]:
        site = StencilSite(ir, stencil, index, unit)
        if plan_sweeps(stencil) is not None:
            code = generate_sweep(
                site,
                parallel_min_points=self.parallel_min_points,
                block=self.sweep_block,
                l1_bytes=l1_data_cache_bytes(),
                streaming_min_bytes=(
                    None if self.streaming_stores is False else self._streaming_min_bytes()
                ),
                prefetch_next=self.sweep_prefetch,
                inner_extent=specialization.stencil_inner_extent(ir, stencil, extents),
            )
            return code, None
        choice = self.choose(ir, stencil, unit)
        code = generate_stencil(
            site,
            temporaries=choice.variant.temporaries,
            tile_sizes=choice.variant.tile_sizes,
            parallel_min_points=self.parallel_min_points,
            prefetch_distance=choice.variant.prefetch_distance,
            streaming_min_bytes=(
                self._streaming_min_bytes() if choice.variant.streaming_stores else None
            ),
            rows=choice.variant.temporary_rows,
            prefetch_outer=choice.variant.prefetch_outer,
            inner_extent=specialization.stencil_inner_extent(ir, stencil, extents),
        )
        note = f"/* {code.name} ({stencil.operator_name}): {choice.describe()} */"
        return attrs.evolve(code, text=f"{note}\n{code.text}"), choice
