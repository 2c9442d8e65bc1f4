"""c_cpu's choice of a stencil's variant per machine: temporaries or recomputation, the tile
shape, the prefetch distance, streaming stores.

The automatic translation measures the candidates of a stencil once per machine and records
the choice (ADR 0009); these tests measure before the build (``STENCILFORGE_TUNING=now``;
``test_c_cpu_tuning_schedule.py`` has the predicting schedules); explicit options win; the generated C names the variant and how it
was chosen, and the choice record keeps the figures. Every candidate agrees with NumPy on the
corpus. Timings are never asserted: only that a measurement happened or did not.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import attrs
import numpy as np
import pytest
from c_programs import stencils
from c_programs.support import CompilerWrapper, worker_environment

import allocators
from backends import CompiledBackend
from backends.c import (
    CCompilation,
    CTranslation,
    c_cpu_pipeline,
    compile_time_args,
    machine,
)
from backends.c.tuning import shared_scope
from backends.c.variants import Choice, candidates
from backends.conformance import corpus
from backends.loops import StencilLayout
from pipeline.caching import open_entry, seal_entry

#: The note the translation writes above each tiled stencil function.
NOTE = re.compile(r"^/\* sf_stencil_\d+ \((\w+)\): (.*) \*/$", re.MULTILINE)


def private_backend(
    cache: Path, compiler: CompilerWrapper, translation: CTranslation | None = None
) -> CompiledBackend:
    compilation = CCompilation(str(cache / "c"), compiler=str(compiler.path))
    pipeline = c_cpu_pipeline(cache, compilation=compilation, translation=translation)
    return CompiledBackend(
        "c_cpu_variants", allocators.NumPyBufferAllocator(), pipeline,
        compile_time_args=compile_time_args,
    )


def notes(text: str) -> dict[str, str]:
    """Each stencil's field operator -> what the generated C says about its variant."""
    return dict(NOTE.findall(text))


def measurements(compiler: CompilerWrapper) -> int:
    """How many measuring executables were linked."""
    return len(compiler.lines("measure"))


@pytest.fixture(autouse=True)
def measure_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """Backends made in this process measure before their first build."""
    monkeypatch.setenv("STENCILFORGE_TUNING", "now")


def choice_records(cache: Path) -> list[tuple[str, Choice]]:
    """The choice records in ``cache``: their keys and what they say."""
    with sqlite3.connect(cache / "choices" / "entries" / "cache.db") as connection:
        rows = connection.execute("SELECT key, value FROM Cache").fetchall()
    return [(key, open_entry(key, bytes(value))) for key, value in rows]


def hdiff_arguments() -> tuple[np.ndarray, float, np.ndarray]:
    inp = np.random.default_rng(3).uniform(-1.0, 1.0, (14, 13, 5))
    return inp, 0.025, np.zeros_like(inp)


_LOWER_IN_A_NEW_PROCESS = textwrap.dedent(
    """
    import numpy as np
    import backends
    from c_programs import stencils
    inp = np.zeros((14, 13, 5))
    source = stencils.hdiff_program.with_backend(backends.c_cpu).lower(inp, 0.025, inp.copy())
    print(source.as_text())
    """
)


