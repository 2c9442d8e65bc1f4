"""The support object: the C helpers every c_cpu program links, compiled once per cache and
flags (``backends.c.support``).

What users rely on: a program with temporaries and streamed outputs gives NumPy's results
while its unit holds only declarations of the helpers (no ``<pthread.h>``, no
``<stdlib.h>``); the object is built once for every program of a cache; a damaged or
incomplete object is built again and never linked; a constant inner extent that fits one
chunk of a streamed row is computed without the chunk loop.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from c_programs import stencils
from c_programs.support import CompilerWrapper

import allocators
import backends
from backends import CompiledBackend
from backends.build_cache import COMPLETE_MARKER
from backends.c import CCompilation, CTranslation, c_cpu_pipeline, compile_time_args
from backends.c.support import SUPPORT_OBJECT

pytestmark = pytest.mark.skipif(
    "c_cpu" not in backends.available_backends(), reason="c_cpu needs a C compiler"
)


def _backend(cache: Path, compiler: CompilerWrapper) -> CompiledBackend:
    # Temporaries, the parallel path and streamed outputs at every size: the helpers of the
    # support object are all called.
    translation = CTranslation(
        temporaries=True,
        tile_sizes=(4, 8),
        prefetch_distance=0,
        streaming_stores=True,
        streaming_min_bytes=0,
        parallel_min_points=0,
    )
    compilation = CCompilation(str(cache / "c"), compiler=str(compiler.path))
    pipeline = c_cpu_pipeline(cache, translation=translation, compilation=compilation)
    return CompiledBackend(
        "c_cpu_support_test",
        allocators.NumPyBufferAllocator(),
        pipeline,
        compile_time_args=compile_time_args,
    )


def _hdiff(backend: CompiledBackend, shape: tuple[int, int, int]) -> tuple[np.ndarray, str]:
    inp = np.random.default_rng(sum(shape)).uniform(-1.0, 1.0, shape)
    out = np.zeros_like(inp)
    program = stencils.hdiff_program.with_backend(backend)
    program(inp, 0.025, out)
    expected = np.zeros_like(inp)
    stencils.hdiff_reference(inp, 0.025, expected)
    np.testing.assert_array_equal(out, expected)
    return out, program.lower(inp, 0.025, out).source.text


def _published(cache: Path) -> Path:
    (folder,) = (cache / "c" / "support" / "builds").iterdir()
    return folder


def test_a_program_declares_the_helpers_and_links_them(tmp_path):
    compiler = CompilerWrapper(tmp_path / "cc")
    _, text = _hdiff(_backend(tmp_path / "cache", compiler), (12, 14, 9))
    assert "sf_scratch(" in text and "sf_stream_row(" in text
    assert "<pthread.h>" not in text and "<stdlib.h>" not in text
    assert "pthread_key_create" not in text  # defined in the support object only
    folder = _published(tmp_path / "cache")
    assert (folder / SUPPORT_OBJECT).is_file() and (folder / COMPLETE_MARKER).is_file()
    (build,) = compiler.lines("compile")
    assert SUPPORT_OBJECT in build


def test_the_support_object_is_built_once_for_every_program_of_a_cache(tmp_path):
    compiler = CompilerWrapper(tmp_path / "cc")
    backend = _backend(tmp_path / "cache", compiler)
    for shape in ((12, 14, 9), (9, 9, 3), (10, 12, 5)):  # one executable per inner extent
        _hdiff(backend, shape)
    stencils.lap.with_backend(backend)(np.ones((6, 6, 3)), np.zeros((6, 6, 3)))
    assert len(compiler.lines("compile")) == 4
    assert len(compiler.lines("support")) == 1


@pytest.mark.parametrize("damage", ["truncated", "altered", "incomplete"])
def test_a_damaged_support_object_is_built_again_and_never_linked(tmp_path, caplog, damage):
    compiler = CompilerWrapper(tmp_path / "cc")
    backend = _backend(tmp_path / "cache", compiler)
    _hdiff(backend, (12, 14, 9))
    published = _published(tmp_path / "cache") / SUPPORT_OBJECT
    good = published.read_bytes()
    if damage == "truncated":  # as by a full disk
        published.write_bytes(good[: len(good) // 2])
    elif damage == "altered":
        published.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    else:  # a folder no publication completed
        (published.parent / COMPLETE_MARKER).unlink()

    with caplog.at_level(logging.WARNING, logger="backends.c.support"):
        _hdiff(backend, (9, 9, 3))  # a new extent: a new build, which links the object

    assert "C support object" in caplog.text
    assert len(compiler.lines("support")) == 2
    assert published.read_bytes() == good
    (build,) = compiler.lines("compile")[1:]
    workdir_copy = next(word for word in build.split() if word.endswith(SUPPORT_OBJECT))
    assert not workdir_copy.startswith(str(published.parent))  # a checked copy is linked


def test_a_constant_extent_within_one_chunk_has_no_chunk_loop(tmp_path):
    backend = _backend(tmp_path / "cache", CompilerWrapper(tmp_path / "cc"))
    _, short = _hdiff(backend, (12, 14, 9))
    _, long = _hdiff(backend, (7, 7, 300))  # more than one chunk of a streamed row
    assert "c_K += 256" not in short and "const int64_t e_K = hi_K + 0;" in short
    assert "c_K += 256" in long
