"""The C text of a program is the same in every process: it is a cache key.

Two processes that generate different text for one program miss each other's translations
and build the same extension twice. Python's set order changes with ``PYTHONHASHSEED``; the
generated code must not follow it (it once did: the rows a sweep prefetches for outputs that
it does not read came from a set).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_PROGRAM = textwrap.dedent(
    """
    from pipeline.dsl import Dimension, Field, field_operator, float64, program

    I, J, K = Dimension("I"), Dimension("J"), Dimension("K")
    IJK = Field[[I, J, K], float64]


    @field_operator
    def spread(a: IJK) -> tuple[IJK, IJK, IJK, IJK, IJK]:
        return a(I + 1), 2.0 * a(J + 1), a(I - 1) - a, a + 1.0, a(J - 1)


    @program
    def spread_program(a: IJK, v: IJK, w: IJK, x: IJK, y: IJK, z: IJK):
        spread(a, out=(v[1:-1, 1:-1, :], w[1:-1, 1:-1, :], x[1:-1, 1:-1, :],
                       y[1:-1, 1:-1, :], z[1:-1, 1:-1, :]))
    """
)

_GENERATE = textwrap.dedent(
    """
    import sys
    import backends
    from backends.c import CTranslation
    from spread_module import spread_program

    streaming = sys.argv[1] == "streaming"
    translation = CTranslation(
        temporaries=True, tile_sizes=(8, 32), prefetch_distance=4,
        streaming_stores=streaming, streaming_min_bytes=0,
    )
    source = translation(spread_program.with_backend(backends.c_cpu).frontend())
    sys.stdout.write(source.entry_point + "\\n" + source.text)
    """
)


def _generate(directory: Path, seed: str, mode: str) -> str:
    environment = dict(
        os.environ,
        PYTHONHASHSEED=seed,
        PYTHONPATH=os.pathsep.join([str(directory), *sys.path]),
        STENCILFORGE_CACHE_DIR=str(directory / "cache"),
    )
    done = subprocess.run(
        [sys.executable, "-c", _GENERATE, mode],
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("mode", ["plain", "streaming"])
def test_two_processes_with_different_hash_seeds_generate_the_same_c_text(tmp_path, mode):
    (tmp_path / "spread_module.py").write_text(_PROGRAM)

    texts = {seed: _generate(tmp_path, seed, mode) for seed in ("0", "1", "12345")}

    first = texts["0"]
    assert "__builtin_prefetch" in first
    assert all(text == first for text in texts.values()), "the C text follows PYTHONHASHSEED"