def lower_in_a_new_process(
    cache: Path, compiler: CompilerWrapper, schedule: str = "now"
) -> str:
    """hdiff lowered by ``backends.c_cpu`` in a new process over ``cache`` with the tuning
    ``schedule``: its C text."""
    done = subprocess.run(
        [sys.executable, "-c", _LOWER_IN_A_NEW_PROCESS],
        env=worker_environment(cache, compiler, STENCILFORGE_TUNING=schedule),
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@attrs.frozen
class Measured:
    """A cache in which a first process measured hdiff's variants, with the compiler it
    used (its path is part of the choice record's key) and that process's C text."""

    cache: Path
    compiler: CompilerWrapper
    text: str

    def copy(self, tmp_path: Path) -> Path:
        cache = tmp_path / "cache"
        shutil.copytree(self.cache, cache)
        return cache


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Measured:
    root = tmp_path_factory.mktemp("measured")
    compiler = CompilerWrapper(root / "cc")
    text = lower_in_a_new_process(root / "cache", compiler)
    assert measurements(compiler) == 1
    return Measured(root / "cache", compiler, text)


# --------------------------------------------------------------------------- visible choice


HDIFF_CANDIDATES = [
    candidate
    for stores in ("", ", streaming stores")
    for candidate in (
        f"temporaries, tiles 16x64, prefetch 4{stores}",
        f"temporary rows, tiles 256x32, prefetch 2{stores}",
        f"recompute, tiles 16x64, prefetch 4{stores}",
    )
]


def test_the_generated_code_names_the_measured_variant_and_the_record_every_candidates_time(
    measured,
):
    note = notes(measured.text)["hdiff"]
    [(_, record)] = choice_records(measured.cache)

    assert re.match(r"(temporaries|temporary rows|recompute), tiles \d+x\d+, prefetch \d"
                    r"(, streaming stores)? "
                    r"\(measured: on ", note)
    assert note.startswith(record.variant.describe())
    assert " ms" not in note  # the figures stay in the record
    assert [variant.describe() for variant, _, _ in record.timings] == HDIFF_CANDIDATES
    assert all(wall > 0 and cpu > 0 for _, wall, cpu in record.timings)


def test_other_figures_for_the_same_winner_build_the_same_code(measured, tmp_path):
    # Another machine of this identity measured apart: other times, the same winner.
    cache = measured.copy(tmp_path)
    shutil.rmtree(cache / "translations")
    [(key, record)] = choice_records(cache)
    figures = tuple((variant, 2 * wall, 3 * cpu) for variant, wall, cpu in record.timings)
    with sqlite3.connect(cache / "choices" / "entries" / "cache.db") as connection:
        connection.execute(
            "UPDATE Cache SET value = ? WHERE key = ?",
            (seal_entry(key, attrs.evolve(record, timings=figures)), key),
        )
    before = measurements(measured.compiler)

    text = lower_in_a_new_process(cache, measured.compiler)

    assert measurements(measured.compiler) == before
    assert text == measured.text


def test_stencils_without_shifted_locals_measure_prefetching_and_streaming_once_per_machine(
    tmp_path,
):
    compiler = CompilerWrapper(tmp_path / "cc")
    backend = private_backend(tmp_path / "cache", compiler)
    inp = np.zeros((10, 9, 4))

    text = stencils.lap.with_backend(backend).lower(inp, inp.copy()).as_text()
    other = stencils.clip_program.with_backend(backend).lower(inp, inp.copy()).as_text()

    note = notes(text)["laplacian"]
    assert re.match(r"temporaries, tiles (8x32, (prefetch 4|no prefetch)|64x16, prefetch 1 along "
                    r"the outermost)(, streaming stores)? "
                    r"\(measured: for every stencil without shifted locals over 2 outer dimensions, on ",
                    note)
    # Another such stencil reads the same record: the same variant, nothing measured.
    assert notes(other)["clipped"] == note
    assert measurements(compiler) == 1
    [(_, record)] = choice_records(tmp_path / "cache")
    assert [variant.describe() for variant, _, _ in record.timings] == [
        "temporaries, tiles 8x32, prefetch 4",
        "temporaries, tiles 8x32, no prefetch",
        "temporaries, tiles 64x16, prefetch 1 along the outermost",
        "temporaries, tiles 8x32, prefetch 4, streaming stores",
        "temporaries, tiles 8x32, no prefetch, streaming stores",
        "temporaries, tiles 64x16, prefetch 1 along the outermost, streaming stores",
    ]


def test_a_stencil_without_shifted_locals_and_its_memory_options_given_is_not_measured(
    tmp_path,
):
    compiler = CompilerWrapper(tmp_path / "cc")
    translation = CTranslation(prefetch_distance=0, streaming_stores=True)
    backend = private_backend(tmp_path / "cache", compiler, translation)
    inp = np.zeros((10, 9, 4))

    text = stencils.lap.with_backend(backend).lower(inp, inp.copy()).as_text()

    assert notes(text)["laplacian"] == (
        "temporaries, tiles 8x32, no prefetch, streaming stores (default: one candidate)"
    )
    assert compiler.lines("compile") == []


# --------------------------------------------------------------------------- recorded, reused


def test_a_new_process_reads_the_choice_record_instead_of_measuring(measured, tmp_path):
    cache = measured.copy(tmp_path)
    # Without the translation's own cache entry, only the choice record can answer.
    shutil.rmtree(cache / "translations")
    before = measurements(measured.compiler)

    text = lower_in_a_new_process(cache, measured.compiler)

    assert measurements(measured.compiler) == before
    assert notes(text) == notes(measured.text)


def test_a_damaged_choice_record_is_not_trusted_and_is_measured_again(measured, tmp_path):
    cache = measured.copy(tmp_path)
    shutil.rmtree(cache / "translations")
    [(key, _)] = choice_records(cache)
    with sqlite3.connect(cache / "choices" / "entries" / "cache.db") as connection:
        (value,) = connection.execute(
            "SELECT value FROM Cache WHERE key = ?", (key,)
        ).fetchone()
        damaged = bytes(value[:-8]) + bytes(b ^ 0x5A for b in value[-8:])
        connection.execute("UPDATE Cache SET value = ? WHERE key = ?", (damaged, key))
    before = measurements(measured.compiler)

    text = lower_in_a_new_process(cache, measured.compiler)

    assert measurements(measured.compiler) == before + 1
    assert "(measured: on " in notes(text)["hdiff"]


def test_a_choice_measured_on_another_machine_is_not_served(measured, tmp_path, monkeypatch):
    cache = measured.copy(tmp_path)
    # The worker ran with one thread: this machine is that one, by the identity's inputs.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    compiler = measured.compiler
    before = measurements(compiler)
    here = stencils.hdiff_program.with_backend(private_backend(cache, compiler))
    text = here.lower(*hdiff_arguments()).as_text()
    assert measurements(compiler) == before
    assert notes(text) == notes(measured.text)

    monkeypatch.setattr(machine, "_identity", lambda cores: ("another machine", "f" * 24))
    elsewhere = stencils.hdiff_program.with_backend(private_backend(cache, compiler))
    other = elsewhere.lower(*hdiff_arguments()).as_text()

    assert measurements(compiler) == before + 1
    assert other != text


# --------------------------------------------------------------------------- overrides


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            {"temporaries": False, "tile_sizes": (16, 64), "prefetch_distance": 4,
             "streaming_stores": False},
            "recompute, tiles 16x64, prefetch 4 (given)",
        ),
        (
            {"temporaries": True, "tile_sizes": (4, 16), "prefetch_distance": 0,
             "streaming_stores": True},
            "temporaries, tiles 4x16, no prefetch, streaming stores (given)",
        ),
    ],
)
def test_explicit_options_win_and_nothing_is_measured(tmp_path, options, expected):
    compiler = CompilerWrapper(tmp_path / "cc")
    translation = CTranslation(**options)
    backend = private_backend(tmp_path / "cache", compiler, translation)

    text = stencils.hdiff_program.with_backend(backend).lower(*hdiff_arguments()).as_text()

    assert notes(text)["hdiff"] == expected
    assert measurements(compiler) == 0


