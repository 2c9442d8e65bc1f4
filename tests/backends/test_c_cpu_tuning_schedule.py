"""When c_cpu measures a stencil's variants: its tuning schedule (ADR 0009).

A stencil without a choice record is built at once with a predicted variant
(``backends.c.prediction``) and measured when the interpreter exits (``STENCILFORGE_TUNING=
exit``, the default), so that a later process builds the measured choice; ``off`` never
measures; ``now`` measures before the build (``test_c_cpu_variants.py``). Timings are never
asserted: only which variant a build used and whether a measurement ran.
"""

from __future__ import annotations

import multiprocessing
import shutil
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from c_programs import stencils
from c_programs.support import CompilerWrapper
from test_c_cpu_variants import (
    choice_records,
    lower_in_a_new_process,
    measurements,
    notes,
    private_backend,
)

from backends.c import deferred, measure_deferred
from backends.c.prediction import STATIC_PRIOR, predict, static_prediction
from backends.c.variants import VariantOptions, candidates

ROWS_STREAMING = "temporary rows, tiles 256x32, prefetch 2, streaming stores"


@pytest.fixture
def exit_schedule(monkeypatch: pytest.MonkeyPatch):
    """Backends made in this process predict and defer; the queue is left empty."""
    monkeypatch.setenv("STENCILFORGE_TUNING", "exit")
    yield
    measure_deferred()


def hdiff_arguments() -> tuple[np.ndarray, float, np.ndarray]:
    inp = np.random.default_rng(5).uniform(-1.0, 1.0, (14, 13, 5))
    return inp, 0.025, np.zeros_like(inp)


def damage(cache: Path, key: str) -> None:
    """Flip the last bytes of the choice store's entry ``key``."""
    with sqlite3.connect(cache / "choices" / "entries" / "cache.db") as connection:
        (value,) = connection.execute("SELECT value FROM Cache WHERE key = ?", (key,)).fetchone()
        damaged = bytes(value[:-8]) + bytes(b ^ 0x5A for b in value[-8:])
        connection.execute("UPDATE Cache SET value = ? WHERE key = ?", (damaged, key))


# --------------------------------------------------------------------------- cold: predicted


def test_a_cold_build_runs_the_predicted_variant_and_measures_only_when_asked(
    tmp_path, exit_schedule
):
    compiler = CompilerWrapper(tmp_path / "cc")
    program = stencils.hdiff_program.with_backend(private_backend(tmp_path / "cache", compiler))
    inp, coeff, out = hdiff_arguments()

    lowered = program.lower(inp, coeff, out)
    program(inp, coeff, out)

    assert notes(lowered.as_text())["hdiff"] == (
        f"{ROWS_STREAMING} (predicted: {STATIC_PRIOR}; measured later)"
    )
    expected = np.zeros_like(inp)
    stencils.hdiff_reference(inp, coeff, expected)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-14)
    assert measurements(compiler) == 0
    assert len(deferred.deferred()) == 1

    assert measure_deferred() == 1

    assert measurements(compiler) == 1
    assert deferred.deferred() == ()
    [(_, record)] = choice_records(tmp_path / "cache")
    assert record.how == "measured"
    # The new revision keys a new backend's translations apart: it builds the measured choice.
    revision = tmp_path / "cache" / "choices" / "revision"
    assert revision.read_text() and stat.S_IMODE(revision.stat().st_mode) == 0o600
    again = stencils.hdiff_program.with_backend(private_backend(tmp_path / "cache", compiler))
    note = notes(again.lower(inp, coeff, out).as_text())["hdiff"]
    assert note.startswith(f"{record.variant.describe()} (measured: on ")


# --------------------------------------------------------------------------- later processes


@pytest.fixture(scope="module")
def predicted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CompilerWrapper, str]:
    """A cache in which a first process built hdiff predicted and measured it at its exit."""
    root = tmp_path_factory.mktemp("predicted")
    compiler = CompilerWrapper(root / "cc")
    text = lower_in_a_new_process(root / "cache", compiler, "exit")
    return root / "cache", compiler, text


def test_a_later_process_builds_the_choice_measured_at_the_first_ones_exit(predicted, tmp_path):
    original, compiler, first = predicted
    cache = tmp_path / "cache"
    shutil.copytree(original, cache)  # translations and builds included
    assert "(predicted: " in notes(first)["hdiff"]
    assert measurements(compiler) == 1  # at the first process's exit
    [(_, record)] = choice_records(cache)

    text = lower_in_a_new_process(cache, compiler, "exit")

    assert notes(text)["hdiff"].startswith(f"{record.variant.describe()} (measured: on ")
    assert measurements(compiler) == 1


