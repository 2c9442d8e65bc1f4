"""IR -> C loop nests, one function per stencil.

Each stencil iterates over its output domain with the output's last dimension innermost (the
contiguous one in C order) and no branch in the inner loop: every expression becomes a
``const`` SSA value, ``where`` a select on values computed unconditionally, so gcc can
vectorize. The outer dimensions are cut into tiles, distributed by OpenMP. Locals that are
read at shifted positions become *temporaries*: computed once per tile over the tile plus
their extent into a per-thread buffer, instead of being recomputed at every use (with
``temporaries=False`` they are recomputed inline).

The generator decides here what the code will do: which locals are temporaries and how
their buffers are laid out (``tile_plan``), which outputs are streamed and whether their
loop is written in explicit vectors. Then it writes the C: the sweep over a tile's points
(``tile_sweep``), the tile function around it (``tile_function``) and the entry function
that hands out the tiles (``tile_driver``).

With ``streaming_min_bytes`` set, outputs contiguous along the inner dimension are written
with non-temporal stores on the parallel path of a domain whose outputs take at least that
many bytes: each inner loop computes a chunk of the row into a buffer on the stack, which a
helper then streams to memory past the caches, so the output's lines are not read from memory
before being overwritten (a copy-like stencil moves two thirds of the bytes). Elsewhere the
chunk is computed straight into the output, as without streaming. A stencil of plain float64
arithmetic with a compile-time inner extent skips the buffer: its output loop is written in
explicit vectors that go straight to the row, streamed where it is aligned
(``backends.c.vectors``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from backends.c.stencil_code import StencilCode
from backends.c.tile_driver import TileDriver
from backends.c.tile_function import TileFunction
from backends.c.tile_plan import Temporary as _Temporary
from backends.c.tile_plan import (
    TileLayout,
    row_temporaries,
    statement_shifts,
)
from backends.c.tile_sweep import SweepEmitter, loop_index
from backends.c.vectors import vectorizable
from backends.clike.addressing import element_offset, output_stores, parameter_read
from backends.clike.expressions import C_TYPES, ExpressionEmitter, Offsets, convert
from backends.clike.generator import StencilGenerator, StencilSite
from pipeline.dsl.types import FieldType, ScalarType, float64

__all__ = ["generate_stencil"]

#: A vectorized loop's inner extent is a multiple of this: whole vectors on every target
#: (2, 4 or 8 lanes).
VECTOR_EXTENT_MULTIPLE = 8


class _StencilGenerator(StencilGenerator):
    def __init__(
        self,
        site: StencilSite,
        *,
        temporaries: bool,
        tile_sizes: Sequence[int],
        parallel_min_points: int,
        prefetch_distance: int,
        streaming_min_bytes: int | None = None,
        rows: bool = False,
        prefetch_outer: bool = False,
        inner_extent: int | None = None,
    ) -> None:
        super().__init__(site, temporaries=temporaries)
        self.inner_extent = inner_extent
        self.tile_sizes = tuple(tile_sizes)
        self.parallel_min_points = parallel_min_points
        self.prefetch_distance = prefetch_distance
        self.counter = 0
        self.temporaries: dict[str, _Temporary] = {}
        for name, extent in self.layout.temporaries.items():
            local_type = self.definitions[name].type
            assert local_type is not None
            self.temporaries[name] = _Temporary(
                name, C_TYPES[local_type.dtype], extent, kept=self.dims
            )
        if rows and self.dims:
            self.temporaries = self._rows(*self._shifts())
        self.streaming_min_bytes = streaming_min_bytes
        self.prefetch_dim = self._prefetch_dim(rows, prefetch_outer)
        self.streamed = self._streamed() if streaming_min_bytes is not None else ()
        self.vectorized = self._vectorized()


    def _prefetch_dim(self, rows: bool, prefetch_outer: bool) -> str | None:
        """The outer dimension rows are prefetched along into L2 (None: positions ahead along
        the innermost outer one, into L1). Rows make long tiles along the outermost outer
        dimension cheap: the sweep crosses a tile's width of positions per step along it,
        time enough to prefetch rows ahead. ``prefetch_outer`` prefetches along the outer
        dimension the tile is long along (the first of those ``tile_sizes`` covers: the last
        outer ones), so that the rows ahead are the tile's own."""
        outer = self.dims[:-1]
        if prefetch_outer and len(outer) > 1:
            return outer[max(len(outer) - len(self.tile_sizes), 0)]
        return self.dims[0] if rows and self.temporaries and outer else None

    def _streamed(self) -> tuple[str, ...]:
        """The outputs written through row buffers: over exactly the iteration dimensions,
        contiguous along the inner one, written once and never read by the stencil."""
        if len(self.dims) < 2:
            return ()
        names = [target.name for target in self.stencil.outputs]
        read = {extent.name for extent in self.stencil.extents}
        read |= {guarded.name for guarded in self.stencil.guarded}
        found = []
        for name in names:
            param = self.program.param(name)
            assert isinstance(param.type, FieldType)
            if (
                tuple(param.type.dim_names) == tuple(self.dims)
                and self.unit_stride.get(name, False)
                and names.count(name) == 1
                and name not in read
            ):
                found.append(name)
        return tuple(found)

    def _vectorized(self) -> bool:
        """Whether the loop that stores the outputs is written in explicit vectors
        (``backends.c.vectors``): every output streamed, a compile-time inner extent of
        whole vectors, and plain float64 arithmetic throughout."""
        outputs = [target.name for target in self.stencil.outputs]
        return (
            bool(self.streamed)
            and len(self.streamed) == len(outputs)
            and all(self._field_type(name).dtype == float64 for name in outputs)
            and self.inner_extent is not None
            and self.inner_extent > 0
            and self.inner_extent % VECTOR_EXTENT_MULTIPLE == 0
            and all(temp.ctype == C_TYPES[float64] for temp in self.temporaries.values())
            and vectorizable(
                [*self.stencil.results, *(self.definitions[t] for t in self.temporaries)],
                self.definitions,
                self.temporaries,
                self._contiguous_fields(),
                [p.name for p in self.program.params if isinstance(p.type, ScalarType)],
                self.dims[-1],
            )
        )

    def _contiguous_fields(self) -> list[str]:
        """The field parameters whose inner dimension is the sweep's and has unit stride."""
        inner = self.dims[-1]
        return [
            param.name
            for param in self.program.params
            if isinstance(param.type, FieldType)
            and param.type.dim_names
            and param.type.dim_names[-1] == inner
            and self.unit_stride.get(param.name, False)
        ]

    def read(self, body: ExpressionEmitter, name: str, offsets: Offsets) -> str:
        """The C value of ``name`` read at ``offsets`` from the loop's point, in ``body``."""
        shift = dict(offsets)
        if name in self.temporaries:
            temp = self.temporaries[name]
            return body.load(temp.ctype, f"t_{name}[{temp.index(shift)}]")
        if name in self.definitions:
            return body.value(self.definitions[name], offsets)
        return parameter_read(self.program, self.unit_stride, body, name, offsets)

    def _shifts(
        self,
    ) -> tuple[
        dict[str | None, list[tuple[str, Offsets]]], dict[str | None, dict[str, int]]
    ]:
        """Each statement's reads of temporaries and its shift (``tile_plan``)."""
        return statement_shifts(self.stencil, self.dims, self.temporaries, self.definitions)

    def _rows(
        self,
        reads: Mapping[str | None, Sequence[tuple[str, Offsets]]],
        shifts: Mapping[str | None, Mapping[str, int]],
    ) -> dict[str, _Temporary]:
        """The temporaries laid out as rows (``tile_plan.row_temporaries``)."""
        return row_temporaries(self.dims, self.temporaries, reads, shifts)

    def _store_outputs(self, body: ExpressionEmitter) -> list[str]:
        if not self.streamed:
            return output_stores(self.program, self.stencil, self.unit_stride, body)
        inner = self.dims[-1]
        stores = []
        for target, result in zip(self.stencil.outputs, self.stencil.results, strict=True):
            param = self.program.param(target.name)
            assert isinstance(param.type, FieldType) and result.type is not None
            value = convert(body.value(result, ()), result.type.dtype, param.type.dtype)
            if target.name in self.streamed:
                stores.append(f"w_{target.name}[x_{inner} - c_{inner}] = {value};")
            else:
                offset = element_offset(
                    target.name, param.type.dim_names, {}, self.unit_stride.get(target.name, False)
                )
                stores.append(f"p_{target.name}[{offset}] = {value};")
        return stores

    def _field_type(self, name: str) -> FieldType:
        field = self.program.param(name).type
        assert isinstance(field, FieldType)
        return field

    @property
    def _name(self) -> str:
        return f"sf_stencil_{self.index}"

    def _unpack(self) -> list[str]:
        lines = []
        written = {t.name for t in self.stencil.outputs}
        for param in self.program.params:
            if isinstance(param.type, ScalarType):
                lines.append(
                    f"    const {C_TYPES[param.type.dtype]} sc_{param.name} = a->sc_{param.name}; (void)sc_{param.name};"
                )
                continue
            const = "" if param.name in written else "const "
            ctype = C_TYPES[param.type.dtype]
            lines.append(
                f"    {const}{ctype}* restrict p_{param.name} = ({const}{ctype}*)a->p_{param.name}; (void)p_{param.name};"
            )
            for axis in range(len(param.type.dims)):
                lines.append(
                    f"    const int64_t s_{param.name}_{axis} = a->s_{param.name}[{axis}]; (void)s_{param.name}_{axis};"
                )
        return lines


    def generate(self) -> StencilCode:
        """The stencil's code: a function for its single point, or its tiled loops."""
        if not self.dims:
            return self._generate_point()
        return TileDriver(
            TileFunction(
                SweepEmitter(self._layout(), self.read, self._store_outputs), self._unpack()
            )
        ).emit()

    def _generate_point(self) -> StencilCode:
        """A 0-D stencil: one function computing the outputs' single point."""
        name = f"sf_stencil_{self.index}"
        signature = (
            f'__attribute__((visibility("hidden"))) int {name}'
            "(const sf_args* restrict a, const int64_t* lo, const int64_t* hi)"
        )
        body = ExpressionEmitter(self.read, "    ", index=loop_index)
        stores = self._store_outputs(body)
        lines = [f"{signature} {{", "    (void)lo; (void)hi;", *self._unpack(), *body.lines]
        lines += [f"    {store}" for store in stores]
        lines += ["    return 0;", "}"]
        return StencilCode(name, signature, "\n".join(lines), ())

    def _layout(self) -> TileLayout:
        """What was decided for the stencil, for the emitters of its tiled loops."""
        return TileLayout(
            program=self.program,
            stencil=self.stencil,
            name=self._name,
            dims=self.dims,
            definitions=self.definitions,
            temporaries=self.temporaries,
            unit_stride=self.unit_stride,
            streamed=self.streamed,
            vectorized=self.vectorized,
            inner_extent=self.inner_extent,
            tile_sizes=self.tile_sizes,
            parallel_min_points=self.parallel_min_points,
            prefetch_distance=self.prefetch_distance,
            prefetch_dim=self.prefetch_dim,
            streaming_min_bytes=self.streaming_min_bytes,
        )


