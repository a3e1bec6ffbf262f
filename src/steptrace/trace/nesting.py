"""Nesting on a thread: which event directly contains which.

Kineto writes no parent ids: an event contains another when, on the same (pid, tid), the
second starts inside the first. This module recovers that tree once, so that self time,
innermost labels and launching operators are all read from the same structure.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from steptrace.errors import TraceError
from steptrace.trace.arrays import by_start_longer_first
from steptrace.trace.table import EventTable

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]
Indices = NDArray[np.signedinteger[Any]]  # int32 where the events fit, else int64
_MOST_THREADS_SCANNED = 4096  # threads beyond which roots are left to the jumps to find
_BLOCK = 1 << 17  # events resolved together by rounds of jumps
_MOST_ROUNDS = 64  # rounds of jumps (a trace's need a few dozen) before a walk takes over
DEPTH_ROUNDS = 12
MOST_DEPTH = 1 << DEPTH_ROUNDS  # levels of nesting on a thread; deeper is refused


class NestedTooDeepError(TraceError):
    """Events nested deeper than ``MOST_DEPTH`` on one thread: no trace's (a Python
    recursion stops at 1,000 frames), and climbing them would take time in the square of
    the events. Raised by ``parents`` without a path: the loader names the file."""

    def __init__(self) -> None:
        super().__init__(
            f"events nested more than {MOST_DEPTH} levels deep on one thread: not a trace "
            "steptrace measures (refused rather than taking time in the square of the events)"
        )


def parents(start: Floats, end: Floats, thread: NDArray[np.int32]) -> Ints:
    """Index of each event's innermost container on its thread, or -1 for a root.

    With events ordered by (thread, start, longer first), the container of event ``k`` is
    the latest earlier event of its thread still open when ``k`` starts:
    ``max{j < k : end[j] > start[k]}``, what a stack walk finds. It is computed here without
    a Python loop and in memory linear in the events: every earlier event still open at
    ``k`` was open at any ``m`` between it and ``k`` (starts only grow), so the container
    of ``k`` is ``m`` itself or the container of ``m``. Each event's candidate starts at
    the event just before it and, while the candidate closed before ``k`` started, jumps
    to the candidate's own candidate; jumps compound, so the rounds grow with the log of
    the longest run of closed events. Roots are found first, without jumps: every earlier
    event of their thread ended by their start (a run of roots would otherwise take the
    most rounds). An event that starts inside another but ends after it (a rounding
    artefact) is still its child; callers clip children to their parent's end.
    """
    index = _index_type(start.size)
    order = _by_thread_start_longer(start, end, thread).astype(index, copy=False)
    found = _back_to_given_order(order, _containers(start[order], end[order], thread[order]))
    return _not_too_deep(found).astype(np.int64, copy=False)


def parents_of_rows(table: EventTable, rows: NDArray[np.intp]) -> Indices:
    """``parents`` of a table's ``rows``, indices into ``rows`` (int32 where they fit: half
    the memory), which must be by start, longer first (as the table's are: increasing rows,
    or ties reordered among themselves).

    A stable sort by thread then puts them in the order the containers are found in, and
    each column is gathered once, in that order (``parents`` on gathered columns would
    hold them twice: about 60 MB more on a 3 M-operator trace).
    """
    if not _by_start_longer_first(table.start_us[rows], table.end_us[rows]):
        raise ValueError("parents_of_rows takes rows by start, longer first")
    index = _index_type(rows.size)
    order = np.argsort(table.thread_id[rows], kind="stable").astype(index, copy=False)
    ordered = rows[order]
    start, end, thread = table.start_us[ordered], table.end_us[ordered], table.thread_id[ordered]
    del ordered
    found = _containers(start, end, thread)
    del start, end, thread  # gone before the parents and their check take their own memory
    return _not_too_deep(_back_to_given_order(order, found))


def _not_too_deep(parent: Indices) -> Indices:
    """``parent``, unless an event has ``MOST_DEPTH`` ancestors (``NestedTooDeepError``): found by
    pointer jumping, each round doubling the levels climbed (``DEPTH_ROUNDS`` rounds)."""
    ancestor = parent.astype(_index_type(parent.size))  # half the memory, most often
    climbing = np.flatnonzero(ancestor >= 0).astype(ancestor.dtype, copy=False)
    for _ in range(DEPTH_ROUNDS):
        if not climbing.size:
            return parent
        reached = ancestor[ancestor[climbing]]
        ancestor[climbing] = reached
        climbing = climbing[reached >= 0]  # only those still below a root climb on
    if climbing.size:
        raise NestedTooDeepError
    return parent


def _index_type(n: int) -> type[np.signedinteger[Any]]:
    return np.int32 if n < 2**31 else np.int64  # half the memory


def _containers(s: Floats, e: Floats, t: NDArray[np.int32]) -> Indices:
    """Per event ordered by (thread, start, longer first): its container's position in
    that order, or -1 (see ``parents``).

    The events are resolved a block at a time, in order: a block's rounds of jumps end
    before the next block starts, so that only one block's temporaries are alive (on the
    1.58 M operators and calls of the 16x replica, rounds over every pending event at once
    took 46 MB more at their peak), and a later block's jumps land on containers already
    found."""
    n = s.size
    index = _index_type(n)
    candidate = np.arange(-1, n - 1, dtype=index)
    candidate[_roots(s, e, t)] = -1
    for at in range(0, n, _BLOCK):
        pending = np.flatnonzero(candidate[at : at + _BLOCK] >= 0).astype(index) + index(at)
        for _ in range(_MOST_ROUNDS):
            if not pending.size:
                break
            pending = _jump(candidate, s, e, pending)
        if pending.size:  # nesting the jumps resolve one by one (deep, odd): walk, linearly
            return _walked(s, e, t, index)
    return candidate


def _walked(
    s: Floats, e: Floats, t: NDArray[np.int32], index: type[np.signedinteger[Any]]
) -> Indices:
    """``_containers`` by a stack walk: one Python step per event (a second per few million),
    for what the jumps would take too many rounds to resolve."""
    container = np.empty(s.size, dtype=index)
    stack: list[int] = []
    starts, ends, threads = s.tolist(), e.tolist(), t.tolist()
    previous = None
    for k, (start, thread) in enumerate(zip(starts, threads, strict=True)):
        if thread != previous:
            stack.clear()
            previous = thread
        while stack and ends[stack[-1]] <= start:
            stack.pop()
        container[k] = stack[-1] if stack else -1
        stack.append(k)
    return container


def _jump(candidate: Indices, s: Floats, e: Floats, pending: NDArray[Any]) -> NDArray[Any]:
    """One round for some events: those whose candidate closed before they started take
    its candidate instead; returns those that may jump again. Any order of the blocks
    finds the same containers: a candidate only ever moves to one that is valid."""
    current = candidate[pending]
    closed = e[current] <= s[pending]
    pending, current = pending[closed], current[closed]
    candidate[pending] = current = candidate[current]
    again: NDArray[Any] = pending[current >= 0]
    return again


def _back_to_given_order(order: Indices, candidate: Indices) -> Indices:
    """Containers found in ``order`` (positions in it), as indices in the given order (of
    ``candidate``'s type)."""
    root = candidate < 0
    np.take(order, candidate, out=candidate)  # rows, in the order given (roots: any)
    candidate[root] = -1
    parent = np.empty(order.size, dtype=candidate.dtype)
    parent[order] = candidate
    return parent


def _roots(s: Floats, e: Floats, t: NDArray[np.int32]) -> NDArray[np.bool_]:
    """Per event (ordered by thread, start, longer first): no earlier event of its thread
    is still open at its start. Beyond ``_MOST_THREADS_SCANNED`` threads, only the first
    event of each thread (the jumps find the other roots)."""
    if not t.size:
        return np.zeros(0, dtype=bool)
    root = np.concatenate(([True], t[1:] != t[:-1]))
    first = np.flatnonzero(root)
    if first.size > _MOST_THREADS_SCANNED:  # one numpy call per thread: many would cost more
        return root
    latest_end = np.empty_like(e)  # per event: the latest end so far on its thread
    for a, b in zip(first.tolist(), [*first[1:].tolist(), e.size], strict=True):
        np.maximum.accumulate(e[a:b], out=latest_end[a:b])
    root[1:] |= latest_end[:-1] <= s[1:]
    return root


def _by_thread_start_longer(start: Floats, end: Floats, thread: NDArray[np.int32]) -> Ints:
    """The order by thread, start, longer first, then as given (a stable sort).

    Events already by start, longer first (a table's rows in order, the usual input),
    need only a stable sort by thread: the same order, without sorting the floats; others
    are sorted by start (``by_start_longer_first``) first, which lexsort would do slower.
    """
    if _by_start_longer_first(start, end):
        return np.argsort(thread, kind="stable")
    order = by_start_longer_first(start, end - start)  # then by thread: both sorts are stable
    return order[np.argsort(thread[order], kind="stable")]


def _by_start_longer_first(start: Floats, end: Floats) -> bool:
    tied = np.flatnonzero(start[1:] == start[:-1])  # few: durations computed for those only
    longer_first = (end[tied + 1] - start[tied + 1] <= end[tied] - start[tied]).all()
    return bool(longer_first and (start[1:] >= start[:-1]).all())


def self_time(start: Floats, end: Floats, parent: Ints, thread: NDArray[np.int32]) -> Floats:
    """Per event, the time during which it is the innermost open event on its thread.

    Where every event lies inside its parent, that is its duration minus its direct
    children's (siblings never overlap); where a child outlives its parent, the pieces of
    ``innermost_pieces`` are added up instead, so that each moment still counts once.
    """
    child = np.flatnonzero(parent >= 0)
    if (end[child] > end[parent[child]]).any():
        seg_start, seg_end, owner = innermost_pieces(start, end, thread)
        owned = np.bincount(owner, weights=seg_end - seg_start, minlength=start.size)
        return owned.astype(np.float64, copy=False)
    children = np.bincount(parent[child], weights=end[child] - start[child], minlength=start.size)
    return np.maximum(end - start - children, 0.0)


def has_same_name_ancestor(name: NDArray[np.int32], parent: Ints) -> NDArray[np.bool_]:
    """True where an ancestor has the same name (a recursive call, not new time).

    Each event climbs its chain of ancestors, one level a round; those that reached a root
    or found their name are left out of the next rounds, so each round costs the events
    still climbing, not the whole table.
    """
    found = np.zeros(parent.size, dtype=bool)
    event = np.flatnonzero(parent >= 0)
    ancestor = parent[event]
    while event.size:
        same = name[ancestor] == name[event]
        found[event[same]] = True
        ancestor = parent[ancestor]
        climbing = ~same & (ancestor >= 0)
        event, ancestor = event[climbing], ancestor[climbing]
    return found


def innermost_pieces(
    start: Floats, end: Floats, thread: NDArray[np.int32]
) -> tuple[Floats, Floats, Ints]:
    """The pieces of time each event owns: where it is the innermost open event.

    Each thread's time is cut at every start and end; a piece belongs to the event opened
    last among those still open (by start, longer first, then file order: a stack), so
    that every moment counts once even where a child outlives its parent. Returns
    ``(piece_start, piece_end, owner)``, pieces of positive length only.

    Found with ``parents``: a zero-length probe at each piece's start has the piece's
    owner as its container.
    """
    n = start.size
    times = np.concatenate((start, end))
    threads = np.concatenate((thread, thread))
    order = np.lexsort((times, threads))
    times, threads = times[order], threads[order]
    nxt = np.flatnonzero((threads[1:] == threads[:-1]) & (times[1:] > times[:-1]))
    lo, hi, probe_thread = times[nxt], times[nxt + 1], threads[nxt]
    container = parents(
        np.concatenate((start, lo)),
        np.concatenate((end, lo)),
        np.concatenate((thread, probe_thread)),
    )[n:]
    owned = container >= 0
    return lo[owned], hi[owned], container[owned]
