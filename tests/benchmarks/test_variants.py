"""``python -m benchmarks.variants``: A/B of backends and of any step option."""

from __future__ import annotations

import re

import pytest

import backends
from benchmarks.variants import (
    main,
    option_variant,
    parse_variant,
    translation_variant,
)

requires_c_cpu = pytest.mark.skipif(
    "c_cpu" not in backends.available_backends(), reason="c_cpu needs a C compiler"
)


def test_a_variant_is_a_name_and_python_literals():
    assert parse_variant("wide:tile_sizes=(16, 64);prefetch_distance=0") == (
        "wide",
        {"tile_sizes": (16, 64), "prefetch_distance": 0},
    )
    assert parse_variant("same:") == ("same", {})


def test_a_value_that_is_no_python_literal_is_text():
    assert parse_variant("o2:compilation.flags=-O2 -g") == (
        "o2", {"compilation.flags": "-O2 -g"}
    )


@pytest.mark.parametrize("text", ["no_colon", ":tile_sizes=(1,2)", "x:tile_sizes", "x:=3"])
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


@requires_c_cpu
def test_each_row_says_the_unit_of_its_numbers(capsys):
    assert main(["laplacian", "--size", "small", "--rounds", "1", "--repeat", "1",
                 "nopf:prefetch_distance=0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "fraction of the copy bandwidth" in lines[0]
    for line in lines[1:]:
        # Before: "median 0.222 (35.9 ms per call, 1.00x)", a number with no unit.
        assert re.search(
            r"median \d+\.\d{3} of copy bandwidth \([\d.]+ (s|ms|us|ns) per call, "
            r"[\d.]+x default\)",
            line,
        ), line


def test_the_help_documents_both_option_forms_and_the_output(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    for form in ("NAME:STAGE.OPTION=VALUE", "NAME:OPTION=VALUE", "NAME=BACKEND",
                 "nopf:prefetch_distance=0", "fraction of the copy kernel's bandwidth"):
        assert form in help_text


@requires_c_cpu
def test_any_stage_option_varies_and_text_splits_into_a_tuple_option():
    variant = option_variant("o2", backends.c_cpu, {"compilation.flags": "-O2 -g"})
    assert variant.pipeline.compilation.step.flags == ("-O2", "-g")
    assert variant.pipeline.translation is backends.c_cpu.pipeline.translation
    with pytest.raises(ValueError, match="'compile' is not a stage"):
        option_variant("x", backends.c_cpu, {"compile.flags": "-O2"})


@requires_c_cpu
def test_an_option_variant_and_another_backend_run_against_the_base(capsys):
    assert main(["laplacian", "--size", "small", "--rounds", "1", "--repeat", "2",
                 "o2:compilation.flags=-O2", "numpy=embedded_numpy"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "largest difference from NumPy" in lines[0]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {"default", "o2", "numpy"}
    assert "diff 0.0e+00" in rows["default"] and "1.00x" in rows["default"]
    assert float(rows["numpy"].split("diff ")[1].split()[0]) < 1e-12


def test_an_unknown_backend_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["laplacian", "x=no_such_backend"])
    assert exit_info.value.code == 2
    assert "no_such_backend" in capsys.readouterr().err
