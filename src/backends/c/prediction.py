"""The variant a stencil is built with before its candidates are measured: a prediction.

A first build that measured its candidates paid for compiling and timing all of them before
its first result (hdiff: 0.87 of a 0.99 s cold compile). A stencil without a choice record
is built instead with a predicted variant at once, and measured afterwards
(``backends.c.tuning``, ``backends.c.deferred``).

The prediction is a static prior: the variant that won most of the measurements in ADR
0009's notes, temporaries in rows with streaming stores where locals are shifted, rows
prefetched ahead along the tile's outermost dimension into L2 with streaming stores where
not (then one record per machine and number of outer dimensions serves every such stencil,
so the prediction is used about once per machine). Streaming stores only act on domains
whose outputs exceed half the last-level cache, so predicting them costs small domains
nothing.

Measured against (``python -m benchmarks.tuning_figures agreement``, ADR 0009's notes): on the
corpus's six stencils with shifted locals, the prior equalled the measured choice for half,
and where it did not its variant took 1.1x the winner's time (median). A cost model of
arithmetic against bytes ranked two machines opposite to its prediction, and this machine's
first measured winner as the prediction for the next stencils agreed with none of the six
(ADR 0009, Alternatives): the stencils differ more than the machine's preference holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from backends.c.variants import DEFAULT_PREFETCH_DISTANCE, Choice, Variant

__all__ = ["STATIC_PRIOR", "predict", "static_prediction"]

#: What the static prior says, in words (part of a predicted choice's reason).
STATIC_PRIOR = "the variant measured fastest most often (ADR 0009)"


def _preference(variant: Variant) -> tuple[int, ...]:
    """Smaller is preferred: rows, then whole-tile buffers, then recomputation; streaming
    stores; rows prefetched along the outermost dimension; the default prefetch distance."""
    way = 0 if variant.temporary_rows else (1 if variant.temporaries else 2)
    return (
        way,
        0 if variant.streaming_stores else 1,
        0 if variant.prefetch_outer else 1,
        0 if variant.prefetch_distance == DEFAULT_PREFETCH_DISTANCE else 1,
    )


def static_prediction(candidates: Sequence[Variant]) -> Variant:
    """The static prior's pick among ``candidates`` (not empty): the first of the most
    preferred (``_preference``), so the pick is the same whatever the machine."""
    return min(candidates, key=_preference)


def predict(candidates: Sequence[Variant], when: str) -> Choice:
    """The predicted choice among ``candidates`` (not empty), its reason ending in ``when``
    (when the candidates will be measured, in words)."""
    return Choice(static_prediction(candidates), "predicted", f"{STATIC_PRIOR}; {when}")