def test_a_damaged_choice_record_is_not_trusted_and_is_measured_again_at_exit(
    predicted, tmp_path
):
    original, compiler, first = predicted
    cache = tmp_path / "cache"
    shutil.copytree(original, cache)
    [(key, _)] = choice_records(cache)
    damage(cache, key)
    shutil.rmtree(cache / "translations")
    before = measurements(compiler)

    text = lower_in_a_new_process(cache, compiler, "exit")

    assert "(predicted: " in notes(text)["hdiff"]
    assert measurements(compiler) == before + 1
    [(_, record)] = choice_records(cache)
    assert record.how == "measured"


def test_off_predicts_and_never_measures(tmp_path):
    compiler = CompilerWrapper(tmp_path / "cc")

    text = lower_in_a_new_process(tmp_path / "cache", compiler, "off")

    assert notes(text)["hdiff"] == (
        f"{ROWS_STREAMING} (predicted: {STATIC_PRIOR}; not measured: STENCILFORGE_TUNING=off)"
    )
    assert measurements(compiler) == 0


def test_an_unknown_schedule_is_refused_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("STENCILFORGE_TUNING", "sometimes")
    with pytest.raises(ValueError, match=r"STENCILFORGE_TUNING='sometimes'.*exit, now, off"):
        private_backend(tmp_path / "cache", CompilerWrapper(tmp_path / "cc"))


# --------------------------------------------------------------------------- the queue


_FORKS = textwrap.dedent(
    """
    import multiprocessing, os
    from backends.c import deferred

    ran = []
    deferred.defer("parent", lambda: ran.append("parent"))
    pid = os.fork()
    if pid == 0:  # a forked child: what its parent deferred is not its own
        os._exit(0 if deferred.deferred() == () else 1)
    forked = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    def worker():  # a multiprocessing worker defers nothing
        os._exit(0 if deferred.defer("child", lambda: None) is False else 1)

    process = multiprocessing.get_context("fork").Process(target=worker)
    process.start()
    process.join(60)
    deferred.measure_deferred()
    print(forked, process.exitcode, ran)
    """
)


def test_a_forked_child_or_pool_worker_measures_nothing_of_its_parent_nor_its_own():
    # In a process of its own: this one may have threads (JAX's) that fork does not copy.
    done = subprocess.run(
        [sys.executable, "-c", _FORKS], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "0", "['parent']"]


def test_deferred_measurements_run_once_each_in_order_within_the_budget():
    ran: list[str] = []
    for name in ("a", "b", "a", "c"):
        deferred.defer(name, lambda name=name: ran.append(name))

    assert measure_deferred(budget_seconds=0.0) == 0
    assert deferred.deferred() == ("a", "b", "c")
    assert measure_deferred() == 3
    assert ran == ["a", "b", "c"]


# --------------------------------------------------------------------------- the prediction


def test_the_static_prior_is_rows_and_streaming_with_shifted_locals_else_prefetching():
    assert static_prediction(candidates(True)).describe() == ROWS_STREAMING
    assert static_prediction(candidates(False)).describe() == (
        "temporaries, tiles 64x16, prefetch 1 along the outermost, streaming stores"
    )
    assert static_prediction(candidates(False, VariantOptions(tile_sizes=(8, 32)))).describe() == (
        "temporaries, tiles 8x32, prefetch 4, streaming stores"
    )
    assert static_prediction(candidates(True, VariantOptions(temporaries=False))).describe() == (
        "recompute, tiles 16x64, prefetch 4, streaming stores"
    )


def test_a_prediction_says_so_and_when_its_candidates_are_measured():
    found = candidates(True)
    choice = predict(found, "later")
    assert choice.variant == static_prediction(found) and choice.variant in found
    assert choice.describe() == f"{ROWS_STREAMING} (predicted: {STATIC_PRIOR}; later)"


def test_the_environment_variable_is_read_when_the_pipeline_is_made(tmp_path, monkeypatch):
    monkeypatch.setenv("STENCILFORGE_TUNING", "now")
    backend = private_backend(tmp_path / "cache", CompilerWrapper(tmp_path / "cc"))
    monkeypatch.setenv("STENCILFORGE_TUNING", "off")
    assert backend.pipeline.translation.step.tuning.schedule == "now"
