"""Index regions (concat_where's conditions) behave as the sets of points they describe."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.dsl import Dimension
from pipeline.dsl.regions import Bound, Region, compare

I, K = Dimension("I"), Dimension("K")  # noqa: E741
POINTS = [(i, k) for i in range(6) for k in range(7)]
OPS = ["==", "!=", "<", "<=", ">", ">="]


def leaves():
    literal = st.builds(lambda d, op, v: compare(d, op, Bound(v)),
                        st.sampled_from(["I", "K"]), st.sampled_from(OPS), st.integers(-2, 8))
    symbolic = st.builds(lambda d, op, v: compare(d, op, Bound(v, "n")),
                         st.sampled_from(["I", "K"]), st.sampled_from(OPS), st.integers(-2, 2))
    return literal | symbolic


regions = st.recursive(
    leaves(),
    lambda inner: st.one_of(
        st.builds(lambda a, b: a & b, inner, inner),
        st.builds(lambda a, b: a | b, inner, inner),
        st.builds(lambda a: ~a, inner),
    ),
    max_leaves=5,
)


def holds(region: Region, point: tuple[int, int], n: int) -> bool:
    """Brute force: is the point in one of the resolved boxes?"""
    at = {"I": point[0], "K": point[1]}
    for box in region.resolve({"n": n}):
        if all((lo is None or at[d] >= lo) and (hi is None or at[d] < hi)
               for d, (lo, hi) in box.items()):
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(regions, regions, st.integers(0, 6))
def test_and_or_not_are_intersection_union_and_complement(a, b, n):
    for point in POINTS:
        assert holds(a & b, point, n) == (holds(a, point, n) and holds(b, point, n))
        assert holds(a | b, point, n) == (holds(a, point, n) or holds(b, point, n))
        assert holds(~a, point, n) == (not holds(a, point, n))


@settings(max_examples=200, deadline=None)
@given(regions, regions, st.integers(0, 6))
def test_the_algebra_is_exact_below_index_zero_and_nonnegative_drops_only_that(a, b, n):
    # A located array's grid indices may be negative (ADR 0026).
    below = [(i, k) for i in range(-3, 6) for k in range(-3, 7)]
    for point in below:
        assert holds(a & b, point, n) == (holds(a, point, n) and holds(b, point, n))
        assert holds(~a, point, n) == (not holds(a, point, n))
    for point in POINTS:
        assert holds(a.nonnegative(), point, n) == holds(a, point, n)


@settings(max_examples=200, deadline=None)
@given(regions, st.integers(-3, 3), st.integers(-3, 3), st.integers(0, 6))
def test_a_shifted_region_holds_where_the_original_held_before_the_shift(region, di, dk, n):
    moved = region.shifted({"I": di, "K": dk})
    for i, k in itertools.product(range(-3, 9), range(-3, 10)):
        if i - di < 0 or k - dk < 0 or i < 0 or k < 0:
            continue  # regions live on non-negative indices
        assert holds(moved, (i, k), n) == holds(region, (i - di, k - dk), n)


@settings(max_examples=200, deadline=None)
@given(regions, st.integers(0, 5), st.integers(0, 6), st.integers(0, 6))
def test_bounding_is_the_smallest_box_around_the_region_in_a_domain(region, lo, hi, n):
    domain = {"I": (1, 5), "K": (min(lo, hi), max(lo, hi))}
    inside = [p for p in POINTS
              if domain["I"][0] <= p[0] < domain["I"][1]
              and domain["K"][0] <= p[1] < domain["K"][1] and holds(region, p, n)]
    box = region.bounding(domain, {"n": n})
    if not inside:
        assert box is None
        return
    assert box == {
        "I": (min(p[0] for p in inside), max(p[0] for p in inside) + 1),
        "K": (min(p[1] for p in inside), max(p[1] for p in inside) + 1),
    }


def test_dimensions_compared_with_integers_are_regions_and_still_equal_by_name():
    assert isinstance(K == 0, Region) and isinstance(0 == K, Region)
    assert isinstance(K < 3, Region) and isinstance(2 <= I, Region)
    assert Dimension("K") == K and Dimension("K") != I and hash(Dimension("K")) == hash(K)
    assert K in (I, K) and {K: 1}[Dimension("K")] == 1
    assert str((K == 0) | (K >= 4)) == "(K >= 0 & K < 1) | (K >= 4)"
