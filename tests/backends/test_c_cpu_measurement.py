"""The executable that measures c_cpu's variants (ADR 0009) ranks them by their median
processor time per call: a single reading of the process clock around a short parallel call
can be a third off, so one call that reads cheap must not make a candidate the fastest.

The candidates here are stand-ins that burn a given processor time per call on one thread
(where the clock is exact), so the test asserts the statistic, not a machine's speed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

from c_programs import stencils  # noqa: E402

from backends.c import CCompilation  # noqa: E402
from backends.c.bindings import argument_struct  # noqa: E402
from backends.c.codegen import StencilCode  # noqa: E402
from backends.c.measurement import measurement_grid, measurement_source  # noqa: E402
from backends.c.runtime import RUNTIME_C  # noqa: E402
from backends.c.tuning import MeasurementRequest, MeasureVariants  # noqa: E402
from backends.c.variants import Variant  # noqa: E402
from backends.loops import StencilLayout  # noqa: E402


def burning_candidate(number: int, costs_ms: tuple[float, ...]) -> StencilCode:
    """Candidate ``number``: its n-th call (the warm-up is the first) keeps the processor
    busy for ``costs_ms[n]`` milliseconds, the last figure on every later call."""
    name = f"sf_stencil_{number}"
    signature = (
        f'__attribute__((visibility("hidden"))) int {name}'
        "(const sf_args* restrict a, const int64_t* lo, const int64_t* hi)"
    )
    costs = ", ".join(f"{cost!r}e-3" for cost in costs_ms)
    text = f"""
#include <time.h>
static double cpu_seconds_{number}(void) {{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}}
{signature} {{
    static const double costs[] = {{{costs}}};
    static int calls = 0;
    const int n = (int)(sizeof costs / sizeof costs[0]);
    const double until = cpu_seconds_{number}() + costs[calls < n ? calls : n - 1];
    ++calls;
    while (cpu_seconds_{number}() < until) {{
    }}
    (void)a; (void)lo; (void)hi;
    return 0;
}}
"""
    return StencilCode(name, signature, text, ("I", "J", "K"))


def test_one_cheap_call_does_not_make_a_candidate_the_fastest(tmp_path: Path) -> None:
    inp = np.zeros((14, 13, 5))
    lowered: Any = stencils.hdiff_program.lower(inp, 0.025, inp.copy()).ir
    program = getattr(lowered, "ir", lowered)
    stencil = program.stencils[0]
    dims = StencilLayout.of(program, stencil, temporaries=True).dims
    grid = measurement_grid(program, stencil, dims, 2**20)
    # The first candidate's calls cost 6 ms, but for one that reads 0.5 ms (as an
    # undercounted reading of the process clock would); the second's cost 3 ms each.
    codes = [
        burning_candidate(0, (6.0, 6.0, 0.5, 6.0, 6.0, 6.0)),
        burning_candidate(1, (3.0,)),
    ]
    variants = (Variant(True, (8, 32)), Variant(False, (8, 32)))
    request = MeasurementRequest(
        program.name,
        stencil.operator_name,
        variants,
        measurement_source(
            program, stencil, codes, grid, argument_struct(program), RUNTIME_C, 2**20
        ),
        grid.describe(),
        "test machine",
    )

    choice = MeasureVariants(CCompilation(str(tmp_path / "c")), rounds=5)(request)

    assert choice.variant == variants[1]
    (_, _, spiky), (_, _, steady) = choice.timings
    assert spiky > 5e-3 and 2.9e-3 < steady < 4e-3


def test_every_timed_call_follows_a_write_of_the_last_level_cache() -> None:
    # ADR 0009: each call starts with the cache full of other modified lines, as in a time
    # step (and beside the harness's copy kernel), not as the candidate before left it.
    inp = np.zeros((14, 13, 5))
    lowered: Any = stencils.hdiff_program.lower(inp, 0.025, inp.copy()).ir
    program = getattr(lowered, "ir", lowered)
    stencil = program.stencils[0]
    dims = StencilLayout.of(program, stencil, temporaries=True).dims
    grid = measurement_grid(program, stencil, dims, 2**20)
    code = burning_candidate(0, (0.1,))
    text = measurement_source(
        program, stencil, [code], grid, argument_struct(program), RUNTIME_C, 3 * 2**20
    )

    main = text[text.index("int main("):]
    rounds = main.index("for (int r = 0; r < rounds; ++r)")
    write = main.index("for (int64_t i = 0; i < dirty_words; ++i)")
    clock = main.index("const double t0 = sf_clock(CLOCK_MONOTONIC);")
    assert f"dirty_words = {3 * 2**20 // 8};" in main
    assert rounds < write < clock
    assert "dirty[i] = (uint64_t)i ^" in main[write:clock]
