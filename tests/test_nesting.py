"""Nesting on a thread: parents, self time and recursion, against hand-built trees."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from steptrace.trace import intervals as iv
from steptrace.trace.nesting import has_same_name_ancestor, parents, self_time


def arrays(rows: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([r[0] for r in rows], float), np.array([r[1] for r in rows], float)


def test_parents_self_time_and_threads() -> None:
    # thread 0: a [0,10] > b [1,4] > c [2,3];  a > d [5,9];  thread 1: e [0,10] apart
    rows = [(5, 9), (0, 10), (2, 3), (1, 4), (0, 10)]
    thread = np.array([0, 0, 0, 0, 1], dtype=np.int32)
    start, end = arrays(rows)
    parent = parents(start, end, thread)
    assert parent.tolist() == [1, -1, 3, 1, -1]
    assert self_time(start, end, parent).tolist() == [4, 3, 1, 2, 10]


def test_child_running_past_its_parent_is_clipped() -> None:
    start, end = arrays([(0, 10), (8, 12)])
    parent = parents(start, end, np.zeros(2, dtype=np.int32))
    assert parent.tolist() == [-1, 0]
    assert self_time(start, end, parent).tolist() == [8, 4]


def test_recursive_calls_are_marked() -> None:
    start, end = arrays([(0, 10), (1, 9), (2, 8)])
    name = np.array([7, 7, 3], dtype=np.int32)
    parent = parents(start, end, np.zeros(3, dtype=np.int32))
    assert has_same_name_ancestor(name, parent).tolist() == [False, True, False]


@st.composite
def nested(draw: st.DrawFn) -> list[tuple[int, int]]:
    """A properly nested set of intervals, built by recursive splitting."""
    out: list[tuple[int, int]] = []

    def grow(lo: int, hi: int, depth: int) -> None:
        if hi - lo < 1 or depth > 4:
            return
        a = draw(st.integers(lo, hi))
        b = draw(st.integers(a, hi))
        out.append((a, b))
        if draw(st.booleans()):
            grow(a, b, depth + 1)
        if draw(st.booleans()):
            grow(b, hi, depth + 1)

    grow(0, 100, 0)
    return out


@given(nested())
def test_self_times_add_up_to_the_covered_time(rows: list[tuple[int, int]]) -> None:
    start, end = arrays(rows) if rows else (np.zeros(0), np.zeros(0))
    parent = parents(start, end, np.zeros(len(rows), dtype=np.int32))
    own = self_time(start, end, parent)
    assert own.sum() == iv.total(iv.union(start, end))


def stack_parents(rows: list[tuple[int, int]], thread: list[int]) -> list[int]:
    """Reference: walk each thread's events in (start, longer first) order with a stack."""
    order = sorted(
        range(len(rows)), key=lambda i: (thread[i], rows[i][0], -(rows[i][1] - rows[i][0]))
    )
    parent = [-1] * len(rows)
    stack: list[int] = []
    current = None
    for i in order:
        if thread[i] != current:
            current, stack = thread[i], []
        while stack and rows[stack[-1]][1] <= rows[i][0]:
            stack.pop()
        parent[i] = stack[-1] if stack else -1
        stack.append(i)
    return parent


@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15), st.integers(0, 2)), max_size=40))
def test_parents_match_a_stack_walk(raw: list[tuple[int, int, int]]) -> None:
    """Any intervals, partial overlaps and ties included, on up to three threads."""
    rows = [(s, s + d) for s, d, _ in raw]
    thread = [t for _, _, t in raw]
    start, end = arrays(rows) if rows else (np.zeros(0), np.zeros(0))
    found = parents(start, end, np.array(thread, dtype=np.int32))
    expected = stack_parents(rows, thread)
    # ties (identical start and length) may resolve to either twin: compare the intervals
    assert [rows[p] if p >= 0 else None for p in found.tolist()] == [
        rows[p] if p >= 0 else None for p in expected
    ]


def test_exclusive_segments_by_hand() -> None:
    from steptrace.trace.nesting import exclusive_segments

    # a [0,10] > b [1,4] > c [2,3];  a > d [5,9]
    start, end = arrays([(0, 10), (1, 4), (2, 3), (5, 9)])
    parent = parents(start, end, np.zeros(4, dtype=np.int32))
    seg_start, seg_end, owner = exclusive_segments(start, end, parent)
    pieces = sorted(zip(owner.tolist(), seg_start.tolist(), seg_end.tolist(), strict=True))
    assert pieces == [(0, 0, 1), (0, 4, 5), (0, 9, 10), (1, 1, 2), (1, 3, 4), (2, 2, 3), (3, 5, 9)]


@given(nested())
def test_exclusive_segments_add_up_to_self_time(rows: list[tuple[int, int]]) -> None:
    from steptrace.trace.nesting import exclusive_segments

    start, end = arrays(rows) if rows else (np.zeros(0), np.zeros(0))
    parent = parents(start, end, np.zeros(len(rows), dtype=np.int32))
    seg_start, seg_end, owner = exclusive_segments(start, end, parent)
    per_owner = np.bincount(owner, weights=seg_end - seg_start, minlength=len(rows))
    assert np.allclose(per_owner, self_time(start, end, parent))
    assert iv.total(iv.union(seg_start, seg_end)) == (seg_end - seg_start).sum()  # disjoint
