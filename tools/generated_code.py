"""Write the code every C-like translation generates for the DSL corpus, one file per case and
translation, so that two checkouts can be compared with ``diff -r``.

Usage: python tools/generated_code.py OUT_DIR   (run from a checkout, PYTHONPATH=src:.)

The C translations run with fixed options (no measured choice), so the text depends on the code
only: c_cpu with its defaults but no tuning, c_cpu with temporaries and tiles, cuda_gpu with its
defaults (and as small arrays make it), and the DaCe SDFGs for the CPU (each recipe) and the GPU.
"""

from __future__ import annotations

import hashlib
import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

import backends
from backends.c import CTranslation
from backends.conformance import corpus
from backends.cuda import CudaTranslation
from pipeline.stages import CompileTimeArgs

_SMALL_ARRAYS = CompileTimeArgs((("index_bits", 32), ("grid_covers", True)))

#: DaCe gives every SDFG element a guid (random before the translation numbered them); they say
#: nothing of the code
_GUID = re.compile(r'"guid": "[0-9a-f-]{36}"')
#: An SDFG's (and a CUDA program's) name ends in a digest of its key, which holds the digest of
#: the translation's own modules: any edit of them renames every program, the code the same
_SDFG_NAME = re.compile(r"(sf_\w+?)_[0-9a-f]{16}(?![0-9a-f])")


def masked(label: str, text: str) -> str:
    """``text`` without what changes with every run (guids) or every edit (program names)."""
    text = _GUID.sub("<guid>", text)
    return _SDFG_NAME.sub(r"\1_<digest>", text) if label.startswith(("sdfg", "cuda")) else text


def _translations() -> dict[str, Callable[[Any], Any]]:
    found: dict[str, Callable[[Any], Any]] = {
        "c_plain": CTranslation(tuning=None),
        "c_tiled": CTranslation(temporaries=True, tile_sizes=(8, 32), prefetch_distance=4,
                                streaming_stores=True, streaming_min_bytes=0, tuning=None),
        "cuda": CudaTranslation(),
        "cuda_columns": CudaTranslation(parallelization="columns"),
        # As small arrays make it: 32-bit indices, one point per thread.
        "cuda_narrow": lambda program: CudaTranslation()(
            attrs.evolve(program, compile_time_args=_SMALL_ARRAYS)
        ),
    }
    try:
        from allocators import DeviceType  # noqa: PLC0415
        from backends.dace.recipe import Fusion, SDFGRecipe  # noqa: PLC0415  (optional DaCe)
        from backends.dace.translation import SDFGTranslation  # noqa: PLC0415
    except ImportError:
        return found
    for fusion in Fusion:
        found[f"sdfg_{fusion.name.lower()}"] = SDFGTranslation(recipe=SDFGRecipe(fusion=fusion))
    found["sdfg_gpu"] = SDFGTranslation(device_type=DeviceType.CUDA)
    return found


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    translations = _translations()
    for case in corpus.CASES:
        program = case.program.with_backend(backends.c_cpu).frontend()
        for label, translate in translations.items():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    source = translate(program)
                text = masked(label, f"{source.entry_point}\n{source.text}")
            except Exception as error:  # a refusal is part of the snapshot
                text = f"refused: {type(error).__name__}: {error}"
            (out / f"{case.name}.{label}.txt").write_text(text)
    digest = hashlib.sha256()
    for path in sorted(out.glob("*.txt")):
        digest.update(path.name.encode() + path.read_bytes())
    print(f"{len(list(out.glob('*.txt')))} files, sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
