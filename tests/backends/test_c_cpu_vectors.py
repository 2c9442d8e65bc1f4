"""c_cpu's loop that stores streamed outputs in explicit vectors (``backends.c.vectors``):
which stencils get it, on which rows it streams, and that it computes what NumPy does on
every vector width (2, 4 or 8 lanes)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from c_programs import stencils
from c_programs.support import GeneratedModules
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_c_cpu_differential import HALO, TEMPLATE, _spell

import allocators
import backends
from backends import CompiledBackend
from backends.c import CCompilation, CTranslation, c_cpu_pipeline, compile_time_args
from backends.c.streaming import STREAM_FENCE_C
from backends.c.tile_sweep import STREAM_CHUNK
from backends.c.vectors import VECTOR_C
from backends.conformance.corpus import domains
from pipeline.dsl import float64

VECTOR_LOOP = "x_K += SF_VLANES) {"


def streaming(
    cache: Path, flags: tuple[str, ...] | None = None, **options: object
) -> CompiledBackend:
    """c_cpu with temporary rows and streaming stores on every domain (``options`` change
    the translation; ``flags`` the compiler's optimization flags)."""
    choices: dict[str, object] = dict(
        temporaries=True,
        temporary_rows=True,
        tile_sizes=(8, 16),
        prefetch_distance=2,
        streaming_stores=True,
        streaming_min_bytes=0,
        parallel_min_points=0,
    )
    choices.update(options)
    compilation = CCompilation(str(cache / "c"))
    if flags is not None:
        compilation = CCompilation(str(cache / "c"), flags=flags)
    pipeline = c_cpu_pipeline(
        cache, compilation=compilation, translation=CTranslation(**choices)  # type: ignore[arg-type]
    )
    return CompiledBackend(
        "c_cpu_vectors", allocators.NumPyBufferAllocator(), pipeline,
        compile_time_args=compile_time_args,
    )


def _fused_loop(text: str) -> str:
    tile = text[text.index("sf_stencil_0_tile(") : text.index("int sf_stencil_0(")]
    start = tile.index(VECTOR_LOOP)
    return tile[start : tile.index("\n                    }\n", start)]


def test_hdiff_stores_its_output_vectors_straight_to_the_rows(tmp_path: Path) -> None:
    inp = np.zeros((40, 37, 16))
    text = stencils.hdiff_program.with_backend(streaming(tmp_path)).lower(
        inp, 0.1, inp.copy()
    ).as_text()

    loop = _fused_loop(text)
    assert "sf_vput(&w_out[x_K - c_K], " in loop
    assert "sf_vstore(&t_lap_field[" in loop and "sf_vload(&p_inp[" in loop
    # Past the caches only on the parallel path: straight from the loop on a row aligned to
    # a vector, from the row buffer on another.
    assert "const int nt_out = nt && ((uintptr_t)r_out & (sizeof(sf_vf64) - 1)) == 0;" in text
    assert "double* restrict w_out = b_out ? o_out : r_out;" in text
    stream = "if (b_out) sf_stream_row(r_out, o_out, (hi_K - lo_K) * (int64_t)sizeof(double), 1);"
    assert stream in text
    tile = text[text.index("sf_stencil_0_tile(") : text.index("int sf_stencil_0(")]
    assert "sf_stream_row(p_out" not in tile


@pytest.mark.parametrize(
    "flags",
    [None, ("-O3", "-march=x86-64", "-ffp-contract=off", "-fno-math-errno")],
    ids=["native", "sse2"],
)
@pytest.mark.parametrize(
    ("misaligned", "offset"),
    [((), 0), (("out",), 1), (("out",), 2), (("out",), 3), (("out",), 6), (("inp",), 2),
     (("inp", "out"), 2), (("inp", "out"), 5)],
    ids=["aligned", "out+1", "out+2", "out+3", "out+6", "inp+2", "both+2", "both+5"],
)
def test_vectorized_hdiff_matches_numpy(
    tmp_path: Path, flags: tuple[str, ...] | None, misaligned: tuple[str, ...], offset: int
) -> None:
    # Rows ``offset`` doubles past a 64-byte boundary: an output's goes through the row
    # buffer. On this small grid the parallel path streams (streaming_min_bytes=0).
    rng = np.random.default_rng(3)
    backend = streaming(tmp_path, flags)

    def field(name: str) -> np.ndarray:
        base = allocators.empty((40, 37, 24), float64, allocator=backend)
        assert base.ctypes.data % 64 == 0
        base[...] = rng.standard_normal(base.shape)
        start = offset if name in misaligned else 0
        return base[:, :, start : start + 16]

    inp, out = field("inp"), field("out")
    expected = out.copy()
    stencils.hdiff_reference(inp, 0.07, expected)

    program = stencils.hdiff_program.with_backend(backend)
    assert VECTOR_LOOP in program.lower(inp, 0.07, out).as_text()
    program(inp, 0.07, out)

    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13)


