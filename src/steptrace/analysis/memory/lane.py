"""A step's memory as the timeline draws it: allocated and reserved bytes over the step.

Contract: ``memory_curves(instants, windows) -> list[MemoryCurve | None]``, one per step
window, of the device with the largest peak (the GPU's, where there is one); None for every
step without ``[memory]`` events carrying ``Total Allocated``. Times are integer ns from the
step's start. Bounded: at most ``POINTS`` points a step, each the last level of its slice of
the step and the most allocated in it, so that no peak is lost however many events there
are; the step's peak (the first event reaching it) is kept exactly, with its label.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.time.steps import StepWindow
from steptrace.trace.fields import ABSENT
from steptrace.trace.table import InstantTable

POINTS = 400  # points of a step's curve at most: about two per pixel of the figure


class MemoryCurve(msgspec.Struct, frozen=True, array_like=True):
    """One device's allocated and reserved bytes through one step."""

    device: str
    at_ns: tuple[int, ...]  # from the step's start
    allocated: tuple[int, ...]
    reserved: tuple[int, ...]
    peak_ns: int
    peak_bytes: int
    peak_label: str | None  # the innermost label around the peak's allocation (analysis.memory)


def memory_curves(
    instants: InstantTable | None,
    windows: tuple[StepWindow, ...],
    labels: dict[str, dict[str, str | None]],
) -> list[MemoryCurve | None]:
    """Each step's curve (see module); ``labels``: per device, per step name, the peak's
    label as ``analysis.memory`` found it."""
    rows = _rows(instants)
    if instants is None or rows is None:
        return [None] * len(windows)
    kind = instants.column("device_type")[rows]
    index = instants.column("device_id")[rows]
    total = instants.column("total_allocated")[rows]
    keys = kind * (1 << 32) + index
    chosen = int(keys[int(np.argmax(total))])  # the device of the largest peak
    mine = rows[keys == chosen]
    device = "cpu" if int(kind[keys == chosen][0]) == 0 else f"cuda:{int(index[keys == chosen][0])}"
    at_us = instants.at_us[mine]
    allocated = instants.column("total_allocated")[mine]
    reserved = np.maximum(instants.column("total_reserved")[mine], 0)
    named = labels.get(device, {})
    return [_curve(device, w, at_us, allocated, reserved, named.get(w.name)) for w in windows]


def _rows(instants: InstantTable | None) -> NDArray[np.int64] | None:
    if instants is None:
        return None
    rows = np.flatnonzero(
        instants.named("[memory]") & (instants.column("total_allocated") != ABSENT)
    )
    return rows if rows.size else None


def _curve(
    device: str,
    window: StepWindow,
    at_us: NDArray[np.float64],
    allocated: NDArray[np.int64],
    reserved: NDArray[np.int64],
    label: str | None,
) -> MemoryCurve | None:
    lo, hi = np.searchsorted(at_us, [window.start_us, window.end_us])
    if hi <= lo:
        return None
    start_ns = round(window.start_us * 1000)
    times = np.rint(at_us[lo:hi] * 1000).astype(np.int64) - start_ns
    level, kept = allocated[lo:hi], reserved[lo:hi]
    peak = int(np.argmax(level))
    if times.size > POINTS:  # per slice: its most, then its last level (two points)
        wall_ns = max(round(window.end_us * 1000) - start_ns, 1)
        slices = POINTS // 2 - 1  # and the peak, which may be a third point in its slice
        slot = np.minimum(times * slices // wall_ns, slices - 1)
        ends = np.flatnonzero(np.append(slot[1:] != slot[:-1], True))
        begins = np.insert(ends[:-1] + 1, 0, 0)
        highest = begins + np.array(
            [int(np.argmax(level[b : e + 1])) for b, e in zip(begins, ends, strict=True)]
        )
        picked = np.unique(np.concatenate((highest, ends, [peak])))
        times, level, kept = times[picked], level[picked], kept[picked]
    return MemoryCurve(
        device=device,
        at_ns=tuple(times.tolist()),
        allocated=tuple(level.tolist()),
        reserved=tuple(kept.tolist()),
        peak_ns=int(times[int(np.argmax(level))]),
        peak_bytes=int(level.max()),
        peak_label=label,
    )
