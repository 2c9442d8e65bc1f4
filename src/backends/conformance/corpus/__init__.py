"""The DSL correctness corpus: programs, their inputs, and hand-written NumPy references.

Each :class:`Case` pairs a DSL program with a builder of deterministic arguments and a NumPy
reference (see :mod:`backends.conformance.corpus.cases`). Together the cases cover every
construct of the DSL: shifts (several in one call, asymmetric, in K), each arithmetic operator,
each comparison, ``& | ~``, ``not`` of bool scalars, ``where`` (nested, with literals), every
math builtin, ``astype`` both ways, each dtype, scalar parameters of several dtypes, literals
typed like NumPy 2 weak scalars, locals and shifted locals, inlined calls, tuple returns and
parameters (of programs too), ``where``, ``concat_where``, ``astype``, dtype conversions and
``a if c else b`` of tuples, named collections (dataclasses and NamedTuples), fields of fewer
dimensions broadcast against 3D ones, staggered dimensions (fields at cell edges and half
shifts), multi-call programs with temporaries, out slices and
``domain=`` (one per output too), located arrays (element 0 not at index 0), scans (called
directly too, collections as carries), boundary conditions, 0-D fields, bound arguments, static
parameters and static domains, and the reference workloads ``laplacian`` and ``hdiff``. The
cases are grouped by :class:`Feature`, one module of features each; :data:`FEATURES` lists
them in a fixed order.

Besides the cases, the reference workloads ``lap`` and ``hdiff_program`` with their
references, and the helpers that build arrays (``sentinel``, ``dom``, ``at``), are here for
checks that need a known program.
"""

from backends.conformance.corpus import (
    arithmetic,
    bound_arguments,
    builtins,
    collections_,
    composition,
    direct_calls,
    domains,
    dtypes,
    located_arrays,
    logical_not,
    output_domains,
    scalars,
    scan_collections,
    scans,
    semantics,
    staggered,
    static_arguments,
    tuple_choices,
    tuples,
)
from backends.conformance.corpus.cases import (
    Case,
    Feature,
    MissingHalo,
    at,
    copied,
    dom,
    labelled_leaves,
    sentinel,
    tolerance,
)
from backends.conformance.corpus.domains import MISSING_HALOS, REACH_SHAPE, reach_fits
from backends.conformance.corpus.grid import IJK, IJK32, I, J, K
from backends.conformance.corpus.workloads import (
    REFERENCE_WORKLOADS,
    hdiff_program,
    hdiff_reference,
    lap,
    lap_reference,
)

__all__ = [
    "CASES",
    "FEATURES",
    "IJK",
    "IJK32",
    "MISSING_HALOS",
    "REACH_SHAPE",
    "Case",
    "Feature",
    "I",
    "J",
    "K",
    "MissingHalo",
    "at",
    "check_corpus",
    "dom",
    "hdiff_program",
    "hdiff_reference",
    "lap",
    "lap_reference",
    "reach_fits",
    "sentinel",
    "tolerance",
]

#: Every feature of the corpus, in the order of the conformance summary.
FEATURES: tuple[Feature, ...] = (
    REFERENCE_WORKLOADS,
    arithmetic.FLOAT_ARITHMETIC,
    arithmetic.COMPARISONS,
    arithmetic.BOOLEAN_LOGIC,
    arithmetic.WHERE,
    semantics.NUMBER_SEMANTICS,
    builtins.MATH_BUILTINS,
    dtypes.ASTYPE,
    dtypes.DTYPES_AND_LITERALS,
    dtypes.ZERO_DIM_FIELDS,
    scalars.SCALAR_PARAMETERS,
    scalars.SCALAR_CONTROL_FLOW,
    logical_not.LOGICAL_NOT,
    bound_arguments.BOUND_ARGUMENTS,
    static_arguments.STATIC_ARGUMENTS,
    composition.LOCALS,
    composition.INLINED_CALLS,
    composition.MULTI_CALL_PROGRAMS,
    tuples.TUPLES,
    tuples.TUPLE_PROGRAMS,
    tuple_choices.TUPLE_CHOICES,
    output_domains.OUTPUT_DOMAINS,
    collections_.NAMED_COLLECTIONS,
    domains.BROADCASTING,
    domains.SHIFTS_AND_DOMAINS,
    domains.BOUNDARY_CONDITIONS,
    staggered.STAGGERED_DIMENSIONS,
    scans.SCANS,
    located_arrays.LOCATED_ARRAYS,
    direct_calls.DIRECT_CALLS,
    scan_collections.SCAN_COLLECTIONS,
)


def _gathered(features: tuple[Feature, ...]) -> tuple[Case, ...]:
    """The cases of ``features`` in order; a name used twice is a ``ValueError``."""
    cases = tuple(case for feature in features for case in feature.cases)
    seen: set[str] = set()
    for case in cases:
        if case.name in seen:
            raise ValueError(f"duplicate corpus case {case.name!r}")
        seen.add(case.name)
    return cases


#: Every corpus case; its name is its test id.
CASES: tuple[Case, ...] = _gathered(FEATURES)


def check_corpus() -> None:
    """Sanity of the corpus itself: each reference runs and writes some, but not all, cells.

    Raises:
        AssertionError: naming the case whose reference changes a dtype or writes nothing.
    """
    for case in CASES:
        args = case.build()
        before = {name: copied(args[name]) for name in case.outputs}
        case.reference(**args)
        for name in case.outputs:
            pairs = zip(labelled_leaves(name, args[name]), labelled_leaves(name, before[name]),
                        strict=True)
            for (leaf, after), (_, prior) in pairs:
                assert after.dtype == prior.dtype, case.name
                assert not (after == prior).all(), f"{case.name}: {leaf} unwritten"
