"""The DaCe backends: SDFG translation, cached builds, warm loads, checks like c_cpu's.

The DSL corpus runs on ``dace_cpu`` through ``tests/dsl`` (it is a registered backend); this
module covers what is specific to the DaCe pipeline.
"""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import allocators
import backends
from allocators import DeviceType
from backends.conformance import corpus
from backends.conformance.corpus import domains, scans
from pipeline import ArgumentError
from pipeline.dsl import DomainError
from pipeline.stages import ConcreteDefinition

pytestmark = pytest.mark.requires_dace

TESTS = Path(__file__).resolve().parents[1]
from threaded_calls import calls_agree_across_threads  # noqa: E402

#: Corpus programs the GPU tests build by name.
_PROGRAMS = {
    "lap": corpus.lap,
    "hdiff_program": corpus.hdiff_program,
    "fused_tridiagonal_program": scans.fused_tridiagonal_program,
    "vertical_boundaries_program": domains.vertical_boundaries_program,
}


def _lap_reference(inp, out):
    out[1:-1, 1:-1, :] = (-4.0 * inp[1:-1, 1:-1, :] + inp[2:, 1:-1, :] + inp[:-2, 1:-1, :]
                          + inp[1:-1, 2:, :] + inp[1:-1, :-2, :])


# --------------------------------------------------------------------------- composition


def test_dace_cpu_shares_the_frontend_step_object_with_c_cpu():
    assert backends.dace_cpu.pipeline.frontend is backends.c_cpu.pipeline.frontend


def test_dace_cpu_replaces_translation_compilation_and_loading():
    from backends.dace import SDFGCompilation, SDFGTranslation, load_sdfg  # noqa: PLC0415  (optional package, under its marker)
    from pipeline.steps import unwrap_step  # noqa: PLC0415  (optional package, under its marker)

    pipeline = backends.dace_cpu.pipeline
    assert isinstance(unwrap_step(pipeline.translation), SDFGTranslation)
    assert isinstance(unwrap_step(pipeline.compilation), SDFGCompilation)
    assert pipeline.loading is load_sdfg
    assert pipeline.source_format.language == "sdfg"
    assert backends.dace_cpu.device_type is DeviceType.CPU


def test_a_translation_for_cuda_cannot_pair_with_the_cpu_compilation():
    import attrs  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import SDFGTranslation  # noqa: PLC0415  (optional package, under its marker)
    from pipeline.errors import StepMismatchError  # noqa: PLC0415  (optional package, under its marker)

    with pytest.raises(StepMismatchError, match=r"sdfg for CUDA.*sdfg for CPU"):
        attrs.evolve(backends.dace_cpu.pipeline,
                     translation=SDFGTranslation(device_type=DeviceType.CUDA))


# --------------------------------------------------------------------------- translation


def test_translation_is_an_sdfg_named_after_the_ir_fingerprint():
    import dace  # noqa: PLC0415  (optional package, under its marker)

    arrays = np.ones((4, 4, 2)), np.ones((4, 4, 2))
    source = corpus.lap.with_backend(backends.dace_cpu).lower(*arrays).source
    assert source.format.language == "sdfg"
    assert source.entry_point.startswith("sf_lap_")
    sdfg = dace.SDFG.from_json(json.loads(source.text))
    assert sdfg.name == source.entry_point
    assert {"f_inp", "f_out"} <= set(sdfg.arrays)


def test_a_program_translates_to_the_same_sdfg_text_every_time():
    # DaCe draws a random guid for every element it makes; two machines of a fleet that
    # translate one program apart must still get one text (one compilation key), as c_cpu does.
    from backends.dace import SDFGTranslation  # noqa: PLC0415  (optional package, under its marker)

    program = backends.dace_cpu.pipeline.frontend(ConcreteDefinition(corpus.hdiff_program.definition))
    first, second = SDFGTranslation()(program).text, SDFGTranslation()(program).text
    assert first == second
    guids = [value for key, value in _items(json.loads(first)) if key == "guid"]
    assert len(guids) > 10 and len(set(guids)) == len(guids)  # still one per element


def _items(tree):
    """Every (key, value) pair of a JSON tree, depth first."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield key, value
            yield from _items(value)
    elif isinstance(tree, list):
        for item in tree:
            yield from _items(item)


def _hdiff_sdfg(**options):
    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import SDFGTranslation  # noqa: PLC0415  (optional package, under its marker)

    program = backends.dace_cpu.pipeline.frontend(ConcreteDefinition(corpus.hdiff_program.definition))
    return dace.SDFG.from_json(json.loads(SDFGTranslation(**options)(program).text))


def _whole_domain_transients(sdfg):
    """The transients whose size in I or J is the domain's, a symbol (not a row of one
    column, not a tile of constant size)."""
    return {
        name for name, data in sdfg.arrays.items()
        if data.transient and len(data.shape) == 3
        and any(getattr(size, "free_symbols", None) for size in data.shape[:2])
    }


def test_without_fusion_locals_read_at_shifts_become_transients_unless_temporaries_are_off():
    from backends.dace import Fusion, SDFGRecipe  # noqa: PLC0415  (optional package, under its marker)

    unfused = SDFGRecipe(fusion=Fusion.NONE)
    with_temps = _hdiff_sdfg(recipe=unfused)
    inline = _hdiff_sdfg(recipe=unfused, temporaries=False)
    # One set per variant of the stencil's maps (sequential, parallel).
    assert {n for n, d in with_temps.arrays.items() if d.transient} == {
        f"t0{variant}_{local}" for variant in ("seq", "par") for local in ("lap_field", "flx", "fly")
    }
    assert not any(d.transient for d in inline.arrays.values())


def _stencil_states(sdfg):
    return [s for s in sdfg.states()
            if s.label.startswith("stencil0_") and s.label != "stencil0_done"]


def _top_maps(state):
    import dace  # noqa: PLC0415  (optional package, under its marker)

    return [n for n in state.nodes()
            if isinstance(n, dace.nodes.MapEntry) and state.entry_node(n) is None]


def test_the_inline_recipe_computes_hdiffs_temporaries_in_one_tasklet_per_variant():
    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import Fusion, SDFGRecipe  # noqa: PLC0415  (optional package, under its marker)

    inline = SDFGRecipe()
    assert inline.fusion == Fusion.INLINE  # the default
    # Whatever the translation's own option says: the recipe computes them where read.
    for sdfg in (_hdiff_sdfg(recipe=inline), _hdiff_sdfg(recipe=inline, temporaries=True)):
        assert not any(data.transient for data in sdfg.arrays.values())
        stencil_states = _stencil_states(sdfg)
        assert len(stencil_states) == 2  # the sequential and the parallel variant
        for state in stencil_states:
            maps = [n for n in state.nodes() if isinstance(n, dace.nodes.MapEntry)]
            tasklets = [n for n in state.nodes() if isinstance(n, dace.nodes.Tasklet)]
            assert len(maps) == 1 and len(tasklets) == 1
            # lap at its five shifts, each once: the emitter shares them within the loop.
            assert tasklets[0].code.as_string.count("((double)0x1.0000000000000p+2) *") == 5


def test_the_otf_recipe_fuses_hdiff_with_dace_otf_fusion_over_point_tasklets():
    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import Fusion, SDFGRecipe, Tasklets  # noqa: PLC0415  (optional package, under its marker)

    recipe = SDFGRecipe(fusion=Fusion.OTF)
    assert recipe.tasklets == Tasklets.POINTS
    sdfg = _hdiff_sdfg(recipe=recipe)
    assert not _whole_domain_transients(sdfg)
    schedules = {}
    for state in _stencil_states(sdfg):
        (top,) = _top_maps(state)
        # OTFMapFusion replicated the fluxes into the output's map over I, J and K, then
        # lap: the output's tasklet, the four fluxes and lap once per distinct shift (5),
        # one point each (fused consumers first: not 2 lap replicas per flux).
        assert top.map.params == ["x_I", "x_J", "x_K"]
        tasklets = [n for n in state.scope_children()[top] if isinstance(n, dace.nodes.Tasklet)]
        assert len(tasklets) == 1 + 4 + 5
        assert not any("#pragma omp simd" in t.code.as_string for t in tasklets)
        schedules[state.label] = (top.map.schedule, top.map.collapse)
        used = {n.data for n in state.nodes() if isinstance(n, dace.nodes.AccessNode)}
        for name in used:
            data = sdfg.arrays[name]
            if data.transient:
                # One value of one point, in the scope of the fused map's iteration.
                assert all(str(size) == "1" for size in data.shape)
                assert data.lifetime == dace.AllocationLifetime.Scope
                assert data.storage == dace.StorageType.Register
    # OpenMP takes I and J; K stays the inner loop the compiler vectorizes.
    assert schedules == {
        "stencil0_par": (dace.ScheduleType.CPU_Multicore, 2),
        "stencil0_seq": (dace.ScheduleType.Sequential, 1),
    }


@settings(max_examples=15, deadline=None)
@given(
    shifts=st.lists(
        st.tuples(st.integers(-3, 3), st.integers(-3, 3)), min_size=1, max_size=3
    ),
    order=st.permutations([0, 1, 2]),
)
def test_the_closed_form_otf_index_solution_is_dace_sympy_solution(shifts, order):
    """For shifted points (written at ``p + c``, read at ``q + d``) the recipe's answer is
    DaCe's own ``OTFMapFusion.solve``, which it stands in for."""
    from dace import subsets  # noqa: PLC0415  (optional package, under its marker)
    from dace.transformation.dataflow import OTFMapFusion  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace.otf import shifted_point_solution  # noqa: PLC0415  (optional package, under its marker)

    rank = len(shifts)
    first = [f"_i{n}" for n in range(rank)]
    second = [f"x_{'IJK'[n]}" for n in order[:rank]]
    written = subsets.Range.from_string(", ".join(f"{p} + ({c})" for p, (c, _) in zip(first, shifts)))
    read = subsets.Range.from_string(", ".join(f"{q} + ({d})" for q, (_, d) in zip(second, shifts)))
    ours = shifted_point_solution(first, tuple(written.ranges), second, tuple(read.ranges))
    theirs = OTFMapFusion.solve(first, tuple(written.ranges), second, tuple(read.ranges))
    assert ours is not None and theirs is not None
    # DaCe renames the symbols by their text (``advanced_replace``): the text must agree.
    assert {str(k): str(v) for k, v in ours.items()} == {str(k): str(v) for k, v in theirs.items()}