def test_an_option_left_open_is_measured_among_the_candidates_the_other_allows(tmp_path):
    compiler = CompilerWrapper(tmp_path / "cc")
    backend = private_backend(tmp_path / "cache", compiler)
    pipeline = backend.pipeline.evolve_step("translation", temporaries=False)
    program = stencils.hdiff_program.with_backend(attrs.evolve(backend, pipeline=pipeline))

    note = notes(program.lower(*hdiff_arguments()).as_text())["hdiff"]

    assert note.startswith("recompute, tiles ")
    assert measurements(compiler) == 1
    [(_, record)] = choice_records(tmp_path / "cache")
    assert {variant.temporaries for variant, _, _ in record.timings} == {False}


def test_an_explicit_choice_builds_apart_from_the_same_automatic_choice(measured, tmp_path):
    cache = measured.copy(tmp_path)
    compiler = measured.compiler
    automatic = stencils.hdiff_program.with_backend(private_backend(cache, compiler))
    chosen = automatic.lower(*hdiff_arguments())
    note = notes(chosen.as_text())["hdiff"]
    record = next(
        r for _, r in choice_records(cache) if note.startswith(r.variant.describe() + " (")
    )
    translation = CTranslation(
        temporaries=record.variant.temporaries,
        tile_sizes=record.variant.tile_sizes,
        prefetch_distance=record.variant.prefetch_distance,
        streaming_stores=record.variant.streaming_stores,
    )
    explicit = stencils.hdiff_program.with_backend(private_backend(cache, compiler, translation))

    given = explicit.lower(*hdiff_arguments())

    assert given.source.entry_point != chosen.source.entry_point
    assert given.source.text != chosen.source.text


def test_a_translation_without_tuning_takes_the_default_variant_unmeasured(tmp_path):
    compiler = CompilerWrapper(tmp_path / "cc")
    backend = private_backend(tmp_path / "cache", compiler, CTranslation())

    text = stencils.hdiff_program.with_backend(backend).lower(*hdiff_arguments()).as_text()

    assert notes(text)["hdiff"] == (
        "temporaries, tiles 16x64, prefetch 4 (default: not measured: the translation has no "
        "tuning)"
    )
    assert measurements(compiler) == 0


