"""Choosing a tiled stencil's variant by measuring the candidates once per machine.

``Tuning.choose`` gives the translation a ``Choice`` for one stencil. When the options leave
more than one candidate (``backends.c.variants.candidates``), it looks for the choice
record of ``MeasureVariants``, a step cached on disk like the translations (self-verifying
entries, ADR 0015) under a key made of the candidates' generated code, the compiler and its
flags, and ``machine_identity()``. Stencils without shifted locals share one record per
machine and number of outer dimensions (``shared_scope``): their candidates differ only in
how rows are fetched and stored and in the tiles that go with it.

Without a record, the tuning's ``schedule`` decides (ADR 0009, ``STENCILFORGE_TUNING``):
``"exit"`` (the default) builds the predicted variant (``backends.c.prediction``) at once
and measures the candidates when the interpreter exits (``backends.c.deferred``), so a later
process builds the measured choice; ``"now"`` measures before the build; ``"off"`` predicts
and never measures.

``MeasureVariants`` builds the measuring executable (``backends.c.measurement``: one unit
per candidate, compiled concurrently, plain C), runs it on arrays it allocates, and picks the
candidate with the least processor time per call (the median over the rounds, the
candidates interleaved; OpenMP's waiting threads sleep). Processor time, not wall-clock
time: on a machine shared with other work, a descheduled thread makes a call's wall time
several times longer at random, while the processor time of the work (memory stalls
included) moves by a few percent. The median, since a single reading of the process clock
can be a third off (``backends.c.measurement``; ADR 0009 has the figures).
Runs on one machine take turns (a file lock in the build cache), so concurrent builds (a
process pool of ``compile_many``) do not measure at the same time; a compile in another
worker may still disturb a run, which the interleaving spreads over all candidates.
"""

from __future__ import annotations

import functools
import logging
import os
import subprocess
import tempfile
import uuid
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

import attrs
import filelock

from backends import loops
from backends.build_cache import BuildCache, BuildSpace
from backends.c import deferred
from backends.c.bindings import argument_struct
from backends.c.codegen import generate_stencil
from backends.c.compilation import CCompilation
from backends.c.machine import last_level_cache_bytes, machine_description, machine_identity
from backends.c.measurement import measurement_grid, measurement_source
from backends.c.prediction import predict
from backends.c.variants import Choice, Variant, VariantOptions, choose_unmeasured
from backends.clike.compiler import CompilationError
from backends.clike.generator import StencilSite
from backends.clike.runtime import runtime_for
from backends.loops import StencilLayout
from pipeline.caching import CachedStep, DiskStepCache, StepCache
from pipeline.config import TUNING_SCHEDULES, TUNING_VARIABLE
from pipeline.dsl.ir.nodes import ProgramIR, Stencil
from pipeline.fingerprint import source_digest

__all__ = [
    "REVISION_FILE",
    "SHARED_SCOPE",
    "MeasureVariants",
    "MeasurementRequest",
    "MeasurementWarning",
    "Tuning",
    "shared_scope",
]

_log = logging.getLogger(__name__)

R = TypeVar("R")


@functools.cache
def _generator_digest() -> str:
    """A digest of the code that generates and times the candidates: backends.loops and every
    module of the C and C-like generators (a choice made by other code is measured again)."""
    return source_digest(loops, packages=("backends.c", "backends.clike"))


class MeasurementWarning(RuntimeWarning):
    """Measuring a stencil's variants failed; the build uses the first candidate."""


