"""The executable that measures c_cpu's variants (ADR 0009) ranks them by their median
processor time per call: a single reading of the process clock around a short parallel call
can be a third off, so one call that reads cheap must not make a candidate the fastest.

The candidates here are stand-ins that add a given cost per call to a logical clock, which
the executable reads instead of the system's clocks: the tests check the statistic and the
dropping rule on exact numbers, which no other process on a loaded machine can reorder.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from c_programs import stencils

from backends.c import CCompilation
from backends.c.bindings import argument_struct
from backends.c.measurement import (
    DROP_FACTOR,
    measurement_grid,
    measurement_source,
)
from backends.c.stencil_code import StencilCode
from backends.c.tuning import MeasurementRequest, MeasureVariants
from backends.c.variants import Choice, Variant
from backends.clike.runtime import RUNTIME_C
from backends.loops import StencilLayout

#: Read by the measuring executable instead of the system's clocks: wall-clock and processor
#: time alike are the logical seconds the candidates' calls have cost so far.
LOGICAL_CLOCK = r"""
double sf_logical_seconds = 0.0;
static double sf_clock(clockid_t clock) {
    (void)clock;
    return sf_logical_seconds;
}
"""


def costing_candidate(number: int, costs_ms: tuple[float, ...]) -> StencilCode:
    """Candidate ``number``: its n-th call (the warm-up is the first) costs ``costs_ms[n]``
    logical milliseconds, the last figure on every later call."""
    name = f"sf_stencil_{number}"
    signature = (
        f'__attribute__((visibility("hidden"))) int {name}'
        "(const sf_args* restrict a, const int64_t* lo, const int64_t* hi)"
    )
    costs = ", ".join(f"{cost!r}e-3" for cost in costs_ms)
    text = f"""
extern double sf_logical_seconds;
{signature} {{
    static const double costs[] = {{{costs}}};
    static int calls = 0;
    const int n = (int)(sizeof costs / sizeof costs[0]);
    sf_logical_seconds += costs[calls < n ? calls : n - 1];
    ++calls;
    (void)a; (void)lo; (void)hi;
    return 0;
}}
"""
    return StencilCode(name, signature, text, ("I", "J", "K"))


def _measured(
    tmp_path: Path,
    codes: list[StencilCode],
    grid_bytes: int = 2**20,
    clock: str = LOGICAL_CLOCK,
) -> Choice:
    """The choice ``MeasureVariants`` makes between stand-in ``codes`` of hdiff (two at most)
    on a grid of ``grid_bytes``, timed by ``clock``."""
    inp = np.zeros((14, 13, 5))
    program = stencils.hdiff_program.lower(inp, 0.025, inp.copy()).ir
    stencil = program.stencils[0]
    dims = StencilLayout.of(program, stencil, temporaries=True).dims
    grid = measurement_grid(program, stencil, dims, grid_bytes)
    variants = (Variant(True, (8, 32)), Variant(False, (8, 32)))[: len(codes)]
    request = MeasurementRequest(
        program.name,
        stencil.operator_name,
        variants,
        measurement_source(
            program, stencil, codes, grid, argument_struct(program), RUNTIME_C, 2**20,
            clock=clock,
        ),
        grid.describe(),
        "test machine",
    )
    return MeasureVariants(CCompilation(str(tmp_path / "c")), rounds=5)(request)


def test_one_cheap_call_does_not_make_a_candidate_the_fastest(tmp_path: Path) -> None:
    # The first candidate's calls cost 6 ms, but for one that reads 0.5 ms (as an
    # undercounted reading of the process clock would); the second's cost 3 ms each.
    choice = _measured(
        tmp_path,
        [costing_candidate(0, (6.0, 6.0, 0.5, 6.0, 6.0, 6.0)), costing_candidate(1, (3.0,))],
    )

    assert not choice.variant.temporaries
    (_, _, spiky), (_, _, steady) = choice.timings
    assert spiky == pytest.approx(6e-3) and steady == pytest.approx(3e-3)


def test_a_candidate_far_slower_in_the_first_round_is_timed_no_further(tmp_path: Path) -> None:
    # The second candidate's first timed call costs 4x the first's (past DROP_FACTOR, in
    # wall-clock and processor time alike, on one thread); its later calls would be the
    # cheapest of all, so only a candidate timed again could win with them.
    assert DROP_FACTOR < 4.0
    choice = _measured(
        tmp_path,
        [costing_candidate(0, (3.0,)), costing_candidate(1, (12.0, 12.0, 0.5))],
    )

    assert choice.variant.temporaries
    (_, _, kept), (_, wall, dropped) = choice.timings
    assert kept == pytest.approx(3e-3)
    # The one reading, not a later call's.
    assert wall == pytest.approx(12e-3) and dropped == pytest.approx(12e-3)


def test_a_candidate_within_the_factor_keeps_being_timed(tmp_path: Path) -> None:
    # 2x the first's in the first round (inside DROP_FACTOR): timed on, it wins with its
    # later, cheaper calls.
    assert DROP_FACTOR > 2.0
    choice = _measured(
        tmp_path,
        [costing_candidate(0, (3.0,)), costing_candidate(1, (6.0, 6.0, 0.5))],
    )

    assert not choice.variant.temporaries
    (_, _, first), (_, _, second) = choice.timings
    assert first == pytest.approx(3e-3) and second == pytest.approx(0.5e-3)


def _transparent_huge_pages() -> str:
    """The kernel's transparent huge page mode (``always``, ``madvise``, ``never``; ``""``
    where it has none)."""
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return ""
    return text.split("[", 1)[1].split("]", 1)[0] if "[" in text else ""


def huge_page_checking_candidate() -> StencilCode:
    """A candidate that fails (returns 3) unless the middle of its ``inp`` field lies in a
    mapping with huge pages (``AnonHugePages`` in ``/proc/self/smaps``)."""
    name = "sf_stencil_0"
    signature = (
        f'__attribute__((visibility("hidden"))) int {name}'
        "(const sf_args* restrict a, const int64_t* lo, const int64_t* hi)"
    )
    text = f"""
