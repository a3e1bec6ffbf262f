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

    An event that starts inside another but ends after it (a rounding artefact) is still
    its child; callers clip children to their parent's end.
    """
    n = start.size
    order = np.lexsort((-(end - start), start, thread))
    stack_ends: list[float] = []
    stack_rows: list[int] = []
    current = None
    rows = order.tolist()
    starts, ends, threads = start[order].tolist(), end[order].tolist(), thread[order].tolist()
    result = [-1] * n
    for k, row in enumerate(rows):
        if threads[k] != current:
            current = threads[k]
            stack_ends.clear()
            stack_rows.clear()
        s = starts[k]
        while stack_ends and stack_ends[-1] <= s:
            stack_ends.pop()
            stack_rows.pop()
        if stack_rows:
            result[k] = stack_rows[-1]
        stack_ends.append(ends[k])
        stack_rows.append(row)
    parent = np.empty(n, dtype=np.int64)
    parent[order] = result
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