def test_the_closed_form_otf_index_solution_leaves_ranges_to_dace():
    from dace import subsets  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace.otf import shifted_point_solution  # noqa: PLC0415  (optional package, under its marker)

    written = subsets.Range.from_string("_i0, 0:N")
    read = subsets.Range.from_string("x_I + 1, 0:N")
    assert shifted_point_solution(["_i0"], tuple(written.ranges), ["x_I"],
                                  tuple(read.ranges)) is None


def test_the_otf_recipe_restores_dace_index_solver():
    from dace.transformation.dataflow import OTFMapFusion  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import Fusion, SDFGRecipe  # noqa: PLC0415  (optional package, under its marker)

    solve = OTFMapFusion.__dict__["solve"]
    _hdiff_sdfg(recipe=SDFGRecipe(fusion=Fusion.OTF))
    assert OTFMapFusion.__dict__["solve"] is solve


def test_fused_stencils_allocate_nothing_on_the_heap_in_either_variant():
    """Left to DaCe's default, the scalars of the sequential variant's map were allocated
    and freed at every point."""
    from backends.dace import Fusion, SDFGRecipe  # noqa: PLC0415  (optional package, under its marker)

    for recipe in (SDFGRecipe(fusion=Fusion.OTF), SDFGRecipe(fusion=Fusion.TILED)):
        code = _hdiff_sdfg(recipe=recipe).generate_code()[0].clean_code
        assert "omp parallel for" in code  # both variants are in the code
        assert "aligned_new_array" not in code and "new double" not in code


def test_the_variants_of_a_fused_stencil_share_no_transient():
    """The sequential variant is a copy of the transformed parallel one: a transient both
    used would be allocated outside both states and shared by the parallel map's threads."""
    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import Fusion, SDFGRecipe  # noqa: PLC0415  (optional package, under its marker)

    for fusion in (Fusion.OTF, Fusion.TILED, Fusion.NONE):
        sdfg = _hdiff_sdfg(recipe=SDFGRecipe(fusion=fusion))
        seen = [
            {n.data for n in state.nodes()
             if isinstance(n, dace.nodes.AccessNode) and sdfg.arrays[n.data].transient}
            for state in _stencil_states(sdfg)
        ]
        assert len(seen) == 2 and all(seen) and not seen[0] & seen[1]


def test_the_tiled_recipe_tiles_and_fuses_hdiff_with_transients_of_one_tile():
    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import Fusion, SDFGRecipe  # noqa: PLC0415  (optional package, under its marker)

    sdfg = _hdiff_sdfg(recipe=SDFGRecipe(fusion=Fusion.TILED, tile=(8, 4, 32)))
    assert not _whole_domain_transients(sdfg)
    for state in _stencil_states(sdfg):
        (tiles,) = _top_maps(state)
        # StencilTiling strip-mined every map by the tile; SubgraphFusion nested the inner
        # maps (lap, flx, fly, the output) under the one tile map.
        assert len(tiles.map.params) == 3
        inner = [n for n in state.scope_children()[tiles] if isinstance(n, dace.nodes.MapEntry)]
        assert len(inner) == 4
        assert all(m.map.schedule == dace.ScheduleType.Sequential for m in inner)
    shapes = {}
    for name, data in sdfg.arrays.items():
        if data.transient:
            assert data.lifetime == dace.AllocationLifetime.Scope
            shapes.setdefault(tuple(int(size) for size in data.shape), []).append(name)
    # One tile plus the halo its readers need: lap 2 more in I and J, the fluxes 1 more.
    assert {shape: len(names) for shape, names in shapes.items()} == {
        (10, 6, 32): 2, (9, 4, 32): 2, (8, 5, 32): 2,
    }


def test_a_tiled_recipe_needs_point_tasklets_and_positive_tiles():
    from backends.dace import Fusion, SDFGRecipe, Tasklets  # noqa: PLC0415  (optional package, under its marker)

    with pytest.raises(ValueError, match=r"Tasklets\.POINTS"):
        SDFGRecipe(fusion=Fusion.TILED, tasklets=Tasklets.ROWS)
    for tile in ((), (8, 0, 64), (8, -1)):
        with pytest.raises(ValueError, match="tile"):
            SDFGRecipe(fusion=Fusion.TILED, tile=tile)
    assert SDFGRecipe(tile=(4, 64)).tile_for(3) == (4, 4, 64)
    assert SDFGRecipe(tile=(2, 4, 64)).tile_for(2) == (4, 64)