@attrs.frozen
class MeasurementRequest:
    """What to measure: the input of ``MeasureVariants`` (and its choice record's key).

    Attributes:
        program: the program's name (for messages).
        stencil: the field operator the stencil calls (for messages).
        variants: the candidates, in the order of the executable's units.
        text: the measuring executable's source (``measurement_source``).
        grid: the grid in words.
        machine: ``machine_identity()`` of the machine that measures.
        scope: empty, or what else the choice holds for (``shared_scope``): then the
            record's key is the scope, the candidates, the machine and the generator's code
            alone, not this stencil's, and the first stencil measured decides for all.
    """

    program: str
    stencil: str
    variants: tuple[Variant, ...]
    text: str
    grid: str
    machine: str
    scope: str = ""

    def __fingerprint__(self) -> object:
        if self.scope:
            return (
                self.scope,
                self.variants,
                self.machine,
                _generator_digest(),
            )
        return (self.program, self.stencil, self.variants, self.text, self.grid, self.machine)


#: The scope of the choice of a stencil without shifted locals: its candidates differ in how
#: rows are fetched and stored only (prefetching, streaming stores, the tiles a prefetch
#: along the tile's outermost dimension goes with), a property of the machine's memory more
#: than of the stencil, so one measurement per machine and number of outer dimensions
#: (``shared_scope``) serves them all (measuring each one cost every small program's first
#: build about 0.4 s).
SHARED_SCOPE = "for every stencil without shifted locals"


def shared_scope(outer_dimensions: int) -> str:
    """The scope of the shared choice of stencils without shifted locals over
    ``outer_dimensions`` outer dimensions (the tiles cover some of them)."""
    plural = "" if outer_dimensions == 1 else "s"
    return f"{SHARED_SCOPE} over {outer_dimensions} outer dimension{plural}"


@attrs.frozen
class MeasureVariants:
    """Build and run a ``MeasurementRequest``'s executable; the fastest candidate.

    Attributes:
        compilation: builds the executable (its compiler and flags, as the program's build).
        rounds: timed calls of each candidate (the median processor time counts), after one
            warm-up call; fewer (at least two) when the rounds take more than a second.
        timeout: seconds the executable may run.
    """

    compilation: CCompilation
    rounds: int = attrs.field(default=5, validator=attrs.validators.ge(2))
    timeout: float = 120.0

    def __fingerprint__(self) -> object:
        return (self.compilation, self.rounds)

    def __call__(self, request: MeasurementRequest, /) -> Choice:
        """The fastest of ``request.variants`` on this machine.

        Raises:
            CompilationError: the executable did not build.
            RuntimeError: it failed or printed no timings (naming the program).
        """
        builds = BuildCache(Path(self.compilation.build_directory))
        root = Path(self.compilation.build_directory)

        def measure(space: BuildSpace, workdir: Path) -> Choice:
            executable = self.compilation.build_units(
                f"the variant measurement of {request.program}",
                request.text,
                workdir,
                workdir / "measure",
                shared=False,
            )
            # Waiting threads sleep, so processor time counts the work alone.
            environment = dict(os.environ, OMP_WAIT_POLICY="passive")
            with filelock.FileLock(str(root / "measure.lock"), mode=0o600):
                done = subprocess.run(
                    [str(executable), str(self.rounds)],
                    capture_output=True,
                    text=True,
                    timeout=self.timeout,
                    check=False,
                    env=environment,
                )
            timings = _parse(done.stdout, len(request.variants))
            if done.returncode != 0 or timings is None:
                raise RuntimeError(
                    f"measuring the variants of {request.stencil} in {request.program} failed "
                    f"(exit {done.returncode}): {done.stderr.strip()[-400:]}"
                )
            measured = tuple(
                (variant, wall, cpu)
                for variant, (wall, cpu) in zip(request.variants, timings, strict=True)
            )
            best = min(measured, key=lambda entry: entry[2])[0]
            _log.info(
                "measured the variants of %s in %s: %s", request.stencil, request.program,
                ", ".join(f"{v.describe()} {cpu * 1e3:.2f} ms" for v, _, cpu in measured),
            )
            where = (
                f"{request.scope}, on {machine_description()}"
                if request.scope
                else f"on {request.grid}, {machine_description()}"
            )
            return Choice(best, "measured", where, measured)

        return builds.build("measure", measure)


