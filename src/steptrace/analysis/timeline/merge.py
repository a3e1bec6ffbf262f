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
        group = _groups(start_ns[small], start_ns[small] + dur_ns[small], resolution_ns)
        sizes = np.bincount(group) if group.size else np.zeros(0, dtype=np.int64)
        alone = np.zeros(n, dtype=bool)
        alone[at[dur_ns[at] >= resolution_ns]] = True
        alone[small[sizes[group] == 1]] = True
        bands.extend(_bands(small, group, sizes, start_ns, dur_ns, int(d), kind, name))
        for i in at[alone[at]].tolist():
            bars.append(
                Bar(
                    first_id + len(bars),
                    int(start_ns[i]),
                    int(dur_ns[i]),
                    int(d),
                    int(kind[i]),
                    int(name[i]),
                    int(owner[i]),
                    int(launch_ns[i]),
                )
            )
            kept.append(i)
    return tuple(bars), tuple(bands), np.array(kept, dtype=np.int64)


def _groups(start: Ints, end: Ints, resolution_ns: int) -> Ints:
    """Per event, its run: events each starting within ``resolution_ns`` of the latest end
    before it share one (numbered from 0, in order)."""
    if start.size == 0:
        return np.zeros(0, dtype=np.int64)
    latest = np.maximum.accumulate(end)
    breaks = np.zeros(start.size, dtype=np.int64)
    breaks[1:] = start[1:] > latest[:-1] + resolution_ns
    return np.cumsum(breaks)


def _bands(
    rows: Ints,
    group: Ints,
    sizes: Ints,
    start: Ints,
    dur: Ints,
    depth: int,
    kind: Ints,
    name: Ints,
) -> list[Band]:
    """One band per run of two or more short events (``rows``, in start order)."""
    if rows.size == 0:
        return []
    first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    lo = np.minimum.reduceat(start[rows], first)
    hi = np.maximum.reduceat(start[rows] + dur[rows], first)
    busy = np.add.reduceat(dur[rows], first)
    kinds, names = _most_frequent(group, kind[rows]), _most_frequent(group, name[rows])
    return [
        Band(
            int(lo[g]), int(hi[g]), depth, int(sizes[g]), int(busy[g]), int(kinds[g]), int(names[g])
        )
        for g in np.flatnonzero(sizes >= 2).tolist()
    ]


def _most_frequent(group: Ints, values: Ints) -> Ints:
    """Per group, its most frequent value (the smallest among equally frequent ones)."""
    width = int(values.max()) + 1
    keys, counts = np.unique(group * width + values, return_counts=True)
    order = np.lexsort((-counts, keys // width))  # stable: the smaller value first on ties
    keys = keys[order]
    first = np.r_[True, keys[1:] // width != keys[:-1] // width]
    out = np.zeros(int(group.max()) + 1, dtype=np.int64)
    out[keys[first] // width] = keys[first] % width
    return out
