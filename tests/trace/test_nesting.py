"""Nesting on a thread: parents, self time and recursion, against hand-built trees."""

from __future__ import annotations

from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from steptrace.trace import intervals as iv
from steptrace.trace import nesting
from steptrace.trace.arrays import by_start_longer_first, distinct
from steptrace.trace.kinds import Kind
from steptrace.trace.nesting import (
    _by_thread_start_longer,
    has_same_name_ancestor,
    innermost_pieces,
    parents,
    self_time,
)
from tests.tables import Row, op, table


def arrays(rows: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([r[0] for r in rows], float), np.array([r[1] for r in rows], float)


def test_parents_self_time_and_threads() -> None:
    # thread 0: a [0,10] > b [1,4] > c [2,3];  a > d [5,9];  thread 1: e [0,10] apart
    rows = [(5, 9), (0, 10), (2, 3), (1, 4), (0, 10)]
    thread = np.array([0, 0, 0, 0, 1], dtype=np.int32)
    start, end = arrays(rows)
    parent = parents(start, end, thread)
    assert parent.tolist() == [1, -1, 3, 1, -1]
    assert self_time(start, end, parent, thread).tolist() == [4, 3, 1, 2, 10]


def test_child_running_past_its_parent_owns_its_time_once() -> None:
    start, end = arrays([(0, 10), (8, 12)])
    parent = parents(start, end, np.zeros(2, dtype=np.int32))
    assert parent.tolist() == [-1, 0]
    assert self_time(start, end, parent, np.zeros(2, dtype=np.int32)).tolist() == [8, 4]


def test_a_grandchild_outliving_its_parent_is_not_counted_twice() -> None:
    """train [0,30] > forward [0,20] > loss [10,30]: 30 units of time, not 40."""
    start, end = arrays([(0, 30), (0, 20), (10, 30)])
    thread = np.zeros(3, dtype=np.int32)
    own = self_time(start, end, parents(start, end, thread), thread)
    assert own.tolist() == [0, 10, 20]  # loss, opened last, owns [10, 30]


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
    thread = np.zeros(len(rows), dtype=np.int32)
    own = self_time(start, end, parents(start, end, thread), thread)
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


INTERVALS_ON_THREADS = st.lists(
    st.tuples(st.integers(0, 40), st.integers(0, 15), st.integers(0, 2)), max_size=40
)


@given(INTERVALS_ON_THREADS)
def test_parents_match_a_stack_walk(raw: list[tuple[int, int, int]]) -> None:
    """Any intervals, partial overlaps and ties included, on up to three threads."""
    assert_parents_match_a_stack_walk(raw)


@given(INTERVALS_ON_THREADS)
def test_parents_match_a_stack_walk_when_roots_are_left_to_the_jumps(
    raw: list[tuple[int, int, int]],
) -> None:
    """Past the threads scanned for roots (here: one), the jumps alone find the same."""
    with patch.object(nesting, "_MOST_THREADS_SCANNED", 1):
        assert_parents_match_a_stack_walk(raw)


@given(INTERVALS_ON_THREADS, st.data())
def test_parents_of_a_tables_rows_are_the_parents_of_those_rows(
    raw: list[tuple[int, int, int]], data: st.DataObject
) -> None:
    """Some rows of a table (kept in increasing order), each column gathered once: the
    parents of the same rows gathered beforehand, as indices into the rows."""
    events = table(*(op("x", s, d, thread=t) for s, d, t in raw))
    kept = data.draw(st.lists(st.booleans(), min_size=len(raw), max_size=len(raw)))
    rows = np.flatnonzero(np.array(kept, dtype=bool))
    expected = parents(events.start_us[rows], events.end_us[rows], events.thread_id[rows])
    assert nesting.parents_of_rows(events, rows).tolist() == expected.tolist()


def test_parents_of_rows_refuses_rows_not_by_start() -> None:
    events = table(op("a", 0, 10), op("b", 1, 2))
    with pytest.raises(ValueError, match="by start, longer first"):
        nesting.parents_of_rows(events, np.array([1, 0]))


@given(INTERVALS_ON_THREADS, st.integers(1, 5))
def test_parents_match_a_stack_walk_whatever_the_blocks_of_a_round(
    raw: list[tuple[int, int, int]], block: int
) -> None:
    """Events resolved in blocks of any size, one block's rounds of jumps after another
    (the later blocks' jumps land on containers the earlier ones found), find the same
    containers."""
    with patch.object(nesting, "_BLOCK", block):
        assert_parents_match_a_stack_walk(raw)


@given(INTERVALS_ON_THREADS, st.integers(0, 3))
def test_parents_match_a_stack_walk_when_the_walk_takes_over(
    raw: list[tuple[int, int, int]], rounds: int
) -> None:
    """Past a few rounds of jumps, the linear walk finds the same containers."""
    with patch.object(nesting, "_MOST_ROUNDS", rounds):
        assert_parents_match_a_stack_walk(raw)


def test_deep_nesting_takes_linear_time_or_is_refused_at_once() -> None:
    """Events each inside the one before, and the zero-length probes of
    ``innermost_pieces`` among their ends (the jumps' slowest case): 4,000 levels are
    resolved in a fraction of a second; 100,000 are refused in as little."""
    import time

    for depth, refused in ((4_000, False), (100_000, True)):
        start = np.arange(depth, dtype=float)
        end = 10.0 * depth - start
        thread = np.zeros(depth, dtype=np.int32)
        began = time.monotonic()
        if refused:
            with pytest.raises(nesting.NestedTooDeepError, match="more than 4096 levels"):
                innermost_pieces(start, end, thread)
        else:
            _, _, owner = innermost_pieces(start, end, thread)
            assert owner.size == 2 * depth - 1
        assert time.monotonic() - began < 5


def assert_parents_match_a_stack_walk(raw: list[tuple[int, int, int]]) -> None:
    rows = [(s, s + d) for s, d, _ in raw]
    thread = [t for _, _, t in raw]
    start, end = arrays(rows) if rows else (np.zeros(0), np.zeros(0))
    found = parents(start, end, np.array(thread, dtype=np.int32))
    expected = stack_parents(rows, thread)
    # ties (identical start and length) may resolve to either twin: compare the intervals
    assert [rows[p] if p >= 0 else None for p in found.tolist()] == [
        rows[p] if p >= 0 else None for p in expected
    ]


def test_innermost_pieces_by_hand() -> None:
    # a [0,10] > b [1,4] > c [2,3];  a > d [5,9]
    start, end = arrays([(0, 10), (1, 4), (2, 3), (5, 9)])
    seg_start, seg_end, owner = innermost_pieces(start, end, np.zeros(4, dtype=np.int32))
    pieces = sorted(zip(owner.tolist(), seg_start.tolist(), seg_end.tolist(), strict=True))
    assert pieces == [(0, 0, 1), (0, 4, 5), (0, 9, 10), (1, 1, 2), (1, 3, 4), (2, 2, 3), (3, 5, 9)]


def stack_owner_per_unit(
    rows: list[tuple[int, int]], thread: list[int]
) -> dict[tuple[int, int], int]:
    """(thread, unit cell t) -> the event opened last among those covering [t, t+1)."""
    order = sorted(
        range(len(rows)), key=lambda i: (thread[i], rows[i][0], -(rows[i][1] - rows[i][0]), i)
    )
    owner: dict[tuple[int, int], int] = {}
    for i in order:  # a later-opened event overwrites: it is inside the earlier ones
        for t in range(rows[i][0], rows[i][1]):
            owner[(thread[i], t)] = i
    return owner


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 8), st.integers(0, 2)), max_size=25))
def test_innermost_pieces_match_the_last_opened_event_per_unit_cell(
    raw: list[tuple[int, int, int]],
) -> None:
    """Any overlap, nested or not: every unit cell has one owner, the stack's top."""
    rows = [(a, a + d) for a, d, _ in raw]
    thread = [t for _, _, t in raw]
    start, end = arrays(rows) if rows else (np.zeros(0), np.zeros(0))
    seg_start, seg_end, owner = innermost_pieces(start, end, np.array(thread, dtype=np.int32))
    got: dict[tuple[int, int], int] = {}
    for a, b, o in zip(seg_start.tolist(), seg_end.tolist(), owner.tolist(), strict=True):
        for t in range(int(a), int(b)):
            assert (thread[o], t) not in got  # pieces never overlap on a thread
            got[(thread[o], t)] = o
    expected = stack_owner_per_unit(rows, thread)
    assert {k: rows[v] for k, v in got.items()} == {k: rows[v] for k, v in expected.items()}


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 8), st.integers(0, 2)), max_size=25))
def test_self_time_is_the_innermost_time_nested_or_not(raw: list[tuple[int, int, int]]) -> None:
    """The duration-minus-children shortcut and the pieces give the same self times."""
    rows = [(a, a + d) for a, d, _ in raw]
    thread = np.array([t for _, _, t in raw], dtype=np.int32)
    start, end = arrays(rows) if rows else (np.zeros(0), np.zeros(0))
    seg_start, seg_end, owner = innermost_pieces(start, end, thread)
    expected = np.bincount(owner, weights=seg_end - seg_start, minlength=len(rows))
    assert np.allclose(self_time(start, end, parents(start, end, thread), thread), expected)


