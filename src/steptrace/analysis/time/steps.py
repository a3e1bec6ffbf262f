"""Step windows: the ``ProfilerStep#N`` spans of the trace.

Contract: ``find_steps(events) -> Steps``. Steps are CPU-side ``ProfilerStep#N`` labels,
in time order; where those cut through Lightning's training batches (its own
PyTorchProfiler steps the profiler after the forward pass), the batches are the steps,
``run_training_batch#k`` (``steptrace.analysis.time.lightning_steps``). A trace without
markers is analyzed as one window spanning all its events, and ``Steps.from_markers`` is
False so that reports can say so.

Steps may overlap (markers on several threads, or written so): each is measured as written,
``overlapping`` names the pairs, and ``step_of`` gives every instant to one step at most:
the step that began last among those whose window ``[start, end)`` holds it.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.compiler.events import is_compiler_label
from steptrace.analysis.time.lightning_steps import BATCH_NAME, lightning_batches
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable

MOST_STEPS = 10_000  # a report's tables list each step: 10,000 render in a few seconds
_STEP_NAME = re.compile(r"^ProfilerStep#(\d{1,18})$")
_OVERLONG_STEP = re.compile(r"^ProfilerStep#\d{19,}$")  # no int64 step number: not a step
_STEP_MARKER = re.compile(r"^ProfilerStep#\d+$")
WHOLE_WINDOW = "window"


class StepWindow(msgspec.Struct, frozen=True):
    """One step: its name, number, the thread it ran on, and its wall-time span (µs)."""

    name: str
    number: int | None
    thread: int  # thread index in the event table; -1 for the whole window
    start_us: float
    end_us: float

    @property
    def wall_ms(self) -> float:
        return (self.end_us - self.start_us) / 1000.0


class Steps(msgspec.Struct, frozen=True):
    windows: tuple[StepWindow, ...]
    from_markers: bool


def label_rows(events: EventTable) -> NDArray[np.int64]:
    """Rows of the user's labels (``record_function``), step markers and the compiler's
    annotations (``compiler``) excluded."""
    labels = np.flatnonzero(events.kind == Kind.USER_ANNOTATION)
    is_marker = np.array(
        [bool(_STEP_MARKER.match(n)) or is_compiler_label(n) for n in events.names], dtype=bool
    )
    rows: NDArray[np.int64] = labels[~is_marker[events.name_id[labels]]]
    return rows


def find_steps(events: EventTable) -> Steps:
    """Return the step windows of a trace, or one whole window when there are no markers."""
    numbers = {i: int(m.group(1)) for i, n in enumerate(events.names) if (m := _STEP_NAME.match(n))}
    if numbers:
        step_names = np.array(sorted(numbers), dtype=np.int32)
        rows = np.flatnonzero(
            (events.kind == Kind.USER_ANNOTATION) & np.isin(events.name_id, step_names)
        )
        if rows.size:
            windows = tuple(
                StepWindow(
                    name=events.names[int(events.name_id[r])],
                    number=numbers[int(events.name_id[r])],
                    thread=int(events.thread_id[r]),
                    start_us=float(events.start_us[r]),
                    end_us=float(events.start_us[r] + events.dur_us[r]),
                )
                for r in rows.tolist()
            )
            return Steps(_lightning_or(windows, events), from_markers=True)
    measured = events.kind != Kind.PROFILER_SPAN
    if not measured.any():
        measured = np.ones(len(events), dtype=bool)
    start = float(events.start_us[measured].min())
    end = float(events.end_us[measured].max())
    return Steps((StepWindow(WHOLE_WINDOW, None, -1, start, end),), from_markers=False)


def _lightning_or(windows: tuple[StepWindow, ...], events: EventTable) -> tuple[StepWindow, ...]:
    """Lightning's batches when the markers cut through them, else the markers."""
    batches = lightning_batches(events, tuple((w.start_us, w.end_us) for w in windows))
    if batches is None:
        return windows
    return tuple(
        StepWindow(f"{BATCH_NAME}#{k}", k, b.thread, b.start_us, b.end_us)
        for k, b in enumerate(batches, start=1)
    )