# --------------------------------------------------------------------------- both candidates


def _has_temporaries(case: corpus.Case) -> bool:
    ir = case.program.lower(**case.build()).ir
    program_ir = getattr(ir, "ir", ir)
    return any(
        StencilLayout.of(program_ir, stencil, temporaries=True).temporaries
        for stencil in program_ir.stencils
    )


@pytest.fixture(scope="module")
def candidate_backends(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CompiledBackend]:
    root = tmp_path_factory.mktemp("candidates")
    compiler = CompilerWrapper(root / "cc")
    # Streaming stores on every domain, the parallel path at every size: the small grids of
    # the corpus take the paths a large one would.
    return {
        f"{'temporaries' if way else 'recompute'}-{'x'.join(map(str, tiles))}"
        f"{'-streaming' if streaming else ''}": private_backend(
            root / "cache",
            compiler,
            CTranslation(
                temporaries=way,
                tile_sizes=tiles,
                prefetch_distance=4,
                streaming_stores=streaming,
                streaming_min_bytes=0,
                parallel_min_points=0 if streaming else 32768,
            ),
        )
        for way in (True, False)
        for tiles in ((8, 32), (2, 3))
        for streaming in (False, True)
    } | {
        f"outer-{'x'.join(map(str, tiles))}": private_backend(
            root / "cache",
            compiler,
            CTranslation(
                prefetch_outer=True,
                tile_sizes=tiles,
                streaming_stores=True,
                streaming_min_bytes=0,
                parallel_min_points=0,
            ),
        )
        for tiles in ((64, 16), (3, 2))
    }


TEMPORARY_CASES = [case for case in corpus.CASES if _has_temporaries(case)]


def test_the_corpus_has_programs_with_temporaries():
    assert {case.name for case in TEMPORARY_CASES} >= {"hdiff"}


@pytest.mark.parametrize("variant", ["temporaries-8x32", "temporaries-2x3", "recompute-8x32",
                                     "recompute-2x3", "temporaries-2x3-streaming",
                                     "recompute-8x32-streaming"])
@pytest.mark.parametrize("case", TEMPORARY_CASES, ids=lambda case: case.name)
def test_each_candidate_matches_the_numpy_reference(case, variant, candidate_backends):
    case.check_on(candidate_backends[variant], f"on {variant}")


@pytest.mark.parametrize("variant", ["outer-64x16", "outer-3x2"])
@pytest.mark.parametrize("case", corpus.CASES, ids=lambda case: case.name)
def test_rows_prefetched_along_the_outermost_dimension_match_the_numpy_reference(
    case, variant, candidate_backends
):
    # Every tiled stencil of the corpus, with shifted locals or without, on the parallel path
    # with its rows prefetched along the outermost dimension (past the tile, past the array:
    # the prefetch addresses are integers, never dereferenced).
    case.check_on(candidate_backends[variant], f"on {variant}")


def test_the_candidate_prefetching_along_the_outermost_dimension_asks_for_l2(tmp_path):
    translation = CTranslation(prefetch_outer=True, streaming_stores=False)
    backend = private_backend(tmp_path / "cache", CompilerWrapper(tmp_path / "cc"), translation)
    inp = np.zeros((10, 9, 4))
    text = stencils.lap.with_backend(backend).lower(inp, inp.copy()).as_text()
    # laplacian reads I + 1 at the farthest: one row beyond it, along I, into L2 (locality 2);
    # the serial path (pf == 0) touches the row it reads next instead.
    assert "(x_I + 1 + 1 * pf) * s_inp_0 + (x_J + 0) * s_inp_1" in text
    assert re.search(r"__builtin_prefetch\(\(const void\*\)\(r0 \+ \(uintptr_t\)q\), 0, 2\)", text)
    assert "tiles 64x16, prefetch 1 along the outermost (default: one candidate)" in text


def _outer_backend(tmp_path: Path) -> CompiledBackend:
    # The parallel path at every size, plain stores: every field is prefetched.
    translation = CTranslation(
        prefetch_outer=True, streaming_stores=False, parallel_min_points=0
    )
    return private_backend(tmp_path / "cache", CompilerWrapper(tmp_path / "cc"), translation)


def _prefetched_rows(text: str) -> dict[str, str]:
    return dict(re.findall(r"const uintptr_t r\d+ = \(uintptr_t\)(p_\w+) \+ \(uintptr_t\)\(\((.*?) "
                           r"\* \(int64_t\)sizeof", text))


