"""``python -m benchmarks.variants``: A/B of c_cpu translation options."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
if str(PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(PROJECT_ROOT))

import backends  # noqa: E402
from benchmarks.variants import main, parse_variant, translation_variant  # noqa: E402

requires_c_cpu = pytest.mark.skipif(
    "c_cpu" not in backends.available_backends(), reason="c_cpu needs a C compiler"
)


def test_a_variant_is_a_name_and_python_literals():
    assert parse_variant("wide:tile_sizes=(16, 64);prefetch_distance=0") == (
        "wide",
        {"tile_sizes": (16, 64), "prefetch_distance": 0},
    )
    assert parse_variant("same:") == ("same", {})


@pytest.mark.parametrize("text", ["no_colon", ":tile_sizes=(1,2)", "x:tile_sizes", "x:a=b c"])
def test_a_malformed_variant_says_what_is_wrong(text):
    with pytest.raises(ValueError, match="variant"):
        parse_variant(text)


@requires_c_cpu
def test_a_variant_evolves_c_cpus_translation_and_nothing_else():
    variant = translation_variant("nopf", {"prefetch_distance": 0})
    assert variant.name == "nopf"
    assert variant.pipeline.translation.step.prefetch_distance == 0
    assert variant.pipeline.frontend is backends.c_cpu.pipeline.frontend
    assert variant.pipeline.compilation is backends.c_cpu.pipeline.compilation


@requires_c_cpu
def test_an_unknown_option_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["laplacian", "x:no_such_option=1"])
    assert exit_info.value.code == 2
    assert "no_such_option" in capsys.readouterr().err


@requires_c_cpu
def test_variants_run_in_rounds_and_report_their_fractions(capsys):
    assert main(["laplacian", "--size", "small", "--rounds", "2", "--repeat", "2",
                 "nopf:prefetch_distance=0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("laplacian small")
    for name, line in zip(("default", "nopf"), lines[1:], strict=True):
        assert line.split()[0] == name
        assert len(line.split("rounds:")[1].split()) == 2