#include <stdio.h>
{signature} {{
    (void)lo; (void)hi;
    const unsigned long long at = (unsigned long long)(uintptr_t)(a->p_inp
        + sizeof(double) * (size_t)(a->n_inp[0] * a->n_inp[1] * a->n_inp[2] / 2));
    FILE* smaps = fopen("/proc/self/smaps", "r");
    if (!smaps) return 3;
    char line[512];
    int inside = 0;
    unsigned long long huge_kb = 0;
    while (fgets(line, sizeof line, smaps)) {{
        unsigned long long start, end, kb;
        if (sscanf(line, "%llx-%llx ", &start, &end) == 2) inside = start <= at && at < end;
        else if (inside && sscanf(line, "AnonHugePages: %llu kB", &kb) == 1) huge_kb = kb;
    }}
    fclose(smaps);
    return huge_kb > 0 ? 0 : 3;
}}
"""
    return StencilCode(name, signature, text, ("I", "J", "K"))


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or _transparent_huge_pages() not in ("always", "madvise"),
    reason="needs Linux with transparent huge pages (always, or on madvise)",
)
def test_the_fields_get_huge_pages_as_numpy_arrays_do(tmp_path: Path) -> None:
    # NumPy advises huge pages for its arrays of 4 MiB and up, so c_cpu's fields (NumPy
    # arrays) get them where the kernel gives them on advice; on the Zen 3 VM they decide
    # between streaming and plain stores (ADR 0009). The measured fields must match.
    choice = _measured(tmp_path, [huge_page_checking_candidate()], grid_bytes=2**25)

    assert choice.variant == Variant(True, (8, 32))


def test_every_timed_call_follows_a_write_of_the_last_level_cache() -> None:
    # ADR 0009: each call starts with the cache full of other modified lines, as in a time
    # step (and beside the harness's copy kernel), not as the candidate before left it.
    inp = np.zeros((14, 13, 5))
    program = stencils.hdiff_program.lower(inp, 0.025, inp.copy()).ir
    stencil = program.stencils[0]
    dims = StencilLayout.of(program, stencil, temporaries=True).dims
    grid = measurement_grid(program, stencil, dims, 2**20)
    code = costing_candidate(0, (0.1,))
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