def test_outer_memlets_are_the_union_of_every_shifted_read():
    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import Fusion, SDFGRecipe  # noqa: PLC0415  (optional package, under its marker)

    sdfg = _hdiff_sdfg(recipe=SDFGRecipe(fusion=Fusion.NONE))
    state = next(s for s in sdfg.states() if s.label == "stencil0_par")
    lo = {d: dace.symbol(f"lo0_{d}") for d in "IJK"}
    hi = {d: dace.symbol(f"hi0_{d}") for d in "IJK"}
    for entry in _top_maps(state):
        (inp,) = [e.data for e in state.in_edges(entry) if e.data.data == "f_inp"] or [None]
        if entry.map.label == "s0_par_lap_field":
            # lap over the domain plus 1, read at +-1 in I and J: the domain plus 2.
            assert inp.subset == dace.subsets.Range([
                (lo["I"] - 2, hi["I"] + 1, 1), (lo["J"] - 2, hi["J"] + 1, 1),
                (lo["K"], hi["K"] - 1, 1),
            ])
        elif entry.map.label == "s0_par":
            # The output reads inp at its own point only.
            assert inp.subset == dace.subsets.Range([
                (lo["I"], hi["I"] - 1, 1), (lo["J"], hi["J"] - 1, 1), (lo["K"], hi["K"] - 1, 1),
            ])


def test_the_otf_recipe_with_row_tasklets_keeps_rows_on_the_stack():
    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import Fusion, SDFGRecipe, Tasklets  # noqa: PLC0415  (optional package, under its marker)

    sdfg = _hdiff_sdfg(recipe=SDFGRecipe(fusion=Fusion.OTF, tasklets=Tasklets.ROWS))
    assert not _whole_domain_transients(sdfg)
    for state in _stencil_states(sdfg):
        # OTFMapFusion replicated the fluxes, then lap, into the output's map: one map,
        # whose tasklets are the output's and each replica (4 fluxes, lap at 5 shifts).
        (top,) = _top_maps(state)
        tasklets = [n for n in state.scope_children()[top] if isinstance(n, dace.nodes.Tasklet)]
        assert len(tasklets) == 1 + 4 + 5
    rows = [d for d in sdfg.arrays.values() if d.transient]
    assert rows
    for data in rows:
        # A row along K of one (I, J) point, on the stack of the map's iteration.
        assert tuple(str(s) for s in data.shape[:2]) == ("1", "1")
        assert data.storage == dace.StorageType.Register(force=True)
        assert data.storage.force
        assert data.lifetime == dace.AllocationLifetime.Scope


def test_the_recipe_is_named_in_the_lowered_metadata_and_changes_the_fingerprint():
    import attrs  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import Fusion, SDFGRecipe, SDFGTranslation, Tasklets  # noqa: PLC0415  (optional package, under its marker)
    from pipeline.fingerprint import fingerprint  # noqa: PLC0415  (optional package, under its marker)

    program = backends.dace_cpu.pipeline.frontend(ConcreteDefinition(corpus.hdiff_program.definition))
    default = SDFGTranslation()
    names = {
        "inline": default,
        "otf": attrs.evolve(default, recipe=SDFGRecipe(fusion=Fusion.OTF)),
        "none": attrs.evolve(default, recipe=SDFGRecipe(fusion=Fusion.NONE)),
        "none+rows": attrs.evolve(
            default, recipe=SDFGRecipe(fusion=Fusion.NONE, tasklets=Tasklets.ROWS)
        ),
        "otf+stack": attrs.evolve(
            default, recipe=SDFGRecipe(fusion=Fusion.OTF, tasklets=Tasklets.ROWS)
        ),
        "tiled8x8x64": attrs.evolve(default, recipe=SDFGRecipe(fusion=Fusion.TILED)),
    }
    for name, translation in names.items():
        assert translation(program).metadata.recipe == name
    assert len({fingerprint(t) for t in names.values()}) == len(names)
    assert len({t(program).entry_point for t in names.values()}) == len(names)


def _recipe(name):
    """``otf``, ``otf+stack``, ``none+rows``, ``tiled``... as an ``SDFGRecipe``."""
    from backends.dace import Fusion, RowStorage, SDFGRecipe, Tasklets  # noqa: PLC0415  (optional package, under its marker)

    fusion, _, rest = name.partition("+")
    if not rest:
        return SDFGRecipe(fusion=Fusion(fusion))
    if rest == "rows":
        return SDFGRecipe(fusion=Fusion(fusion), tasklets=Tasklets.ROWS)
    return SDFGRecipe(fusion=Fusion(fusion), tasklets=Tasklets.ROWS, row_storage=RowStorage(rest))


@pytest.mark.parametrize(
    "recipe", ["otf", "inline", "none", "none+rows", "otf+heap", "otf+stack", "tiled"]
)
@pytest.mark.parametrize("shape", [(16, 16, 8), (70, 60, 16)], ids=["sequential", "parallel"])
def test_every_recipe_matches_numpy_on_hdiff(recipe, shape):
    backend = attrs_backend(recipe=_recipe(recipe))
    inp = np.random.default_rng(7).random(shape)
    out, expected = np.zeros(shape), np.zeros(shape)
    corpus.hdiff_program.with_backend(backend)(inp, 0.05, out)
    corpus.hdiff_reference(inp, 0.05, expected)
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13)


def test_the_default_flags_vectorize_where_and_keep_ieee_results():
    """-fno-trapping-math lets gcc if-convert hdiff's flux limiting (otherwise its loop runs
    scalar, ADR 0008); no flag may trade IEEE results (signed zeros, NaN, infinities,
    rounding) for speed."""
    from backends.dace import SDFGCompilation  # noqa: PLC0415  (optional package, under its marker)

    flags = SDFGCompilation(build_directory="unused").cpu_args.split()
    assert "-fno-trapping-math" in flags and "-ffp-contract=off" in flags
    for unsafe in ("-ffast-math", "-freciprocal-math", "-fno-signed-zeros",
                   "-ffinite-math-only", "-funsafe-math-optimizations", "-fassociative-math"):
        assert unsafe not in flags


@pytest.mark.parametrize("recipe", ["inline", "otf"])
def test_hdiff_matches_numpy_bit_for_bit_on_nan_infinities_and_signed_zeros(recipe):
    """The vectorized flux limiting selects like NumPy's ``where``, special values included
    (a parallel-sized grid: the OpenMP loop is the one gcc vectorizes); zeros keep their
    sign."""
    backend = attrs_backend(recipe=_recipe(recipe))
    rng = np.random.default_rng(11)
    shape = (70, 60, 16)
    inp = rng.random(shape)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, -1e308, 5e-324])
    mask = rng.random(shape) < 0.05
    inp[mask] = rng.choice(special, size=int(mask.sum()))
    out, expected = np.zeros(shape), np.zeros(shape)
    with np.errstate(all="ignore"):
        corpus.hdiff_program.with_backend(backend)(inp, 0.05, out)
        corpus.hdiff_reference(inp, 0.05, expected)
    np.testing.assert_array_equal(out, expected)  # NaN where NumPy has NaN
    numbers = ~np.isnan(expected)  # a NaN's sign is not specified (IEEE 754, 6.3)
    np.testing.assert_array_equal(np.signbit(out[numbers]), np.signbit(expected[numbers]))


