"""c_cpu's tuning schedule in figures: a stencil's first result, and how often the prediction
is the measured choice (ADR 0009).

Run: ``python -m benchmarks.tuning_figures schedules [--rounds 5]`` and
``python -m benchmarks.tuning_figures agreement``.

``schedules`` times, for hdiff and laplacian on c_cpu, in fresh processes
(``benchmarks.probe``) each over a new cache directory, the first result (after the imports)
and the cold compile (the sum of the stage events) of

- ``predicted``: ``STENCILFORGE_TUNING=exit``, nothing recorded: the predicted variant is
  built at once (the process then measures when it exits, after its result);
- ``measured``: ``STENCILFORGE_TUNING=now``, nothing recorded: the candidates are measured
  before the build;
- ``chosen alone``: the measured run's choice records alone in the cache: the chosen variant
  is compiled, nothing measured or predicted;

interleaved (each round in another order, ``chosen alone`` after ``measured``), and prints
the medians, every sample, and the ratio to ``chosen alone`` (the issue's bound: 1.5).

``agreement`` measures every tiled stencil of the conformance corpus (``now``, one fresh
record store) and compares each measured choice with the prediction
(``backends.c.prediction``) and with this machine's first measured choice among the same
candidates (an alternative prediction, measured before the stencil); it prints how often each
equals the measured choice (stencils without shifted locals share one record: one choice),
and what the prediction cost where it did not (its median processor time over the winner's,
from the choice record's figures; a candidate dropped after its first round has that one
reading).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

import attrs

import allocators
from backends import CompiledBackend
from backends.c import CCompilation, CTranslation, Tuning, c_cpu_pipeline, compile_time_args
from backends.c.prediction import predict
from backends.c.variants import Choice, Variant, VariantOptions, choose_unmeasured
from backends.clike.source import unit_stride_flags
from backends.conformance import corpus
from backends.loops import StencilLayout, plan_sweeps
from benchmarks.pipeline_figures import CHOICES, compile_seconds, run_probe
from pipeline.caching import DiskStepCache
from pipeline.dsl.stages import CompilableProgram

__all__ = ["Agreement", "StencilAgreement", "main", "measure_agreement", "measure_schedules"]

WORKLOADS = ("hdiff", "laplacian")
MODES = ("predicted", "measured", "chosen alone")


def _round(workload: str, order: int, timeout: float) -> dict[str, dict[str, Any]]:
    """One round of the three modes for ``workload``; ``order`` picks their sequence."""
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="sf-tuning-") as root:

        def predicted() -> None:
            cache = Path(root) / "predicted"
            cache.mkdir(mode=0o700)
            results["predicted"] = run_probe(
                "c_cpu", workload, str(cache), timeout, {"STENCILFORGE_TUNING": "exit"}
            )

        def measured_then_alone() -> None:
            cache = Path(root) / "measured"
            cache.mkdir(mode=0o700)
            results["measured"] = run_probe(
                "c_cpu", workload, str(cache), timeout, {"STENCILFORGE_TUNING": "now"}
            )
            alone = Path(root) / "alone"
            alone.mkdir(mode=0o700)
            shutil.copytree(cache / CHOICES, alone / CHOICES)
            results["chosen alone"] = run_probe(
                "c_cpu", workload, str(alone), timeout, {"STENCILFORGE_TUNING": "now"}
            )

        steps = (predicted, measured_then_alone)
        for step in steps if order % 2 == 0 else reversed(steps):
            step()
    return results


def measure_schedules(rounds: int, timeout: float = 600.0) -> dict[str, dict[str, list[Any]]]:
    """Per workload and mode: ``[first results], [cold compiles]`` over ``rounds`` rounds."""
    figures: dict[str, dict[str, list[Any]]] = {}
    for workload in WORKLOADS:
        firsts: dict[str, list[float]] = {mode: [] for mode in MODES}
        compiles: dict[str, list[float]] = {mode: [] for mode in MODES}
        for order in range(rounds):
            for mode, result in _round(workload, order, timeout).items():
                firsts[mode].append(result["first_result_seconds"])
                compiles[mode].append(compile_seconds(result))
        figures[workload] = {mode: [firsts[mode], compiles[mode]] for mode in MODES}
    return figures


@attrs.frozen
class StencilAgreement:
    """One stencil's measured choice beside what was predicted for it.

    Attributes:
        case: the corpus case; ``stencil`` its field operator.
        shifted_locals: whether it has locals read at shifted positions.
        measured: the measured choice (with the record's figures).
        static: the predicted variant (``backends.c.prediction``).
        machine: this machine's first measured choice among the same candidates before this
            stencil's (the prediction where there was none).
    """

    case: str
    stencil: str
    shifted_locals: bool
    measured: Choice
    static: Variant
    machine: Variant

    def cost(self, predicted: Variant) -> float | None:
        """The predicted variant's median processor time over the winner's (None: the
        record has no figure for it)."""
        times = {variant: cpu for variant, _, cpu in self.measured.timings}
        if predicted not in times or self.measured.variant not in times:
            return None
        return times[predicted] / times[self.measured.variant]


@attrs.frozen
class Agreement:
    """Every tiled stencil of the corpus, in the order measured."""

    stencils: tuple[StencilAgreement, ...]


def _backend(cache: Path, translation: CTranslation) -> CompiledBackend:
    compilation = CCompilation(str(cache / "c"))
    return CompiledBackend(
        "c_cpu_agreement",
        allocators.NumPyBufferAllocator(),
        c_cpu_pipeline(cache, translation=translation, compilation=compilation, cache_url=""),
        compile_time_args=compile_time_args,
    )


def measure_agreement() -> Agreement:
    """Measure the corpus's tiled stencils (see the module docstring)."""
    found: list[StencilAgreement] = []
    with tempfile.TemporaryDirectory(prefix="sf-agreement-") as directory:
        cache = Path(directory)
        tuning = Tuning(
            CCompilation(str(cache / "c")), DiskStepCache(cache / CHOICES), schedule="now"
        )
        measuring = CTranslation(tuning=tuning)
        untuned = _backend(cache, CTranslation())
        priors: dict[tuple[Variant, ...], Choice] = {}
        for case in corpus.CASES:
            lowered = case.program.with_backend(untuned).lower(**case.build())
            compilable = lowered.program
            assert isinstance(compilable, CompilableProgram)
            ir = compilable.ir
            unit = unit_stride_flags(ir, compilable.compile_time_args)
            for stencil in ir.stencils:
                candidates = choose_unmeasured(ir, stencil, VariantOptions())
                if plan_sweeps(stencil) is not None or isinstance(candidates, Choice):
                    continue
                static = predict(candidates, "").variant
                earlier = priors.get(candidates)
                machine = static if earlier is None else earlier.variant
                measured = measuring.choose(ir, stencil, unit)
                priors.setdefault(candidates, measured)
                shifted = bool(StencilLayout.of(ir, stencil, temporaries=True).temporaries)
                found.append(StencilAgreement(
                    case.name, stencil.operator_name, shifted, measured, static, machine,
                ))
    return Agreement(tuple(found))


def _report_agreement(agreement: Agreement) -> None:
    shared = [s for s in agreement.stencils if not s.shifted_locals]
    if shared:
        first = shared[0]
        verdict = "equals" if first.static == first.measured.variant else "differs from"
        print(f"stencils without shifted locals: {len(shared)}, one shared choice "
              f"({first.measured.variant.describe()}); the prediction {verdict} it")
    group = [s for s in agreement.stencils if s.shifted_locals]
    print(f"stencils with shifted locals: {len(group)}")
    for label, pick in (("prediction", "static"), ("machine's first choice", "machine")):
        agree = sum(getattr(s, pick) == s.measured.variant for s in group)
        costs = [
            cost for s in group
            if getattr(s, pick) != s.measured.variant
            and (cost := s.cost(getattr(s, pick))) is not None
        ]
        where = (
            f"; where not, it took {statistics.median(costs):.2f}x the winner's time "
            f"(median, max {max(costs):.2f}x)" if costs else ""
        )
        print(f"  {label}: {agree}/{len(group)} equal the measured choice{where}")
    for s in group:
        same = "=" if s.static == s.measured.variant else "!="
        print(f"    {s.case}/{s.stencil}: measured {s.measured.variant.describe()} {same}")


def _report_schedules(figures: dict[str, dict[str, list[Any]]]) -> None:
    for workload, modes in figures.items():
        alone = statistics.median(modes["chosen alone"][0])
        for mode, (firsts, compiles) in modes.items():
            first = statistics.median(firsts)
            samples = ", ".join(f"{t * 1e3:.0f}" for t in firsts)
            print(
                f"{workload:10s} {mode:13s} first result {first * 1e3:6.0f} ms "
                f"({first / alone:.2f}x chosen alone; {samples}), cold compile "
                f"{statistics.median(compiles) * 1e3:6.0f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figures", choices=("schedules", "agreement"))
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    if options.figures == "schedules":
        _report_schedules(measure_schedules(options.rounds))
    else:
        _report_agreement(measure_agreement())


if __name__ == "__main__":
    main()