@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4), st.integers(0, 2)), max_size=40),
    st.booleans(),
)
def test_the_order_by_thread_start_longer_is_the_stable_lexsort(
    rows: list[tuple[int, int, int]], presorted: bool
) -> None:
    """Presorted input (a table's rows) takes a stable sort by thread alone: same order."""
    if presorted:
        rows = sorted(rows, key=lambda r: (r[0], -r[1]))
    start = np.array([r[0] for r in rows], dtype=np.float64)
    dur = np.array([r[1] for r in rows], dtype=np.float64)
    thread = np.array([r[2] for r in rows], dtype=np.int32)
    expected = np.lexsort((-dur, start, thread))
    assert _by_thread_start_longer(start, start + dur, thread).tolist() == expected.tolist()


@given(st.lists(st.integers(-(2**62), 2**62), max_size=50))
def test_distinct_is_numpys_unique(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    assert distinct(array).tolist() == np.unique(array).tolist()


@given(st.lists(st.tuples(st.integers(-3, 5), st.integers(0, 3)), max_size=50))
def test_the_table_order_is_lexsort_by_start_longer_first(rows: list[tuple[int, int]]) -> None:
    start = np.array([r[0] for r in rows], dtype=np.int64)
    dur = np.array([r[1] for r in rows], dtype=np.int64)
    expected = np.lexsort((-dur, start))
    assert by_start_longer_first(start, dur).tolist() == expected.tolist()


@given(
    st.lists(st.sampled_from(list(Kind)), max_size=60),
    st.lists(st.sampled_from(list(Kind)), min_size=1, max_size=4),
)
def test_the_kind_mask_is_isin(kinds: list[Kind], chosen: list[Kind]) -> None:
    events = table(*(Row(k, f"e{i}", i, 1) for i, k in enumerate(kinds)))
    expected = np.isin(events.kind, [int(k) for k in chosen])
    assert events.mask(*chosen).tolist() == expected.tolist()


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 40)), max_size=60))
def test_same_name_ancestor_matches_walking_each_chain(nodes: list[tuple[int, int]]) -> None:
    """Any forest (each event's parent comes before it, or none): an event has a same-name
    ancestor exactly when walking its chain of parents up to the root meets its name."""
    name = np.array([n for n, _ in nodes], dtype=np.int32)
    parent = np.array([(p % (i + 1)) - 1 for i, (_, p) in enumerate(nodes)], dtype=np.int64)

    def walked(k: int) -> bool:
        j = int(parent[k])
        while j >= 0:
            if name[j] == name[k]:
                return True
            j = int(parent[j])
        return False

    expected = [walked(k) for k in range(len(nodes))]
    assert has_same_name_ancestor(name, parent).tolist() == expected