def attrs_backend(**translation_options):
    """dace_cpu with its translation evolved."""
    import attrs  # noqa: PLC0415  (optional package, under its marker)

    dace_cpu = backends.dace_cpu
    return attrs.evolve(
        dace_cpu, pipeline=dace_cpu.pipeline.evolve_step("translation", **translation_options)
    )


def test_unfused_cpu_transients_live_in_memory_the_loader_provides():
    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import Fusion, SDFGRecipe  # noqa: PLC0415  (optional package, under its marker)

    for device, external in ((DeviceType.CPU, True), (DeviceType.CUDA, False)):
        sdfg = _hdiff_sdfg(device_type=device, recipe=SDFGRecipe(fusion=Fusion.NONE))
        transients = [d for d in sdfg.arrays.values() if d.transient]
        assert transients
        for data in transients:
            assert (data.lifetime == dace.AllocationLifetime.External) is external
            if external:
                assert data.storage == dace.StorageType.CPU_Heap


def test_threads_calling_at_once_on_different_grids_share_the_transients_safely():
    """The loaded SDFG's state holds one buffer for its transients, laid out for the symbols
    of the signature running: concurrent calls on different grids must each get their own
    layout (and a bigger grid a bigger buffer)."""
    from backends.dace import Fusion, SDFGRecipe  # noqa: PLC0415  (optional package, under its marker)

    # The recipe that keeps whole-domain transients (the default computes them inline).
    backend = attrs_backend(recipe=SDFGRecipe(fusion=Fusion.NONE))
    program = corpus.hdiff_program.with_backend(backend)
    assert calls_agree_across_threads(
        lambda inp, out: program(inp, 0.05, out),
        lambda inp, out: corpus.hdiff_reference(inp, 0.05, out),
        seed=11,
    )


def test_cpu_tasklets_compute_rows_in_simd_loops_and_gpu_tasklets_points():
    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import Fusion, SDFGRecipe, SDFGTranslation  # noqa: PLC0415  (optional package, under its marker)

    program = backends.dace_cpu.pipeline.frontend(ConcreteDefinition(corpus.hdiff_program.definition))
    for device, rows in ((DeviceType.CPU, True), (DeviceType.CUDA, False)):
        # Row tasklets where there are no temporaries to fuse (the inline recipe's).
        translation = SDFGTranslation(device_type=device, recipe=SDFGRecipe(fusion=Fusion.INLINE))
        sdfg = dace.SDFG.from_json(json.loads(translation(program).text))
        maps = [n.map for n, _ in sdfg.all_nodes_recursive() if isinstance(n, dace.nodes.MapEntry)]
        tasklets = [n for n, _ in sdfg.all_nodes_recursive() if isinstance(n, dace.nodes.Tasklet)]
        assert maps and tasklets
        if rows:
            # Maps over I and J only; each tasklet loops over K.
            assert all(m.params == ["x_I", "x_J"] for m in maps)
            assert all("#pragma omp simd" in t.code.as_string for t in tasklets)
        else:
            assert not any("#pragma omp simd" in t.code.as_string for t in tasklets)


def test_the_gpu_translation_puts_arguments_in_gpu_global_memory():
    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import SDFGTranslation  # noqa: PLC0415  (optional package, under its marker)

    program = backends.dace_cpu.pipeline.frontend(ConcreteDefinition(corpus.lap.definition))
    source = SDFGTranslation(device_type=DeviceType.CUDA)(program)
    assert source.format.device_type is DeviceType.CUDA
    sdfg = dace.SDFG.from_json(json.loads(source.text))
    assert sdfg.arrays["f_inp"].storage == dace.StorageType.GPU_Global
    schedules = {n.map.schedule for n, _ in sdfg.all_nodes_recursive()
                 if isinstance(n, dace.nodes.MapEntry)}
    assert dace.ScheduleType.GPU_Device in schedules


@pytest.mark.parametrize(
    "name", ["lap", "hdiff_program", "fused_tridiagonal_program", "vertical_boundaries_program"]
)
def test_the_gpu_sdfg_generates_cuda_kernels_of_256_threads_without_a_gpu(name):
    """As far as dace_gpu can be checked on a machine without a GPU: DaCe's CUDA code
    generation accepts the SDFG, and every kernel gets our block size (DaCe's fallback is
    one warp per block, with a warning)."""
    import warnings  # noqa: PLC0415

    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import SDFGTranslation  # noqa: PLC0415  (optional package, under its marker)

    program = backends.dace_cpu.pipeline.frontend(ConcreteDefinition(_PROGRAMS[name].definition))
    source = SDFGTranslation(device_type=DeviceType.CUDA)(program)
    sdfg = dace.SDFG.from_json(json.loads(source.text))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = sdfg.generate_code()
    assert not [w for w in caught if "gpu_block_size" in str(w.message)]
    (cuda,) = [unit.clean_code for unit in code if unit.language == "cu"]
    kernels = cuda.count("__global__")
    assert kernels >= 1
    assert cuda.count("dim3(32, 8, 1)") >= kernels


def _dace_cuda_units(programs, directory):
    """DaCe's generated CUDA unit of each program (by label), written to ``directory``."""
    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import SDFGTranslation  # noqa: PLC0415  (optional package, under its marker)

    files = []
    for name, dsl_program in programs.items():
        program = backends.dace_cpu.pipeline.frontend(ConcreteDefinition(dsl_program.definition))
        source = SDFGTranslation(device_type=DeviceType.CUDA)(program)
        code = dace.SDFG.from_json(json.loads(source.text)).generate_code()
        (cuda,) = [unit.clean_code for unit in code if unit.language == "cu"]
        files.append(directory / f"{name}.cu")
        files[-1].write_text(cuda)
    return files


def _nvcc_compiles(files, directory):
    """Compile DaCe CUDA units to objects for sm_90 as DaCe's build would (its runtime
    headers, its nvcc arguments), in two nvcc runs side by side."""
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.cuda.compilation import default_nvcc  # noqa: PLC0415

    include = Path(dace.__file__).parent / "runtime" / "include"
    extra = str(dace.Config.get("compiler", "cuda", "args")).split()
    command = [default_nvcc(), "-std=c++17", "-arch=sm_90", "-c", f"-I{include}", *extra,
               "-odir", str(directory)]

    def run(part):
        return subprocess.run([*command, *map(str, part)], capture_output=True, text=True)

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(run, [files[0::2], files[1::2]]))
    for result in results:
        assert result.returncode == 0, result.stderr[-4000:]
    return [directory / f"{file.stem}.o" for file in files]


@pytest.mark.requires_nvcc
def test_dace_gpu_cuda_compiles_with_nvcc_for_sm_90(tmp_path):
    """dace_gpu's CUDA, as far as it can be checked without a GPU: nvcc builds it."""
    names = ["lap", "fused_tridiagonal_program", "vertical_boundaries_program"]
    programs = {name: _PROGRAMS[name] for name in names}
    objects = _nvcc_compiles(_dace_cuda_units(programs, tmp_path), tmp_path)
    for obj in objects:
        assert b"__global__" not in obj.read_bytes()  # an object file, not a copied source
        assert obj.stat().st_size > 0


