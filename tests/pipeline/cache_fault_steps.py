"""A disk-cached step and a driver for the cache fault tests, run in fresh interpreters.

``python cache_fault_steps.py DIRECTORY LOG X [X ...]`` computes ``Doubling(LOG)`` of each X
through ``CachedStep.on_disk(..., directory=DIRECTORY)`` and prints one JSON line: the
results, the warnings raised and the cache's counters. Every computation appends a line to
LOG, so a test sees what was recomputed.
"""

from __future__ import annotations

import json
import sys
import warnings

import attrs


@attrs.frozen
class Doubling:
    log: str
    size: int = 0

    def __call__(self, x: int) -> dict[str, object]:
        with open(self.log, "a") as log:
            log.write(f"{x}\n")
        return {"x": x, "twice": 2 * x, "padding": "." * self.size}


def main(directory: str, log: str, size: int, xs: list[int]) -> None:
    from cache_fault_steps import Doubling as step  # noqa: PLC0415  (by name, not __main__)

    from pipeline import CachedStep  # noqa: PLC0415

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cached = CachedStep.on_disk(step(log, size), directory=directory)
        results = [cached(x)["twice"] for x in xs]
    stats = cached.cache.stats
    print(json.dumps({
        "results": results,
        "warnings": [str(w.message) for w in caught],
        "hits": stats.hits,
        "misses": stats.misses,
        "damaged": stats.damaged,
    }))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), [int(x) for x in sys.argv[4:]])


PROGRAMS = '''
import json, sys, warnings
recording = warnings.catch_warnings(record=True)
caught = recording.__enter__()
warnings.simplefilter("always")
import numpy as np
from pipeline.dsl import Dimension, Field, field_operator, float64, program
import backends

I, J = Dimension("I"), Dimension("J")
IJ = Field[[I, J], float64]

@field_operator
def smooth(f: IJ) -> IJ:
    return 0.5 * f + 0.25 * (f(I - 1) + f(I + 1))

@field_operator
def sharpen(f: IJ) -> IJ:
    return 2.0 * f - 0.5 * (f(J - 1) + f(J + 1))

@program(backend=backends.c_cpu)
def smoothed(f: IJ, out: IJ):
    smooth(f, out=out[1:-1, :])

@program(backend=backends.c_cpu)
def sharpened(f: IJ, out: IJ):
    sharpen(f, out=out[:, 1:-1])

f = np.arange(30.0).reshape(5, 6) ** 1.5
results = {}
for name in sys.argv[1:]:
    out = np.zeros_like(f)
    globals()[name](f, out)
    results[name] = float(out.sum())
print(json.dumps({"results": results, "warnings": [str(w.message) for w in caught]}))
'''
"""A script computing the c_cpu programs named on its command line (written to a file and
run: the DSL reads its definitions' source)."""