def test_a_row_longer_than_the_row_buffer_stores_plainly_off_a_boundary(tmp_path: Path) -> None:
    # 264 points per row outgrow the 256-point row buffer: a misaligned row takes plain
    # vector stores, an aligned one still streams.
    rng = np.random.default_rng(11)
    backend = streaming(tmp_path)
    extent = STREAM_CHUNK + 8
    base = allocators.empty((12, 11, extent + 8), float64, allocator=backend)
    base[...] = rng.standard_normal(base.shape)
    inp = base[:, :, :extent]
    out = allocators.empty((12, 11, extent + 8), float64, allocator=backend)[:, :, 3 : 3 + extent]
    out[...] = 0.0
    expected = out.copy()
    stencils.hdiff_reference(inp, 0.07, expected)

    program = stencils.hdiff_program.with_backend(backend)
    text = program.lower(inp, 0.07, out).as_text()
    assert VECTOR_LOOP in text and "b_out" not in text
    assert "const int nt_out = nt && ((uintptr_t)w_out & (sizeof(sf_vf64) - 1)) == 0;" in text
    program(inp, 0.07, out)

    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13)


def test_a_shifted_inner_read_into_a_misaligned_output_row(tmp_path: Path) -> None:
    # out[:-1, :, 1:] starts every row one element past a boundary; b is read at K - 1.
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 30, 20, 17))
    out = np.zeros((30, 20, 17))
    backend = streaming(tmp_path, temporaries=False, temporary_rows=False)
    program = stencils.axpy_program.with_backend(backend)
    assert VECTOR_LOOP in program.lower(a, b, 0.5, out).as_text()

    program(a, b, 0.5, out)

    expected = np.zeros_like(out)
    expected[:-1, :, 1:] = 0.5 * a[1:, :, 1:] + b[:-1, :, :-1]
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13)


def test_stencils_outside_the_vector_subset_keep_gccs_loops(tmp_path: Path) -> None:
    backend = streaming(tmp_path)
    grid = np.zeros((30, 20, 16))
    ints = np.zeros((30, 20, 16), dtype=np.int32)
    cases = {
        "an inner extent of no whole vectors": stencils.hdiff_program.with_backend(
            backend
        ).lower(np.zeros((30, 20, 5)), 0.1, np.zeros((30, 20, 5))),
        "minimum (NaN semantics of its own)": stencils.clip_program.with_backend(
            backend
        ).lower(grid, grid.copy()),
        "int32 arithmetic": stencils.int_program.with_backend(backend).lower(ints, 3, ints.copy()),
        "a temporary read along K": stencils.vertical_chain_program.with_backend(backend).lower(
            grid, grid.copy()
        ),
        "no streaming stores": stencils.hdiff_program.with_backend(
            streaming(tmp_path / "plain", streaming_stores=False)
        ).lower(grid, 0.1, grid.copy()),
        # A vector of points would be a vector of neighbours in memory, which these are not.
        "an input strided along K": stencils.hdiff_program.with_backend(backend).lower(
            np.zeros((30, 20, 32))[:, :, ::2], 0.1, grid.copy()
        ),
        "an input without K": domains.add_ij_program.with_backend(backend).lower(
            grid, np.zeros((30, 20)), grid.copy()
        ),
    }
    for why, lowered in cases.items():
        text = lowered.as_text()
        assert "SF_VLANES" not in text, why
        assert "#pragma omp simd" in text, why