@pytest.mark.slow
@pytest.mark.requires_nvcc
def test_dace_gpu_cuda_of_more_of_the_corpus_compiles_with_nvcc(tmp_path):
    programs = {c.name: c.program for c in corpus.CASES if c.name in DACE_GPU_COMPILED_CASES}
    objects = _nvcc_compiles(_dace_cuda_units(programs, tmp_path), tmp_path)
    assert len(objects) == len(programs)
    assert all(obj.stat().st_size > 0 for obj in objects)


#: The DaCe subset of the DSL tests (tests/dsl/conftest.py) and every scan and boundary case.
DACE_GPU_COMPILED_CASES = {
    "laplacian", "hdiff", "int32_floor_divide_negative_operands",
    "int64_remainder_negative_operands", "where_nested", "tuple_return_mixed_dtypes_shifted",
    "broadcast_shifted_ij_field", "two_calls_through_a_temporary", "shifted_locals_in_j_and_k",
    "scalar_bool_parameter_inverted", "builtins_float32", "astype_float64_to_int32_truncates",
    *(case.name for case in corpus.CASES if case.name.startswith(("scan_", "concat_where_"))),
}


# --------------------------------------------------------------------------- correctness


@pytest.mark.parametrize("shape", [(16, 16, 8), (70, 60, 16)], ids=["sequential", "parallel"])
def test_laplacian_matches_numpy(shape):
    rng = np.random.default_rng(1)
    inp = rng.uniform(-1, 1, shape)
    out, expected = np.zeros(shape), np.zeros(shape)
    corpus.lap.with_backend(backends.dace_cpu)(inp, out)
    _lap_reference(inp, expected)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(16, 16, 8), (70, 60, 16)], ids=["sequential", "parallel"])
def test_hdiff_matches_numpy(shape):
    rng = np.random.default_rng(2)
    inp = rng.uniform(-1, 1, shape)
    out, expected = np.full(shape, -1.0), np.full(shape, -1.0)
    corpus.hdiff_program.with_backend(backends.dace_cpu)(inp, 0.025, out)
    corpus.hdiff_reference(inp, 0.025, expected)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["int32_floor_divide_negative_operands",
                                  "int64_remainder_negative_operands",
                                  "remainder_float64_mixed_signs", "where_nested",
                                  "tuple_return_mixed_dtypes_shifted", "broadcast_shifted_ij_field",
                                  "two_calls_through_a_temporary", "shifted_locals_in_j_and_k"])
def test_representative_corpus_programs_match_numpy(name):
    (case,) = [c for c in corpus.CASES if c.name == name]
    case.check_on(backends.dace_cpu)


def test_views_and_other_layouts_are_accepted():
    rng = np.random.default_rng(3)
    base = rng.uniform(-1, 1, (30, 20, 18))
    prog = corpus.lap.with_backend(backends.dace_cpu)
    for inp in (base[::2, :, 1:-1], np.asfortranarray(base), base[:, :, ::-2],
                base.transpose(1, 0, 2)):
        out = np.zeros(inp.shape)[::1]
        expected = np.zeros(inp.shape)
        strided_out = np.zeros((inp.shape[0], inp.shape[1], 2 * inp.shape[2]))[:, :, ::2]
        prog(inp, out)
        prog(inp, strided_out)
        _lap_reference(inp, expected)
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(strided_out, expected, rtol=1e-12, atol=1e-12)


def test_repeated_calls_reuse_the_signature_and_see_new_data():
    prog = corpus.lap.with_backend(backends.dace_cpu)
    inp, out = np.ones((8, 7, 3)), np.zeros((8, 7, 3))
    prog(inp, out)
    inp[...] = 2.0
    prog(inp, out)
    assert np.all(out[1:-1, 1:-1] == 0.0)
    inp[3, 3, 1] = 5.0
    prog(inp, out)
    assert out[3, 3, 1] == -12.0
    bigger_in, bigger_out = np.ones((9, 9, 3)), np.zeros((9, 9, 3))
    bigger_in[4, 4, 0] = 3.0
    prog(bigger_in, bigger_out)
    assert bigger_out[4, 4, 0] == -8.0
    prog(inp, out)
    assert out[3, 3, 1] == -12.0


def test_repeat_calls_enter_the_sdfg_directly_unless_a_dace_hook_is_registered():
    import dace.hooks

    prog = corpus.lap.with_backend(backends.dace_cpu)
    inp, out = np.ones((8, 7, 3)), np.zeros((8, 7, 3))
    prog(inp, out)
    executable = prog.compile(inp, out).executable
    executable(inp, out)
    assert executable._entry is not None
    calls = []
    handle = dace.hooks.register_compiled_sdfg_call_hook(
        before_hook=lambda compiled, args: calls.append(compiled)
    )
    try:
        inp[3, 3, 1] = 5.0
        assert executable.fast_entry(inp, out) is None
        assert out[3, 3, 1] == -16.0  # -4 * 5 + 4 neighbours of 1
        assert len(calls) == 1  # through DaCe's fast_call, which ran the hook
    finally:
        dace.hooks.unregister_compiled_sdfg_call_hook(handle)
    inp[3, 3, 1] = 6.0
    assert executable.fast_entry(inp, out) is None
    assert out[3, 3, 1] == -20.0
    assert len(calls) == 1  # directly


@pytest.mark.parametrize(
    "name",
    [
        "hdiff",
        "scalar_float32_parameter",
        "scalar_int32_parameter",
        "scalar_int64_parameter",
        "scalar_bool_parameter_inverted",
    ],
)
def test_repeat_calls_pass_every_argument_kind_through_the_packed_entry(name):
    """A repeat call hands DaCe's entry its arguments as one vector of 64-bit words
    (pointers, integers, float bits): scalars of every kind must arrive intact."""
    (case,) = [c for c in corpus.CASES if c.name == name]
    args = case.build()
    order = list(args)
    program = case.program.with_backend(backends.dace_cpu)
    executable = program.compile(*args.values()).executable
    executable(*args.values())  # prepares the signature; DaCe's own call initializes
    assert executable._packed is not None
    calls = []
    packed = executable._packed

    def counting(*words):
        calls.append(words)
        return packed(*words)

    executable._packed = counting
    for key, value in args.items():  # new inputs, same arrays: the results must change
        if isinstance(value, np.ndarray) and key not in case.outputs:
            value[...] = np.roll(value, 1, axis=0)
    expected = {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}
    case.reference(**expected)
    executable(*(args[k] for k in order))
    assert len(calls) == 1
    for out in case.outputs:
        rtol, atol = case.tolerance(expected[out].dtype)
        np.testing.assert_allclose(args[out], expected[out], rtol=rtol, atol=atol)


def test_a_fast_call_refuses_an_output_made_read_only_since():
    prog = corpus.lap.with_backend(backends.dace_cpu)
    inp, out = np.ones((8, 7, 3)), np.zeros((8, 7, 3))
    executable = prog.compile(inp, out).executable
    executable(inp, out)
    out.flags.writeable = False
    assert executable.fast_entry(inp, out) is NotImplemented
    with pytest.raises(ArgumentError):
        prog(inp, out)