def _parse(output: str, count: int) -> tuple[tuple[float, float], ...] | None:
    """The timings ``<candidate> <wall seconds> <processor seconds>`` per line, in candidate
    order (None: one is missing)."""
    found: dict[int, tuple[float, float]] = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].isdigit():
            found[int(parts[0])] = (float(parts[1]), float(parts[2]))
    if sorted(found) != list(range(count)):
        return None
    return tuple(found[n] for n in range(count))


class _NotRecorded(Exception):
    """Nothing is recorded under the key looked up (internal)."""


def _recorded(step: CachedStep[R, Choice], inp: R) -> Choice | None:
    """What ``step``'s cache holds for ``inp`` (None: nothing, or something damaged, which
    the cache evicted), without computing it. While another process computes it (a
    measurement at its exit), this waits for its result (the disk cache's single flight)."""

    def absent() -> Choice:
        raise _NotRecorded

    try:
        found, _ = step.cache.get_or_compute(step.cache_key(inp), absent)
    except _NotRecorded:
        return None
    return found if isinstance(found, Choice) else None


#: The file beside the choice records whose text changes whenever a choice is measured.
REVISION_FILE = "revision"


@attrs.frozen
class Tuning:
    """Choices of the C translation's automatic options, measured once per machine.

    A stencil whose choice is recorded is built with it. One without is, depending on
    ``schedule``, measured before the build (``"now"``), or built with the predicted variant
    (``backends.c.prediction``) and measured when the interpreter exits (``"exit"``,
    ``backends.c.deferred``) or never (``"off"``). A translation that holds a prediction is
    keyed by the records' revision (``revision``), which every new measured choice changes:
    a later process translates again and uses the measured choice.

    Attributes:
        compilation: builds the measuring executables.
        records: where the choice records live (a disk step cache; ``eq=False``: where they
            are does not change what they say).
        rounds: timed calls per candidate.
        schedule: ``"now"``, ``"exit"`` or ``"off"`` (``STENCILFORGE_TUNING``, read by
            ``c_cpu_pipeline``).
    """

    compilation: CCompilation
    records: StepCache = attrs.field(eq=False)
    rounds: int = attrs.field(default=5, validator=attrs.validators.ge(2))
    schedule: str = attrs.field(
        default=TUNING_SCHEDULES[0], validator=attrs.validators.in_(TUNING_SCHEDULES)
    )

    def __fingerprint__(self) -> object:
        # An automatic translation's text depends on what was measured on this machine; one
        # that may predict, also on which choices are recorded yet.
        revision = "" if self.schedule == "now" else self.revision()
        return (
            MeasureVariants(self.compilation, self.rounds),
            machine_identity(),
            _generator_digest(),
            self.schedule,
            revision,
        )

    def revision(self) -> str:
        """The records' revision: changed by every choice measured into them (``""``: none
        measured, or the records are not on disk)."""
        path = self._revision_path()
        try:
            return path.read_text() if path is not None else ""
        except OSError:
            return ""

    def _revision_path(self) -> Path | None:
        if isinstance(self.records, DiskStepCache):
            return self.records.directory / REVISION_FILE
        return None

    def _new_revision(self) -> None:
        """Publish a new revision (atomically: a reader sees the old text or the new)."""
        path = self._revision_path()
        if path is None:
            return
        try:
            with tempfile.NamedTemporaryFile(
                "w", dir=path.parent, prefix=".revision-", delete=False
            ) as written:
                written.write(uuid.uuid4().hex)
            os.replace(written.name, path)
        except OSError as error:
            _log.warning("could not publish the choice records' revision %s: %s", path, error)

    def choose(
        self,
        program: ProgramIR,
        stencil: Stencil,
        *,
        unit_stride: Mapping[str, bool],
        options: VariantOptions,
        parallel_min_points: int,
        streaming_min_bytes: int,
    ) -> Choice:
        """The variant of ``stencil`` within ``options``: the only candidate, the recorded
        choice, else as ``schedule`` says: measured now, or predicted. A failed measurement
        now warns (``MeasurementWarning``) and takes the first candidate."""
        found = choose_unmeasured(program, stencil, options)
        if isinstance(found, Choice):
            return found
        request = _request(
            program, stencil, found, unit_stride, parallel_min_points, streaming_min_bytes
        )
        step = CachedStep(MeasureVariants(self.compilation, self.rounds), self.records)
        if self.schedule == "now":
            try:
                return self.measure(step, request)
            except _MEASUREMENT_ERRORS as error:
                warnings.warn(
                    f"could not measure the variants of {stencil.operator_name} in "
                    f"{program.name} ({error}); using {found[0].describe()}. Pass "
                    "temporaries=, tile_sizes=, prefetch_distance= and streaming_stores= to "
                    "CTranslation to choose without measuring",
                    MeasurementWarning,
                    stacklevel=2,
                )
                return Choice(found[0], "default", f"measurement failed: {type(error).__name__}")
        recorded = _recorded(step, request)
        if recorded is not None:
            return recorded
        if self.schedule == "off":
            return predict(found, f"not measured: {TUNING_VARIABLE}=off")
        measure = functools.partial(self._measure_later, step, request)
        deferred.defer(step.cache_key(request), measure)
        return predict(found, "measured later")

    def measure(
        self, step: CachedStep[MeasurementRequest, Choice], request: MeasurementRequest
    ) -> Choice:
        """``request``'s choice, measured unless recorded; a new measurement also publishes a
        new revision of the records.

        Raises:
            CompilationError, RuntimeError, OSError, subprocess.TimeoutExpired: the
                measurement failed.
        """
        choice, hit = step.call_with_hit(request)
        if not hit:
            self._new_revision()
        return choice

    def _measure_later(
        self, step: CachedStep[MeasurementRequest, Choice], request: MeasurementRequest
    ) -> None:
        try:
            choice = self.measure(step, request)
        except _MEASUREMENT_ERRORS as error:
            _log.warning(
                "could not measure the variants of %s in %s (%s); it keeps its predicted "
                "variant", request.stencil, request.program, error,
            )
            return
        _log.info("measured %s in %s: %s", request.stencil, request.program, choice.describe())


