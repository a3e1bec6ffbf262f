"""Interval algebra against a naive reference: which unit cells of the timeline are covered."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from steptrace.trace import intervals as iv
from tests.strategies import GRID, spans


def cells(pairs: list[tuple[int, int]]) -> set[int]:
    """Unit cells [k, k+1) covered by any pair: the obviously-correct reference."""
    return {k for start, end in pairs for k in range(start, end)}


def as_set(pairs: list[tuple[int, int]]) -> iv.Intervals:
    starts = np.array([p[0] for p in pairs], dtype=float)
    ends = np.array([p[1] for p in pairs], dtype=float)
    return iv.union(starts, ends)


def covered_cells(result: iv.Intervals) -> set[int]:
    return cells([(int(s), int(e)) for s, e in zip(*result, strict=True)])


def assert_canonical(result: iv.Intervals) -> None:
    starts, ends = result
    assert (ends > starts).all()
    assert (starts[1:] > ends[:-1]).all()  # sorted, disjoint, touching ones merged


@given(spans())
def test_union(pairs: list[tuple[int, int]]) -> None:
    result = as_set(pairs)
    assert_canonical(result)
    assert covered_cells(result) == cells(pairs)
    assert iv.total(result) == len(cells(pairs))


@given(spans(), spans())
def test_intersect_and_difference(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> None:
    both = iv.intersect(as_set(a), as_set(b))
    only_a = iv.difference(as_set(a), as_set(b))
    assert_canonical(both)
    assert_canonical(only_a)
    assert covered_cells(both) == cells(a) & cells(b)
    assert covered_cells(only_a) == cells(a) - cells(b)


@given(st.lists(spans(), max_size=5))
def test_by_priority_gives_each_set_what_no_set_before_it_covers(
    sets: list[list[tuple[int, int]]],
) -> None:
    result = iv.by_priority([as_set(pairs) for pairs in sets])
    assert len(result) == len(sets)
    taken: set[int] = set()
    for pairs, own in zip(sets, result, strict=True):
        assert_canonical(own)
        assert covered_cells(own) == cells(pairs) - taken
        taken |= cells(pairs)


@given(spans(), st.integers(0, GRID), st.integers(0, GRID))
def test_clip_gaps_and_covered(pairs: list[tuple[int, int]], x: int, y: int) -> None:
    lo, hi = min(x, y), max(x, y)
    window = set(range(lo, hi))
    merged = as_set(pairs)
    assert covered_cells(iv.clip(merged, lo, hi)) == cells(pairs) & window
    assert covered_cells(iv.gaps(merged, lo, hi)) == window - cells(pairs)
    covered = iv.covered(merged, np.array([lo], float), np.array([hi], float))
    assert covered[0] == len(cells(pairs) & window)


def test_empty_sets() -> None:
    nothing = iv.union(np.zeros(0), np.zeros(0))
    assert iv.total(nothing) == 0
    assert iv.total(iv.gaps(nothing, 0, 5)) == 5
    assert iv.covered(nothing, np.array([0.0]), np.array([3.0]))[0] == 0


def test_sub_microsecond_intervals_are_kept_exactly() -> None:
    merged = iv.union(np.array([10.0, 10.25]), np.array([10.125, 10.5]))
    assert iv.total(merged) == 0.375


@given(spans(), st.integers(-5, GRID + 5), st.integers(-5, GRID + 5))
def test_clip_keeps_the_canonical_form(pairs: list[tuple[int, int]], lo: int, hi: int) -> None:
    clipped = iv.clip(as_set(pairs), lo, hi)
    assert_canonical(clipped)
    assert clipped[0].dtype == clipped[1].dtype == np.float64
    assert covered_cells(clipped) == cells(pairs) & set(range(lo, hi))  # empty if hi <= lo


def test_clip_to_an_empty_or_reversed_window_is_empty() -> None:
    ten = as_set([(0, 10)])
    for lo, hi in [(5, 5), (6, 4)]:
        assert iv.total(iv.clip(ten, lo, hi)) == 0.0
        assert iv.clip(ten, lo, hi)[0].size == 0


@given(spans())
def test_union_of_intervals_by_start_takes_the_path_without_sorting(
    pairs: list[tuple[int, int]],
) -> None:
    """Pairs already by start (a table's rows in order) skip the sort; same cells covered."""
    by_start = sorted(pairs, key=lambda p: p[0])
    result = as_set(by_start)
    assert_canonical(result)
    assert covered_cells(result) == cells(pairs)