def test_rows_are_prefetched_along_the_dimension_the_tile_is_long_along(tmp_path):
    # Four dimensions: the tiles 64x16 cover J and K (the last outer ones), so the rows ahead
    # are J's, where the tile is 64 long; I's tile is one row.
    rng = np.random.default_rng(4)
    f, out = rng.random((6, 70, 20, 3)), np.zeros((6, 70, 20, 3))
    program = stencils.four_dims_program.with_backend(_outer_backend(tmp_path))
    text = program.lower(f, out).as_text()
    assert "const int64_t tile[3] = {1, 64, 16};" in text
    rows = _prefetched_rows(text)
    assert rows["p_f"].startswith("(x_I + 1) * s_f_0 + (x_J + 0 + 1 * pf) * s_f_1")
    program(f, out)
    expected = np.zeros_like(out)
    stencils.four_dims_reference(f, expected)
    np.testing.assert_array_equal(out, expected)


def test_fields_are_prefetched_when_they_move_along_the_prefetch_dimension(tmp_path):
    # h (I, K) moves along I, the prefetch dimension: prefetched. g (J, K) does not: a row of
    # it ahead along I is the row in use.
    rng = np.random.default_rng(5)
    f, h, g = rng.random((70, 20, 8)), rng.random((70, 8)), rng.random((20, 8))
    out = np.zeros((70, 20, 8))
    program = stencils.mixed_dims_program.with_backend(_outer_backend(tmp_path))
    rows = _prefetched_rows(program.lower(f, h, g, out).as_text())
    assert set(rows) == {"p_f", "p_h", "p_out"}
    assert rows["p_h"].startswith("(x_I + 1 + 1 * pf) * s_h_0")
    program(f, h, g, out)
    expected = np.zeros_like(out)
    stencils.mixed_dims_reference(f, h, g, expected)
    np.testing.assert_array_equal(out, expected)


def test_the_outer_candidate_needs_two_outer_dimensions_and_a_record_of_its_own():
    assert any(v.prefetch_outer for v in candidates(False))
    assert not any(v.prefetch_outer for v in candidates(False, outer_dimensions=1))
    # Stencils over other numbers of outer dimensions get tiles that cover other dimensions:
    # they do not share a choice.
    assert shared_scope(2) != shared_scope(3)
    assert shared_scope(1).endswith("over 1 outer dimension")


# --------------------------------------------------------------------------- streaming stores


@pytest.fixture(scope="module")
def streaming_backend(tmp_path_factory: pytest.TempPathFactory) -> CompiledBackend:
    root = tmp_path_factory.mktemp("streaming")
    translation = CTranslation(
        temporaries=True,
        tile_sizes=(2, 3),
        prefetch_distance=4,
        streaming_stores=True,
        streaming_min_bytes=0,
        parallel_min_points=0,
    )
    return private_backend(root / "cache", CompilerWrapper(root / "cc"), translation)


@pytest.mark.parametrize("case", corpus.CASES, ids=lambda case: case.name)
def test_streaming_stores_match_the_numpy_reference_on_the_corpus(case, streaming_backend):
    case.check_on(streaming_backend, "with streaming stores")


def test_streamed_outputs_go_through_row_buffers_and_are_not_prefetched(streaming_backend):
    inp = np.zeros((40, 37, 5))
    text = stencils.hdiff_program.with_backend(streaming_backend).lower(
        inp, 0.1, inp.copy()
    ).as_text()

    assert re.search(r"if \(nt\) sf_stream_row\(p_out \+ ", text)
    assert "w_out[x_K - c_K] = " in text
    assert not re.search(r"\bp_out\[[^\]]*\] = ", text)
    prefetched = re.findall(r"uintptr_t r\d+ = \(uintptr_t\)(p_\w+)", text)
    assert set(prefetched) == {"p_inp"}  # in the tile and in its edge function
    # Only the parallel path may stream (and only on a domain large enough).
    assert re.search(r"sf_stencil_0_tile\(a, lo, hi, tile, tb, te, 1, nt\b", text)
    assert re.search(r"sf_stencil_0_tile\(a, lo, hi, tile, lo, hi, 0, 0\b", text)


def test_a_strided_output_is_not_streamed(streaming_backend):
    inp = np.zeros((40, 37, 5))
    strided = np.zeros((40, 37, 10))[:, :, ::2]
    text = stencils.hdiff_program.with_backend(streaming_backend).lower(
        inp, 0.1, strided
    ).as_text()

    assert "sf_stream_row(" not in text
    assert re.search(r"\bp_out\[[^\]]*\] = ", text)
