"""The launch queue of a GPU stream: how many activities were launched and not yet started.

Contract: ``queue_depth(launch_ns, start_ns, wall_ns, resolution_ns) -> QueueCurve``, pure.
An activity is queued from the start of its launch call to its own start (times in ns
from the step's start, so negative before it; clipped to ``[0, wall_ns]``; those launched
after the window or started before it are not counted). The caller passes only the
activities whose launch call is known. A deep queue with the GPU busy is the CPU running
ahead, a long launch-to-start delay that no slow launch explains; an empty queue with the
GPU idle is the GPU waiting for the host.

Bounded: the depth is kept per bucket of ``resolution_ns``, as its largest value in the
bucket and, when it differs, its value at the bucket's end; so the peak is exact and a
step holds at most two points per bucket.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray


class QueueCurve(msgspec.Struct, frozen=True, array_like=True):
    """The depth as a step function: it holds ``depth[k]`` from ``at_ns[k]`` on."""

    at_ns: tuple[int, ...]
    depth: tuple[int, ...]

    @property
    def peak(self) -> int:
        return max(self.depth, default=0)


def queue_depth(
    launch_ns: NDArray[np.int64],
    start_ns: NDArray[np.int64],
    wall_ns: int,
    resolution_ns: int,
) -> QueueCurve:
    """The queue of one stream in one step (see the module)."""
    keep = (start_ns > launch_ns) & (start_ns > 0) & (launch_ns < wall_ns)
    lo = np.clip(launch_ns[keep], 0, wall_ns)
    hi = np.clip(start_ns[keep], 0, wall_ns)
    if lo.size == 0:
        return QueueCurve((), ())
    times = np.concatenate((lo, hi))
    delta = np.concatenate((np.ones(lo.size, np.int64), -np.ones(hi.size, np.int64)))
    order = np.lexsort((delta, times))  # at one time, starts leave before launches join
    times, level = times[order], np.cumsum(delta[order])
    bucket = times // max(resolution_ns, 1)
    first = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
    peak = np.maximum.reduceat(level, first)
    end = level[np.r_[first[1:] - 1, level.size - 1]]
    at: list[int] = []
    depth: list[int] = []
    for b, most, last in zip(bucket[first].tolist(), peak.tolist(), end.tolist(), strict=True):
        at.append(b * resolution_ns)
        depth.append(most)
        if last != most:
            at.append(min((b + 1) * resolution_ns, wall_ns))
            depth.append(last)
    return QueueCurve(tuple(at), tuple(depth))