@pytest.mark.parametrize("target", ["-mavx512f", "-mavx2", "-march=x86-64"])
def test_the_vector_helpers_compile_for_every_width(tmp_path: Path, target: str) -> None:
    compiler = CCompilation(str(tmp_path / "c")).compiler
    machine = subprocess.run(
        [compiler, "-dumpmachine"], capture_output=True, text=True, check=False
    ).stdout
    if not machine.startswith("x86_64"):
        pytest.skip("x86-64 targets only")
    source = tmp_path / "helpers.c"
    source.write_text(
        "#include <stdint.h>\n" + STREAM_FENCE_C + VECTOR_C + """
void put(double* restrict p, const double* restrict q, int nt) {
    const sf_vf64 x = sf_vload(q);
    sf_vput(p, sf_vselect((sf_vmask)(x > 0.0), sf_vsplat(-0.0), 2.0 * x), nt);
}
"""
    )
    done = subprocess.run(
        [compiler, "-O2", target, "-Wall", "-Werror", "-c", str(source), "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------- random programs

#: Operations the vector loop takes: (arity, template), children filling the ``{}`` in
#: order, the last child repeated for the extra ``{}`` of a divisor.
VECTOR_OPERATIONS = (
    (2, "({} + {})"),
    (2, "({} - {})"),
    (2, "({} * {})"),
    (2, "({} / ({} * {} + 1.0))"),
    (4, "where({} < {}, {}, {})"),
    (4, "where({} >= {}, {}, {})"),
    (1, "(-{})"),
    (1, "astype({}, float64)"),
)

#: The random programs' out slice keeps 3 points off every side: an inner extent of 16.
VECTOR_GRIDS = ((9, 8, 22), (21, 40, 22))


@st.composite
def _vector_expression(draw: st.DrawFn, local: bool, budget: int) -> str:
    """An expression over fields a, b, c (shifted by -2..2), scalar s, literals and
    (``local``) the local t, shifted along I and J only."""
    if budget <= 0 or draw(st.integers(0, 3)) == 0:
        kind = draw(st.sampled_from(["field", "field", "literal", "scalar"] + ["local"] * local))
        if kind == "field":
            shifts = draw(st.tuples(*(st.integers(-2, 2),) * 3))
            return _spell(draw(st.sampled_from("abc")), shifts)
        if kind == "local":
            return _spell("t", (*draw(st.tuples(st.integers(-1, 1), st.integers(-1, 1))), 0))
        return draw(st.sampled_from(["s", "0.5", "2.0", "-0.0", "3.0"]))
    arity, template = draw(st.sampled_from(VECTOR_OPERATIONS))
    children = [draw(_vector_expression(local, (budget - 1) // arity)) for _ in range(arity)]
    children += [children[-1]] * (template.count("{}") - arity)
    return template.format(*children)


@pytest.fixture(scope="module")
def vector_backend(tmp_path_factory: pytest.TempPathFactory) -> CompiledBackend:
    return streaming(tmp_path_factory.mktemp("vectors"))


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GeneratedModules:
    return GeneratedModules(tmp_path_factory.mktemp("vector_programs"), "vec")


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    local=_vector_expression(False, 5),
    result=_vector_expression(True, 6),
    seed=st.integers(0, 2**31),
)
# A comparison two selects share: the frontend makes it a (bool) local.
@example(local="s", result="(where(c(K + 2) < 2.0, a, s) + where(c(K + 2) < 2.0, a, 0.5))", seed=0)
def test_random_vector_programs_agree_with_embedded_numpy(
    vector_backend: CompiledBackend,
    generated: GeneratedModules,
    local: str,
    result: str,
    seed: int,
) -> None:
    source = TEMPLATE.format(
        dtype="float64", local=f"({local} + b)", result=f"({result} - t)", halo=HALO
    )
    program = generated.load(source).generated_program
    rng = np.random.default_rng(seed)
    for shape in VECTOR_GRIDS:
        a, b, c = (rng.uniform(-2.0, 2.0, shape) for _ in range(3))
        s = float(rng.uniform(-2.0, 2.0))
        out, expected = np.full(shape, -777.25), np.full(shape, -777.25)
        compiled = program.with_backend(vector_backend)
        assert VECTOR_LOOP in compiled.lower(a, b, c, s, out).as_text(), source
        compiled(a, b, c, s, out)
        with np.errstate(all="ignore"):
            program.with_backend(backends.embedded_numpy)(a, b, c, s, expected)
        scale = float(np.nanmax(np.abs(expected[np.isfinite(expected)]), initial=1.0))
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12 * scale, err_msg=source)
