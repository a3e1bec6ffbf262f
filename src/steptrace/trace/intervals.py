"""Interval algebra on the timeline, vectorized with numpy.

An ``Intervals`` value is a pair of float arrays ``(starts, ends)``: sorted, disjoint,
non-empty (``start < end``), touching intervals merged. Every function returns that form,
so the total time of a set is a plain sum and nothing is ever counted twice.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]
Intervals = tuple[Floats, Floats]

_EMPTY: Intervals = (np.zeros(0), np.zeros(0))


def empty() -> Intervals:
    return _EMPTY


def union(starts: Floats, ends: Floats) -> Intervals:
    """Merge any intervals (overlapping, nested, unsorted) into canonical form.

    Intervals already by start (events' rows in table order, the usual input) are not
    sorted again, nor copied when none is empty: the same result, less time and memory.
    """
    keep = ends > starts
    s, e = (starts, ends) if keep.all() else (starts[keep], ends[keep])
    del keep
    if s.size == 0:
        return _EMPTY
    if not (s[1:] >= s[:-1]).all():
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    opens = np.concatenate(([True], s[1:] > reach[:-1]))
    first = np.flatnonzero(opens)
    last = np.concatenate((first[1:] - 1, [s.size - 1]))
    return s[first], reach[last]


def by_priority(sets: list[Intervals]) -> list[Intervals]:
    """Each set's time that no set before it covers (the first set keeps all of its own).

    One sweep over every set's bounds: along them, each set's coverage (0 or 1: a set is
    disjoint) is a running sum, and each stretch between two bounds goes to the first set
    covering it. The same as taking, set after set, the difference with the union of the
    sets before, without sorting that growing union again for each set.
    """
    sizes = [s.size for s, _ in sets]
    if len(sets) < 2 or sum(sizes) == 0:
        return list(sets)
    # every set's ends, then every set's starts: at equal times, closings come first
    points = np.concatenate([e for _, e in sets] + [s for s, _ in sets])
    owner = np.repeat(np.tile(np.arange(len(sets), dtype=np.int16), 2), sizes + sizes)
    step = np.repeat(np.array([-1, 1], dtype=np.int8), sum(sizes))
    order = np.argsort(points, kind="stable")
    points, owner, step = points[order], owner[order], step[order]
    first = np.full(points.size, len(sets), dtype=np.int16)  # the first set covering each stretch
    for k in reversed(range(len(sets))):
        if sizes[k]:
            first[np.cumsum(np.where(owner == k, step, 0), dtype=np.int8) > 0] = k
    stretch = first[:-1]
    return [
        union(points[:-1][stretch == k], points[1:][stretch == k]) if sizes[k] else _EMPTY
        for k in range(len(sets))
    ]


def total(intervals: Intervals) -> float:
    """Total length."""
    return float((intervals[1] - intervals[0]).sum())


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """Time covered by both."""
    return _combine(a, b, keep=3)


def difference(a: Intervals, b: Intervals) -> Intervals:
    """Time covered by ``a`` and not by ``b``."""
    return _combine(a, b, keep=1)


def clip(intervals: Intervals, lo: float, hi: float) -> Intervals:
    """The part of ``intervals`` inside ``[lo, hi]``.

    The intervals are canonical: those ending after ``lo`` and starting before ``hi`` are
    one run, found by bisection (a step's part of a whole trace's timeline costs its own
    size, not the trace's), and clipped they stay canonical.
    """
    s, e = intervals
    first, stop = np.searchsorted(e, lo, side="right"), np.searchsorted(s, hi, side="left")
    if stop <= first or hi <= lo:
        return _EMPTY
    return np.maximum(s[first:stop], lo), np.minimum(e[first:stop], hi)


def gaps(intervals: Intervals, lo: float, hi: float) -> Intervals:
    """Time in ``[lo, hi]`` not covered by ``intervals``."""
    return difference((np.array([lo]), np.array([hi])), intervals)


def covered(intervals: Intervals, lo: Floats, hi: Floats) -> Floats:
    """Covered length inside each window ``[lo[k], hi[k]]`` (one searchsorted, no loop)."""
    return _covered_before(intervals, hi) - _covered_before(intervals, lo)


def _covered_before(intervals: Intervals, t: Floats) -> Floats:
    s, e = intervals
    if s.size == 0:
        return np.zeros(np.shape(t))
    cumulative = np.concatenate(([0.0], np.cumsum(e - s)))
    j = np.searchsorted(s, t, side="right") - 1
    inside = np.clip(t - s[np.maximum(j, 0)], 0.0, (e - s)[np.maximum(j, 0)])
    return np.where(j >= 0, cumulative[np.maximum(j, 0)] + inside, 0.0)


def _combine(a: Intervals, b: Intervals, keep: int) -> Intervals:
    """Sweep both sets: coverage is 1 for ``a`` only, 2 for ``b`` only, 3 for both."""
    # each set's bounds in order, closings first: a stable sort by time alone then keeps
    # closings before openings at equal times (a merge of four sorted runs, not a lexsort)
    points = np.concatenate((b[1], a[1], a[0], b[0]))
    if points.size == 0:
        return _EMPTY
    na, nb = a[0].size, b[0].size
    delta = np.concatenate((np.full(nb, -2.0), np.full(na, -1.0), np.ones(na), np.full(nb, 2.0)))
    order = np.argsort(points, kind="stable")
    points, coverage = points[order], np.cumsum(delta[order])
    chosen = np.flatnonzero(coverage[:-1] == keep)
    return union(points[chosen], points[chosen + 1])
