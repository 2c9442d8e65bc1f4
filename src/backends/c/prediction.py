"""The variant a stencil is built with before its candidates are measured: a prediction.

A first build that measured its candidates paid for compiling and timing all of them before
its first result (hdiff: 0.87 of a 0.99 s cold compile). A stencil without a choice record
is built instead with a predicted variant at once, and measured afterwards
(``backends.c.tuning``, ``backends.c.deferred``). The prediction is, in this order:

1. **This machine's prior**: the measured winner of the first stencil with the same
   candidates measured on this machine (a record of its own in the choice store, keyed like
   a choice record by the machine, the compiler and its flags, and the candidates). Stencils
   with shifted locals and the same options have the same candidates, and a machine that
   prefers one way of computing locals has so far preferred it for every stencil measured
   on it (ADR 0009's notes: the Zen 4 VM recomputation, the Zen 3 VMs rows).
2. **The static prior** (``static_prediction``): the variant that won most of the
   measurements in ADR 0009's notes: temporaries in rows with streaming stores where locals
   are shifted, prefetching with streaming stores where not. Streaming stores only act on
   domains whose outputs exceed half the last-level cache, so predicting them costs small
   domains nothing.

A cost model of arithmetic against bytes was measured and ranked two machines opposite to
what it predicted (ADR 0009, Alternatives); the prior learns the machine instead. How often
the prediction equals the measured choice is reported by ``benchmarks.tuning_figures``
(``agreement``) and written in ADR 0009's notes.
"""

from __future__ import annotations

from collections.abc import Sequence

from backends.c.variants import DEFAULT_PREFETCH_DISTANCE, Choice, Variant

__all__ = ["STATIC_PRIOR", "predict", "static_prediction"]

#: What the static prior says, in words (part of a predicted choice's reason).
STATIC_PRIOR = "the variant measured fastest most often (ADR 0009)"


def _preference(variant: Variant) -> tuple[int, ...]:
    """Smaller is preferred: rows, then whole-tile buffers, then recomputation; streaming
    stores; the default prefetch distance."""
    way = 0 if variant.temporary_rows else (1 if variant.temporaries else 2)
    return (
        way,
        0 if variant.streaming_stores else 1,
        0 if variant.prefetch_distance == DEFAULT_PREFETCH_DISTANCE else 1,
    )


def static_prediction(candidates: Sequence[Variant]) -> Variant:
    """The static prior's pick among ``candidates`` (not empty): the first of the most
    preferred (``_preference``), so the pick is the same whatever the machine."""
    return min(candidates, key=_preference)


def predict(candidates: Sequence[Variant], prior: Choice | None, when: str) -> Choice:
    """The predicted choice among ``candidates``: the machine's ``prior`` (a measured choice
    among the same candidates) when it names one of them, else the static prior.

    Args:
        candidates: the stencil's candidates (``backends.c.variants.candidates``), not empty.
        prior: this machine's first measured choice among the same candidates, or None.
        when: when the candidates will be measured, in words (ends the choice's reason).
    """
    if prior is not None and prior.variant in candidates:
        basis = "this machine's measured choice for stencils with the same candidates"
        return Choice(prior.variant, "predicted", f"{basis}; {when}")
    return Choice(static_prediction(candidates), "predicted", f"{STATIC_PRIOR}; {when}")
