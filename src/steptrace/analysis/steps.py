"""Step windows: the ``ProfilerStep#N`` spans of the trace.

Contract: ``find_steps(events) -> Steps``. Steps are CPU-side ``ProfilerStep#N`` labels,
in time order. A trace without them is analyzed as one window spanning all its events,
and ``Steps.from_markers`` is False so that reports can say so.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable

_STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
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
            return Steps(windows, from_markers=True)
    measured = events.kind != Kind.PROFILER_SPAN
    if not measured.any():
        measured = np.ones(len(events), dtype=bool)
    start = float(events.start_us[measured].min())
    end = float(events.end_us[measured].max())
    return Steps((StepWindow(WHOLE_WINDOW, None, -1, start, end),), from_markers=False)