def test_an_in_place_reshape_is_not_run_with_the_old_sizes():
    prog = corpus.lap.with_backend(backends.dace_cpu)
    inp, out = np.ones((8, 8, 4)), np.zeros((8, 8, 4))
    prog(inp, out)
    inp.shape = (4, 8, 8)
    with pytest.raises(DomainError):
        prog(inp, out)


def test_empty_domains_run_nothing_like_c_cpu():
    inp, out = np.ones((2, 2, 3)), np.full((2, 2, 3), 7.0)
    corpus.hdiff_program.with_backend(backends.dace_cpu)(inp, 0.1, out)
    assert np.all(out == 7.0)


# --------------------------------------------------------------------------- argument errors


def _bad_calls():
    good_in, good_out = np.ones((8, 7, 3)), np.zeros((8, 7, 3))
    read_only = np.zeros((8, 7, 3))
    read_only.flags.writeable = False
    shared = np.ones((8, 7, 3))
    return {
        "dtype": (np.ones((8, 7, 3), np.float32), good_out),
        "rank": (np.ones((8, 7)), good_out),
        "not an array": ([1.0, 2.0], good_out),
        "missing halo": (np.ones((8, 6, 3)), good_out),
        "read-only output": (good_in, read_only),
        "aliasing": (shared, shared),
    }


@pytest.mark.parametrize("problem", list(_bad_calls()))
def test_argument_errors_are_those_of_c_cpu(problem):
    args = _bad_calls()[problem]
    errors = []
    for backend in (backends.c_cpu, backends.dace_cpu):
        with pytest.raises((ArgumentError, DomainError)) as info:
            corpus.lap.with_backend(backend)(*args)
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]


def test_a_scalar_of_the_wrong_kind_is_refused_like_c_cpu():
    inp, out = np.ones((16, 16, 4)), np.zeros((16, 16, 4))
    messages = []
    for backend in (backends.c_cpu, backends.dace_cpu):
        with pytest.raises(ArgumentError) as info:
            corpus.hdiff_program.with_backend(backend)(inp, "0.1", out)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


# --------------------------------------------------------------------------- caching


def _python(code: str, cache: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "STENCILFORGE_CACHE_DIR": str(cache), **env}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(TESTS.parent / "src"), environment.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environment,
                          capture_output=True, text=True, timeout=600, check=False)


_RUN_LAP = """
    import numpy as np  # noqa: PLC0415  (optional package, under its marker)
    import backends  # noqa: PLC0415  (optional package, under its marker)
    from backends.conformance import corpus
    import backends.dace.compilation as compilation
    if {forbid_build}:
        def refuse(*args, **kwargs):
            raise AssertionError("the warm process compiled")
        compilation.SDFGCompilation._build = refuse
    inp = np.arange(8 * 7 * 3, dtype=float).reshape(8, 7, 3) ** 2
    out = np.zeros_like(inp)
    corpus.lap.with_backend(backends.dace_cpu)(inp, out)
    expected = np.zeros_like(inp)
    expected[1:-1, 1:-1] = (-4 * inp[1:-1, 1:-1] + inp[2:, 1:-1] + inp[:-2, 1:-1]
                            + inp[1:-1, 2:] + inp[1:-1, :-2])
    assert np.array_equal(out, expected), "wrong result"
    stats = backends.dace_cpu.pipeline.compilation.cache.stats
    print("compilation", stats.hits, stats.misses, stats.damaged)
"""


def test_a_warm_process_loads_without_compiling(tmp_path):
    cache, toolchain = tmp_path / "cache", tmp_path / "toolchain"
    cold = _python(_RUN_LAP.format(forbid_build=False), cache,
                   STENCILFORGE_TOOLCHAIN_DIR=str(toolchain))
    assert cold.returncode == 0, cold.stderr
    assert "compilation 0 1 0" in cold.stdout
    # DaCe's build folder lives in our cache directory, its machine-wide build cache in the
    # toolchain directory, private like the cache.
    (build,) = (cache / "dace" / "builds").iterdir()
    assert (build / "COMPLETE").is_file()
    assert any(toolchain.iterdir())
    assert toolchain.stat().st_mode & 0o077 == 0
    assert not (cache / "dace" / "shared").exists()
    assert not list((cache / "dace" / "tmp").iterdir())
    warm = _python(_RUN_LAP.format(forbid_build=True), cache,
                   STENCILFORGE_TOOLCHAIN_DIR=str(toolchain))
    assert warm.returncode == 0, warm.stderr
    assert "compilation 1 0 0" in warm.stdout