_MEASUREMENT_ERRORS = (CompilationError, RuntimeError, OSError, subprocess.TimeoutExpired)


def _request(
    program: ProgramIR,
    stencil: Stencil,
    found: tuple[Variant, ...],
    unit_stride: Mapping[str, bool],
    parallel_min_points: int,
    streaming_min_bytes: int,
) -> MeasurementRequest:
    """The measurement of ``stencil``'s candidates ``found``: its executable's source
    (generating every candidate) and what keys its choice record."""
    layout = StencilLayout.of(program, stencil, temporaries=True)
    grid = measurement_grid(
        program, stencil, layout.dims, min(max(2 * last_level_cache_bytes(), 2**26), 2**28)
    )
    codes = [
        generate_stencil(
            StencilSite(program, stencil, number, unit_stride),
            temporaries=variant.temporaries,
            tile_sizes=variant.tile_sizes,
            parallel_min_points=parallel_min_points,
            prefetch_distance=variant.prefetch_distance,
            streaming_min_bytes=streaming_min_bytes if variant.streaming_stores else None,
            rows=variant.temporary_rows,
            prefetch_outer=variant.prefetch_outer,
        )
        for number, variant in enumerate(found)
    ]
    helpers = dict.fromkeys(helper for code in codes for helper in code.helpers)
    used = "\n".join([*helpers, *(code.text for code in codes)])
    text = measurement_source(
        program,
        stencil,
        codes,
        grid,
        argument_struct(program),
        "\n".join([runtime_for(used), *helpers]),
        last_level_cache_bytes(),
    )
    return MeasurementRequest(
        program.name,
        stencil.operator_name,
        found,
        text,
        grid.describe(),
        machine_identity(),
        "" if layout.temporaries else shared_scope(len(layout.dims) - 1),
    )
