"""A process that runs one program on ``backends.c_cpu`` (or ``--backend dace_cpu``) and reports, as one JSON line, whether
the result matches NumPy.

Run as ``python -m c_programs.worker [--program lap|hdiff] [--ready FILE] [--start FILE]``
with ``tests/backends`` on ``PYTHONPATH``; the cache directory, compiler and stage dump come
from the environment (``STENCILFORGE_CACHE_DIR``, ``CC``, ``STENCILFORGE_DUMP_STAGES``), as for
a user's process. ``--ready``/``--start`` line several workers up: each creates its ready file
once it is imported and has its arrays, then waits for the start file, so that all of them
reach the compile at the same moment.

The report: ``{"correct": bool, "max_abs_error": float, "translation": {...},
"compilation": {...}}`` with the hits/misses/damaged counters of the two disk caches. Exit
status 0 when correct, 3 when not.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import attrs
import numpy as np

import backends
from c_programs import stencils

SHAPE = (24, 20, 8)
COEFF = 0.025


def _arguments(program: str) -> tuple[tuple[object, ...], np.ndarray, np.ndarray]:
    """(arguments, output array, expected output) for ``program``, the same in every process."""
    rng = np.random.default_rng(20240611)
    inp = rng.uniform(-1.0, 1.0, SHAPE)
    out = np.full(SHAPE, -777.25)
    expected = out.copy()
    if program == "lap":
        stencils.lap_reference(inp, expected)
        return (inp, out), out, expected
    stencils.hdiff_reference(inp, COEFF, expected)
    return (inp, COEFF, out), out, expected


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--program", choices=("lap", "hdiff"), default="lap")
    parser.add_argument("--backend", choices=("c_cpu", "dace_cpu"), default="c_cpu")
    parser.add_argument("--ready", type=Path)
    parser.add_argument("--start", type=Path)
    options = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    program = {"lap": stencils.lap, "hdiff": stencils.hdiff_program}[options.program]
    args, out, expected = _arguments(options.program)
    backend = getattr(backends, options.backend)
    compiled = program.with_backend(backend)
    if options.ready is not None:
        options.ready.touch()
    if options.start is not None:
        deadline = time.monotonic() + 120.0
        while not options.start.exists():
            if time.monotonic() > deadline:
                print(json.dumps({"error": "no start file"}), flush=True)
                return 4
            time.sleep(0.002)

    compiled(*args)

    error = float(np.max(np.abs(out - expected)))
    correct = bool(np.allclose(out, expected, rtol=1e-13, atol=1e-13))
    report = {
        "correct": correct,
        "max_abs_error": error,
        "translation": attrs.asdict(backend.pipeline.translation.cache.stats),
        "compilation": attrs.asdict(backend.pipeline.compilation.cache.stats),
    }
    print(json.dumps(report), flush=True)
    return 0 if correct else 3


if __name__ == "__main__":
    sys.exit(main())