def test_a_toolchain_directory_that_cannot_be_created_falls_back_to_the_cache(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    cache = tmp_path / "cache"
    cold = _python(_RUN_LAP.format(forbid_build=False), cache,
                   STENCILFORGE_TOOLCHAIN_DIR=str(blocked / "toolchain"))
    assert cold.returncode == 0, cold.stderr
    assert any((cache / "dace" / "shared").iterdir())


def test_a_damaged_build_is_detected_and_rebuilt(tmp_path):
    first = _python(_RUN_LAP.format(forbid_build=False), tmp_path)
    assert first.returncode == 0, first.stderr
    (build,) = (tmp_path / "dace" / "builds").iterdir()
    (library,) = [p for p in build.iterdir() if p.name.startswith("libsf_")]
    damaged = library.with_name("damaged")
    damaged.write_bytes(library.read_bytes()[:1000])
    os.replace(damaged, library)
    second = _python(_RUN_LAP.format(forbid_build=False), tmp_path)
    assert second.returncode == 0, second.stderr
    assert "compilation 0 1 1" in second.stdout
    assert "failed validation" in second.stderr


def test_a_changed_program_with_the_same_name_gets_a_new_build(tmp_path):
    def load(directory, factor):
        directory.mkdir()
        (directory / "stale_name.py").write_text(textwrap.dedent(f"""
            from pipeline.dsl import Dimension, Field, field_operator, float64, program
            I = Dimension("I")
            @field_operator
            def scaled(a: Field[[I], float64]) -> Field[[I], float64]:
                return {factor} * a
            @program
            def scale(a: Field[[I], float64], out: Field[[I], float64]):
                scaled(a, out=out)
        """))
        spec = importlib.util.spec_from_file_location("stale_name", directory / "stale_name.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.scale.with_backend(backends.dace_cpu)

    first, second = load(tmp_path / "one", 2.0), load(tmp_path / "two", 3.0)
    a, out = np.arange(5.0), np.zeros(5)
    first(a, out)
    np.testing.assert_array_equal(out, 2.0 * a)
    second(a, out)
    np.testing.assert_array_equal(out, 3.0 * a)
    assert first.lower(a, out).source.entry_point != second.lower(a, out).source.entry_point


# --------------------------------------------------------------------------- builds


def _hdiff_source():
    inp, out = np.random.default_rng(3).random((16, 16, 8)), np.zeros((16, 16, 8))
    return corpus.hdiff_program.with_backend(backends.dace_cpu).lower(inp, 0.05, out).source


def _hdiff_runs_like_numpy(artifact):
    from backends.dace import load_sdfg  # noqa: PLC0415  (optional package, under its marker)

    inp = np.random.default_rng(5).random((16, 16, 8))
    out, expected = np.zeros_like(inp), np.zeros_like(inp)
    load_sdfg(artifact)(inp, 0.05, out)
    corpus.hdiff_reference(inp, 0.05, expected)
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13)


def test_a_cpu_frame_needing_nothing_of_dace_runtime_builds_without_its_headers(tmp_path):
    """No precompiled header is built or loaded for it, and the recorded compile command
    force-includes none (ADR 0008, fifth amendment); the library computes hdiff."""
    from backends.dace import SDFGCompilation  # noqa: PLC0415  (optional package, under its marker)

    toolchain = tmp_path / "toolchain"
    compilation = SDFGCompilation(str(tmp_path / "dace"), toolchain_directory=str(toolchain))
    _hdiff_runs_like_numpy(compilation(_hdiff_source()))
    assert not list(toolchain.glob("*/pch"))
    (recorded,) = toolchain.glob("*/commands/*.json")
    commands = [entry["command"] for entry in json.loads(recorded.read_text())]
    assert commands and not any("dace_prewarm" in command for command in commands)


@pytest.mark.parametrize("runtime_header", [False, True])
def test_under_umask_000_a_dace_build_and_its_toolchain_hold_only_private_files(
    tmp_path, monkeypatch, runtime_header
):
    """What DaCe and CMake write (the build folder, the libraries, the precompiled header,
    configure results and recorded commands) is code that will be loaded or chooses it:
    0600, or 0700 for directories and executables, whatever the umask."""
    import stat  # noqa: PLC0415

    from backends.dace import SDFGCompilation, compilation  # noqa: PLC0415  (optional package)

    if runtime_header:  # the frame includes <dace/dace.h>: DaCe's precompiled header is built
        monkeypatch.setattr(compilation, "light_frame", lambda code: None)
    cache, toolchain = tmp_path / "cache", tmp_path / "toolchain"
    previous = os.umask(0)
    try:
        step = SDFGCompilation(str(cache / "dace"), toolchain_directory=str(toolchain))
        artifact = step(_hdiff_source())
    finally:
        os.umask(previous)
    _hdiff_runs_like_numpy(artifact)
    paths = [cache, toolchain, *cache.rglob("*"), *toolchain.rglob("*")]
    assert any(p.name.endswith(".so") for p in paths)
    assert any(p.name == "pch" for p in paths) == runtime_header
    readable = {
        str(p.relative_to(tmp_path)): oct(stat.S_IMODE(p.lstat().st_mode))
        for p in paths
        if not p.is_symlink() and stat.S_IMODE(p.lstat().st_mode) & 0o077
    }
    assert readable == {}


def test_a_light_frame_that_does_not_compile_is_built_with_dace_runtime(
    tmp_path, monkeypatch, caplog
):
    """Where the frame names something of the runtime that ``light_frame`` does not know,
    the build without the header fails, and the unit is built again with it."""
    import attrs  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import compilation  # noqa: PLC0415  (optional package, under its marker)

    def needs_the_runtime(code):
        return code.replace("#include <dace/dace.h>", "#error stands for a runtime name", 1)

    monkeypatch.setattr(compilation, "light_frame", needs_the_runtime)
    step = attrs.evolve(
        backends.dace_cpu.pipeline.compilation.step, build_directory=str(tmp_path / "dace")
    )
    with caplog.at_level("WARNING", logger=compilation.__name__):
        artifact = step(_hdiff_source())
    _hdiff_runs_like_numpy(artifact)
    assert "did not build without DaCe's runtime header" in caplog.text


def test_cpu_builds_link_with_gold_where_installed_and_the_linker_is_in_the_key():
    """gold halves each of a CPU build's two links; the linker flags are part of the
    compilation's fingerprint, and CUDA builds keep the compiler's default linker."""
    import shutil  # noqa: PLC0415

    import attrs  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import SDFGCompilation  # noqa: PLC0415  (optional package)
    from backends.dace.compilation import links_with_gold  # noqa: PLC0415
    from pipeline.fingerprint import fingerprint  # noqa: PLC0415

    cpu = SDFGCompilation("unused")
    default = "-fuse-ld=gold" if shutil.which("ld.gold") and links_with_gold("c++") else ""
    assert fingerprint(cpu) == fingerprint(attrs.evolve(cpu, linker_args=default))
    assert fingerprint(cpu) != fingerprint(attrs.evolve(cpu, linker_args="-fuse-ld=bfd"))
    cuda = SDFGCompilation("unused", device_type=DeviceType.CUDA)
    assert fingerprint(cuda) == fingerprint(attrs.evolve(cuda, linker_args=""))


def test_a_gold_that_cannot_link_is_passed_over_and_the_build_still_links(
    tmp_path, monkeypatch
):
    """As on a lent GPU machine, where gold could not open the toolchain's libstdc++ and
    every dace_cpu build failed: installed is not enough, gold must link."""
    import attrs  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace import compilation  # noqa: PLC0415  (optional package, under its marker)

    broken = tmp_path / "bin" / "ld.gold"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'ld.gold: error: cannot open libstdc++.so' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("PATH", f"{broken.parent}{os.pathsep}{os.environ['PATH']}")
    compilation.links_with_gold.cache_clear()
    try:
        assert compilation.links_with_gold(compilation._cxx()) is False
        step = attrs.evolve(
            backends.dace_cpu.pipeline.compilation.step, build_directory=str(tmp_path / "dace")
        )
        assert step.chosen_linker_args == ""
        _hdiff_runs_like_numpy(step(_hdiff_source()))
    finally:
        compilation.links_with_gold.cache_clear()


def test_fingerprinting_a_dace_compilation_creates_nothing_and_runs_no_process(
    tmp_path, monkeypatch
):
    """The compiler's identity and the probe of gold are asked when the step is made."""
    from backends.clike.compiler import compiler_identity  # noqa: PLC0415
    from backends.dace import SDFGCompilation, compilation  # noqa: PLC0415  (optional package)
    from pipeline.fingerprint import fingerprint  # noqa: PLC0415

    compiler_identity.cache_clear()  # a new process: nothing remembered
    compilation.links_with_gold.cache_clear()
    cpu = SDFGCompilation(str(tmp_path / "cache" / "dace"))
    cuda = SDFGCompilation(str(tmp_path / "cache" / "dace"), device_type=DeviceType.CUDA)

    def no_process(*args, **kwargs):
        raise AssertionError(f"a fingerprint started a process: {args}")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    monkeypatch.setattr(subprocess, "run", no_process)
    compiler_identity.cache_clear()
    compilation.links_with_gold.cache_clear()
    assert fingerprint(cpu) != fingerprint(cuda)
    assert "march=" in (cpu.compiler_identity or "")
    assert list(tmp_path.iterdir()) == []


def test_a_dace_compilation_sent_to_a_worker_asks_that_machines_compiler(tmp_path):
    import pickle  # noqa: PLC0415

    from backends.dace import SDFGCompilation  # noqa: PLC0415  (optional package)

    step = SDFGCompilation(str(tmp_path / "dace"), extra_cpu_args="-funroll-loops")
    travelled = pickle.loads(pickle.dumps(step))
    assert travelled == step and "march=" in (travelled.compiler_identity or "")


def test_a_cxx_that_could_not_run_when_the_step_was_made_is_named_at_its_first_build(
    tmp_path, monkeypatch
):
    from backends.clike.compiler import CompilationError  # noqa: PLC0415
    from backends.dace import SDFGCompilation  # noqa: PLC0415  (optional package)

    monkeypatch.setenv("CXX", "/nonexistent/stencilforge-cxx")
    step = SDFGCompilation(str(tmp_path / "dace"))
    assert step.compiler_identity is None
    with pytest.raises(CompilationError, match="stencilforge-cxx"):
        step(_hdiff_source())
    assert not (tmp_path / "dace").exists()


def test_light_frames_replace_dace_runtime_unless_the_code_names_it():
    from backends.dace.compilation import light_frame  # noqa: PLC0415  (optional package)

    head = "/* DaCe AUTO-GENERATED FILE. DO NOT MODIFY */\n#include <dace/dace.h>\n"
    plain = head + "DACE_EXPORTED void f(double * __restrict__ a) { double t DACE_ALIGN(64); }\n"
    light = light_frame(plain)
    assert light is not None and "<dace/dace.h>" not in light
    assert light.endswith(plain[len(head):]) and "#define DACE_ALIGN(N)" in light
    for use in ("int_ceil(n, 8)", "Min(a, b)", "max(a, b)", "abs(k)", "dace::math::pow(a, 2)",
                "DACE_PRAGMA(omp simd)", "std::memcpy(a, b, 8)", "__dace_smem_err()"):
        assert light_frame(plain + f"void g() {{ {use}; }}\n") is None, use
    assert light_frame(plain.replace("#include <dace/dace.h>\n", "")) is None


def test_light_frames_know_every_global_function_of_dace_runtime():
    """DaCe's runtime declares some functions outside its namespace for the code it
    generates (``min``, ``int_ceil``, ``using std::abs``): a frame naming one needs the
    runtime, so each must be in ``_RUNTIME_NAMES`` (a DaCe upgrade that adds one fails here)."""
    import re  # noqa: PLC0415

    import dace  # noqa: PLC0415  (optional package, under its marker)

    from backends.dace.compilation import _RUNTIME_NAMES  # noqa: PLC0415

    include = Path(dace.__file__).parent / "runtime" / "include" / "dace"
    math = (include / "math.h").read_text().split("namespace std")[0]
    interop = (include / "pyinterop.h").read_text()
    declared = set()
    for text in (math, interop):
        # Declarations at file scope start a line; macro bodies continue with a backslash.
        file_scope = r"^(?:static )?(?:DACE_CONSTEXPR )?DACE_HDFI [^;{(\\]*?\b(\w+)\s*\("
        declared |= set(re.findall(file_scope, text, flags=re.MULTILINE))
        declared |= set(re.findall(r"^using std::(\w+);", text, flags=re.MULTILINE))
        declared |= set(re.findall(r"^(?:class|struct|typedef [^;]*?)\s*(\w+)\s*[;{]?$", text,
                                   flags=re.MULTILINE))
    assert {"min", "int_ceil", "abs", "Min"} <= declared
    assert declared - {"_dace_has_half"} <= _RUNTIME_NAMES


# --------------------------------------------------------------------------- dace_gpu


@pytest.mark.simulates_missing_package
def test_dace_gpu_without_cupy_names_cupy(monkeypatch):
    import builtins  # noqa: PLC0415  (optional package, under its marker)

    real_import = builtins.__import__

    def no_cupy(name, *args, **kwargs):
        if name.split(".")[0] == "cupy":
            raise ImportError("No module named 'cupy'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    monkeypatch.delitem(backends._created, "dace_gpu", raising=False)
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(AttributeError, match=r"'cupy'.*stencilforge\[cuda\]"):
        backends.dace_gpu


@pytest.mark.simulates_missing_package
def test_dace_cpu_without_dace_names_the_dace_extra(monkeypatch):
    monkeypatch.delitem(backends._created, "dace_cpu", raising=False)
    monkeypatch.setitem(sys.modules, "dace", None)
    with pytest.raises(AttributeError, match=r"'dace'.*stencilforge\[dace\]"):
        backends.dace_cpu


@pytest.mark.requires_cupy
@pytest.mark.requires_gpu
def test_dace_gpu_is_a_cuda_backend_with_the_cupy_allocator():
    backend = backends.dace_gpu
    assert backend.device_type is DeviceType.CUDA
    assert backend.pipeline.frontend is backends.c_cpu.pipeline.frontend
    assert isinstance(backend.__field_allocator__, allocators.CuPyBufferAllocator)


@pytest.mark.requires_cupy
@pytest.mark.requires_gpu
@pytest.mark.parametrize("name", ["laplacian", "hdiff", "int32_floor_divide_negative_operands",
                                  "tuple_return_mixed_dtypes_shifted",
                                  "broadcast_shifted_ij_field"])
def test_dace_gpu_matches_numpy(name):
    import cupy  # noqa: PLC0415  (optional package, under its marker)

    (case,) = [c for c in corpus.CASES if c.name == name]
    host = case.build()
    expected = {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in host.items()}
    case.reference(**expected)
    args = {k: cupy.asarray(v) if isinstance(v, np.ndarray) else v for k, v in host.items()}
    case.program.with_backend(backends.dace_gpu)(**args)
    for out in case.outputs:
        rtol, atol = case.tolerance(expected[out].dtype)
        np.testing.assert_allclose(args[out].get(), expected[out], rtol=rtol, atol=atol)


@pytest.mark.requires_cupy
@pytest.mark.requires_gpu
def test_a_repeat_call_on_dace_gpu_reuses_the_signature_of_its_cupy_arrays(monkeypatch):
    # CuPy arrays have no writeable flag: the check of a prepared signature must not ask.
    import cupy  # noqa: PLC0415  (optional package, under its marker)

    _a_repeat_call_runs_on_the_first_calls_signature(backends.dace_gpu, cupy, monkeypatch)


@pytest.mark.requires_cupy
@pytest.mark.requires_gpu
def test_dace_gpu_refuses_numpy_arrays_like_every_backend():
    with pytest.raises(ArgumentError, match=r"is on CPU, but this backend runs on CUDA"):
        corpus.lap.with_backend(backends.dace_gpu)(np.ones((8, 7, 3)), np.zeros((8, 7, 3)))


def _a_repeat_call_runs_on_the_first_calls_signature(backend, xp, monkeypatch):
    """lap's executable called twice on the same arrays of ``xp``, the input changed between:
    the second call prepares nothing and sees the change. Returns the executable, the input
    and the list that counts later preparations."""
    prog = corpus.lap.with_backend(backend)
    inp, out = xp.ones((8, 7, 3)), xp.zeros((8, 7, 3))
    executable = prog.compile(inp, out).executable
    executable(inp, out)
    prepared = []
    original = executable._prepare
    monkeypatch.setattr(executable, "_prepare", lambda args: prepared.append(1) or original(args))
    inp[3, 3, 1] = 5.0
    executable(inp, out)
    assert float(out[3, 3, 1]) == -16.0
    assert prepared == []  # the repeat call ran on the signature of the first
    return executable, inp, prepared


def test_the_executable_called_directly_reuses_the_prepared_signature(monkeypatch):
    executable, inp, prepared = _a_repeat_call_runs_on_the_first_calls_signature(
        backends.dace_cpu, np, monkeypatch
    )
    other = np.zeros((8, 7, 3))
    executable(inp, other)  # new arguments: checked and prepared
    assert prepared == [1] and other[3, 3, 1] == -16.0
    with pytest.raises(ArgumentError):
        executable(inp, np.zeros((8, 7, 3), dtype=np.float32))