def step_of(windows: tuple[StepWindow, ...], times: NDArray[np.float64]) -> NDArray[np.int64]:
    """Per time, the index of the latest-begun step whose window holds it, or -1 (NaN: -1).

    Disjoint windows (the usual case) are found by bisection; overlapping ones window by
    window, later-begun ones last.
    """
    by_start = sorted(
        (k for k, w in enumerate(windows) if w.end_us > w.start_us),  # empty ones hold nothing
        key=lambda k: windows[k].start_us,
    )
    lo = np.array([windows[k].start_us for k in by_start], dtype=np.float64)
    hi = np.array([windows[k].end_us for k in by_start], dtype=np.float64)
    if not by_start:
        return np.full(np.shape(times), -1, dtype=np.int64)
    if (lo[1:] >= hi[:-1]).all():
        flat = np.ravel(times)  # a single time too
        at = np.searchsorted(lo, flat, side="right")  # windows begun by each time
        at -= 1  # the last one begun: -1 where none was (in place: times may be many)
        held = (at >= 0) & (flat < hi[np.maximum(at, 0)])
        owner = np.append(np.array(by_start, dtype=np.int64), -1)[at]  # -1 picks the -1
        owner[~held] = -1
        return owner.reshape(np.shape(times))
    owner = np.full(np.shape(times), -1, dtype=np.int64)
    for k in by_start:
        owner[(times >= windows[k].start_us) & (times < windows[k].end_us)] = k
    return owner


def indices_by_step(owner: NDArray[np.int64], count: int) -> list[NDArray[np.int64]]:
    """Per step ``k < count``, the indices ``i`` (ascending) where ``owner[i] == k``: one
    sort for all the steps, not a pass over ``owner`` per step."""
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(count + 1), side="left")
    return [order[bounds[k] : bounds[k + 1]] for k in range(count)]


def marker_warnings(events: EventTable) -> list[str]:
    """Step markers skipped because their number is too long to be one (19+ digits)."""
    names = [i for i, n in enumerate(events.names) if _OVERLONG_STEP.match(n)]
    if not names:
        return []
    count = int(np.isin(events.name_id, np.array(names, dtype=np.int32)).sum())
    return [f"skipped {count} ProfilerStep markers whose number has more than 18 digits"]


def overlapping(windows: tuple[StepWindow, ...]) -> tuple[tuple[StepWindow, StepWindow], ...]:
    """Pairs of steps sharing some time, earlier-begun first (touching is not overlapping)."""
    ordered = sorted(windows, key=lambda w: w.start_us)
    pairs = []
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            if b.start_us >= a.end_us:
                break
            if min(a.end_us, b.end_us) > b.start_us:
                pairs.append((a, b))
    return tuple(pairs)


def overlap_warnings(windows: tuple[StepWindow, ...], shown: int = 3) -> list[str]:
    """One line naming the overlapping steps (the first ``shown`` pairs), or nothing."""
    pairs = overlapping(windows)
    if not pairs:
        return []
    named = ", ".join(
        f"{a.name} and {b.name} ({(min(a.end_us, b.end_us) - b.start_us) / 1000:.3f} ms)"
        for a, b in pairs[:shown]
    )
    more = f" and {len(pairs) - shown} more pairs" if len(pairs) > shown else ""
    return [
        f"steps overlap: {named}{more}: each is measured as written; GPU work and blocking "
        "calls are counted once, in the step that began last among those holding their launch"
    ]


def too_many_steps(windows: tuple[StepWindow, ...] | list[StepWindow], where: str) -> str | None:
    """Why a trace of these steps is refused (more than ``MOST_STEPS``), or None."""
    if (count := len(windows)) <= MOST_STEPS:  # each step is a row of every table
        return None
    return (
        f"{where}: {count:,} steps, more than the {MOST_STEPS:,} a report measures in bounded "
        "time: profile fewer steps (a shorter schedule), or cut the trace"
    )
