"""The guide's example backend and its recipes (the corpus runs it through tests/dsl)."""

from __future__ import annotations

import time

import attrs
import numpy as np
from c_programs import stencils
from numpy_source_backend import PythonArtifact, numpy_source

from pipeline import ProgramSource, StageEvent, subscribe


def _lap_arguments():
    inp = np.random.default_rng(5).uniform(-1, 1, (9, 8, 4))
    return inp, np.zeros_like(inp)


def test_the_example_translates_to_numpy_slicing_over_the_output_domain():
    inp, out = _lap_arguments()
    source = stencils.lap.with_backend(numpy_source).lower(inp, out).source
    assert isinstance(source, ProgramSource) and source.format.language == "python"
    assert "out[I0:I1, J0:J1, K0:K1] = " in source.text
    assert "inp[I0 + 1:I1 + 1, J0:J1, K0:K1]" in source.text
    assert source.text.startswith("def lap(inp, out):\n    # stencil 0: laplacian")


def test_a_one_option_variant_is_one_line_and_keeps_the_disk_caches():
    plain = attrs.evolve(numpy_source, name="numpy_source_plain",
                         pipeline=numpy_source.pipeline.evolve_step("translation", comments=False))
    inp, out = _lap_arguments()
    assert "# stencil" not in stencils.lap.with_backend(plain).lower(inp, out).as_text()
    assert plain.pipeline.translation.cache is numpy_source.pipeline.translation.cache
    stencils.lap.with_backend(plain)(inp, out)
    expected = np.zeros_like(inp)
    stencils.lap_reference(inp, expected)
    np.testing.assert_allclose(out, expected, rtol=1e-13)


@attrs.frozen
class Timed:
    """The guide's wrapper recipe: a frozen attrs class with a ``step`` field."""

    step: object
    seconds: list = attrs.field(factory=list, eq=False)

    def __call__(self, source):
        start = time.perf_counter()
        try:
            return self.step(source)
        finally:
            self.seconds.append(time.perf_counter() - start)


def test_a_step_wrapper_is_seen_through_by_evolve_step_and_the_agreement_check():
    pipeline = numpy_source.pipeline
    timed = attrs.evolve(pipeline, compilation=Timed(pipeline.compilation))
    evolved = timed.evolve_step("translation", comments=False)  # another stage: untouched
    assert isinstance(evolved.compilation, Timed)
    backend = attrs.evolve(numpy_source, name="numpy_source_timed", pipeline=timed)
    inp, out = _lap_arguments()
    events: list[StageEvent] = []
    with subscribe(events.append):
        stencils.lap.with_backend(backend)(inp, out)
    assert len(timed.compilation.seconds) == 1
    assert isinstance(next(e.artifact for e in events if e.stage == "compilation"),
                      PythonArtifact)
