"""Events of one lane as bars, and those too short to draw merged into counted bands.

Contract: ``merge(start_ns, dur_ns, depth, kind, name, resolution_ns, first_id=...) ->
(bars, bands, kept)``, pure. On each depth, an event at least ``resolution_ns`` long is a
``Bar``; shorter ones that follow each other with less than ``resolution_ns`` between them
(after the latest end so far) form one ``Band`` that counts them, their summed duration
and their most frequent kind and name; a short event alone stays a bar. Every event is in
exactly one bar or one band. ``kept`` gives, per bar, the index of its event in the input;
bars are numbered from ``first_id`` in output order (by depth, then start).
"""

from __future__ import annotations

from collections import Counter

import msgspec
import numpy as np
from numpy.typing import NDArray

Ints = NDArray[np.int64]


class Bar(msgspec.Struct, frozen=True, array_like=True):
    """One event: times in ns from the step start; kind and name index the timeline's."""

    id: int  # unique in the step: a GPU bar's ``owner`` names a CPU bar by it
    start_ns: int
    dur_ns: int
    depth: int
    kind: int
    name: int
    owner: int = -1  # GPU bars: the bar of the top operator that launched it; -1: none drawn
    launch_ns: int = -1  # GPU bars: when its launch call started; -1: no launch call known


class Band(msgspec.Struct, frozen=True, array_like=True):
    """Events too short to draw one by one, merged: how many, and their summed time."""

    start_ns: int
    end_ns: int
    depth: int
    count: int
    busy_ns: int  # summed durations (they may overlap on a CPU thread: not a union)
    kind: int  # the most frequent kind among them
    name: int  # the most frequent name among them


def merge(
    start_ns: Ints,
    dur_ns: Ints,
    depth: Ints,
    kind: Ints,
    name: Ints,
    resolution_ns: int,
    *,
    first_id: int = 0,
    owner: Ints | None = None,
    launch_ns: Ints | None = None,
) -> tuple[tuple[Bar, ...], tuple[Band, ...], Ints]:
    """Bars and bands of one lane (inputs in start order)."""
    n = start_ns.size
    owner = owner if owner is not None else np.full(n, -1, dtype=np.int64)
    launch_ns = launch_ns if launch_ns is not None else np.full(n, -1, dtype=np.int64)
    bars: list[Bar] = []
    bands: list[Band] = []
    kept: list[int] = []
    for d in np.unique(depth).tolist():
        at = np.flatnonzero(depth == d)
        at = at[np.argsort(start_ns[at], kind="stable")]
        small = at[dur_ns[at] < resolution_ns]
        groups = _groups(start_ns[small], start_ns[small] + dur_ns[small], resolution_ns)
        alone = np.zeros(n, dtype=bool)
        alone[at[dur_ns[at] >= resolution_ns]] = True
        for members in groups:
            if members.size == 1:
                alone[small[members[0]]] = True
                continue
            rows = small[members]
            bands.append(_band(rows, start_ns, dur_ns, int(d), kind, name))
        for i in at[alone[at]].tolist():
            bars.append(
                Bar(first_id + len(bars), int(start_ns[i]), int(dur_ns[i]), int(d),
                    int(kind[i]), int(name[i]), int(owner[i]), int(launch_ns[i]))
            )  # fmt: skip
            kept.append(i)
    return tuple(bars), tuple(bands), np.array(kept, dtype=np.int64)


def _groups(start: Ints, end: Ints, resolution_ns: int) -> list[Ints]:
    """Runs of events each starting within ``resolution_ns`` of the latest end before it."""
    if start.size == 0:
        return []
    latest = np.maximum.accumulate(end)
    breaks = np.flatnonzero(start[1:] > latest[:-1] + resolution_ns) + 1
    return np.split(np.arange(start.size), breaks)


def _band(rows: Ints, start: Ints, dur: Ints, depth: int, kind: Ints, name: Ints) -> Band:
    common_kind = Counter(kind[rows].tolist()).most_common(1)[0][0]
    common_name = Counter(name[rows].tolist()).most_common(1)[0][0]
    return Band(
        int(start[rows].min()), int((start[rows] + dur[rows]).max()), depth, int(rows.size),
        int(dur[rows].sum()), int(common_kind), int(common_name),
    )  # fmt: skip
