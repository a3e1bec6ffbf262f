"""What a torch.profiler schedule does, read by calling it: its window, and whether it ends.

Contract: ``probe(schedule) -> ScheduleShape``, pure (a schedule is a function of the step
number). The first cycle gives the window: steps before the first warm-up or recorded
step are ``wait`` (``skip_first`` included), then ``warmup``, then ``active`` (recorded up
to and including the first ``RECORD_AND_SAVE``). A schedule that still saves a cycle after
``HORIZON`` steps is taken to repeat forever (``repeat=0``): each cycle becomes its own
trace, and the profiler's stop writes the last, partial cycle as one more. A schedule that
never saves (the profiler's default: record every step) has no window.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
from torch.profiler import ProfilerAction

from steptrace.window import Window

HORIZON = 10_000  # a schedule still saving beyond this many steps repeats forever
_LOOK = 10_000  # steps probed beyond the horizon (a cycle longer than this is not seen)


class ScheduleShape(msgspec.Struct, frozen=True):
    """The window of a schedule's first cycle (None: it never saves) and whether it ends."""

    window: Window | None
    forever: bool


def probe(schedule: Callable[[int], ProfilerAction]) -> ScheduleShape:
    """The shape of ``schedule`` (see the module's contract)."""
    actions = [schedule(step) for step in range(HORIZON + _LOOK)]
    saves = [k for k, action in enumerate(actions) if action == ProfilerAction.RECORD_AND_SAVE]
    if not saves:
        return ScheduleShape(window=None, forever=False)
    first = saves[0]
    recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
    start = next(k for k in range(first + 1) if actions[k] != ProfilerAction.NONE)
    active_from = next(k for k in range(start, first + 1) if actions[k] in recording)
    forever = saves[-1] >= HORIZON
    window = Window(
        cold_steps=0,
        wait=start,
        warmup=active_from - start,
        active=first + 1 - active_from,
        repeat=1 if forever else len(saves),
    )
    return ScheduleShape(window=window, forever=forever)
