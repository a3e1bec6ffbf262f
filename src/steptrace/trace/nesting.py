"""Nesting on a thread: which event directly contains which.

Kineto writes no parent ids: an event contains another when, on the same (pid, tid), the
second starts inside the first. This module recovers that tree once, so that self time,
innermost labels and launching operators are all read from the same structure.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]


def parents(start: Floats, end: Floats, thread: NDArray[np.int32]) -> Ints:
    """Index of each event's innermost container on its thread, or -1 for a root.

    With events ordered by (thread, start, longer first), the container of event ``k`` is
    the latest earlier event of its thread still open when ``k`` starts:
    ``max{j < k : end[j] > start[k]}``. That is what a stack walk finds, computed here
    without a Python loop: a sparse table of running maxima of ``end`` lets every event
    skip, in one binary descent, the blocks of earlier events that closed before it
    started. An event that starts inside another but ends after it (a rounding artefact)
    is still its child; callers clip children to their parent's end.
    """
    n = start.size
    order = np.lexsort((-(end - start), start, thread))
    s, e, t = start[order], end[order], thread[order]
    first = np.searchsorted(t, t, side="left")  # first row of each event's thread
    maxima = [e]  # maxima[p][i] = max(e[i : i + 2**p])
    while (width := 1 << len(maxima)) <= n:
        previous = maxima[-1]
        maxima.append(np.maximum(previous[: -(width >> 1)], previous[width >> 1 :]))
    bound = np.arange(n)  # candidates are rows [first, bound)
    for p in range(len(maxima) - 1, -1, -1):
        block = bound - (1 << p)
        inside = block >= first
        closed = maxima[p][np.where(inside, block, 0)] <= s
        bound = np.where(inside & closed, block, bound)
    candidate = bound - 1
    found = (candidate >= first) & (e[np.maximum(candidate, 0)] > s)
    parent = np.empty(n, dtype=np.int64)
    parent[order] = np.where(found, order[np.maximum(candidate, 0)], -1)
    return parent


def self_time(start: Floats, end: Floats, parent: Ints) -> Floats:
    """Duration minus the time of direct children (each child clipped to its parent)."""
    duration = end - start
    child = np.flatnonzero(parent >= 0)
    inside = np.minimum(end[child], end[parent[child]]) - start[child]
    children = np.bincount(parent[child], weights=np.maximum(inside, 0.0), minlength=start.size)
    return np.maximum(duration - children, 0.0)


def has_same_name_ancestor(name: NDArray[np.int32], parent: Ints) -> NDArray[np.bool_]:
    """True where an ancestor has the same name (a recursive call, not new time)."""
    found = np.zeros(parent.size, dtype=bool)
    ancestor = parent.copy()
    while (alive := ancestor >= 0).any():
        found[alive] |= name[ancestor[alive]] == name[alive]
        ancestor[alive] = parent[ancestor[alive]]
    return found


def exclusive_segments(start: Floats, end: Floats, parent: Ints) -> tuple[Floats, Floats, Ints]:
    """The pieces of time each event owns: its span minus its direct children's spans.

    Returns ``(seg_start, seg_end, owner)``; an event with children ``c1..cn`` (by start)
    owns ``[start, c1.start], [c1.end, c2.start], ..., [cn.end, end]``. Pieces can be
    clipped to any window, which durations alone cannot be. Empty pieces are dropped.
    """
    n = start.size
    child = np.flatnonzero(parent >= 0)
    owner_of_child = parent[child]
    # piece starts: each event's start, then each child's end; piece ends: each child's
    # start, then each event's end. Sorted the same way, they pair up piece by piece.
    starts_owner = np.concatenate((np.arange(n), owner_of_child))
    starts_rank = np.concatenate((np.zeros(n), np.ones(child.size)))
    starts_key = np.concatenate((start, start[child]))
    starts_value = np.concatenate((start, end[child]))
    ends_owner = np.concatenate((owner_of_child, np.arange(n)))
    ends_rank = np.concatenate((np.zeros(child.size), np.ones(n)))
    ends_key = np.concatenate((start[child], end))
    ends_value = np.concatenate((start[child], end))
    # per owner: [own start, child ends by child start] and [child starts, own end]
    first = np.lexsort((starts_key, starts_rank, starts_owner))
    second = np.lexsort((ends_key, ends_rank, ends_owner))
    seg_start = starts_value[first]
    seg_end = np.minimum(ends_value[second], end[starts_owner[first]])
    owner = starts_owner[first]
    keep = seg_end > seg_start
    return seg_start[keep], seg_end[keep], owner[keep]