def generate_stencil(
    site: StencilSite,
    *,
    temporaries: bool,
    tile_sizes: Sequence[int],
    parallel_min_points: int,
    prefetch_distance: int = 4,
    streaming_min_bytes: int | None = None,
    rows: bool = False,
    prefetch_outer: bool = False,
    inner_extent: int | None = None,
) -> StencilCode:
    """The C function ``sf_stencil_<index>`` computing ``site``'s stencil over a domain.

    The function takes the argument struct and the domain (``lo``/``hi`` per iteration
    dimension) and returns 0, or -1 when a temporary could not be allocated.
    ``prefetch_distance``: how many sweep positions ahead rows are prefetched on the parallel
    path (0: no prefetching), along the innermost outer dimension, or with ``rows`` (the
    outermost) or ``prefetch_outer`` (the tile's outermost) along another one.
    ``streaming_min_bytes``: None, or the outputs' size over the
    domain from which the parallel path writes them with streaming stores (the outputs that
    are contiguous along the inner dimension and not read by the stencil). ``inner_extent``:
    None, or the domain's extent along the inner dimension, compiled in as a constant
    (``backends.c.specialization``; ``StencilCode.inner_extent`` tells the check to refuse
    any other).
    """
    return _StencilGenerator(
        site,
        temporaries=temporaries,
        tile_sizes=tile_sizes,
        parallel_min_points=parallel_min_points,
        prefetch_distance=prefetch_distance,
        streaming_min_bytes=streaming_min_bytes,
        rows=rows,
        prefetch_outer=prefetch_outer,
        inner_extent=inner_extent,
    ).generate()
