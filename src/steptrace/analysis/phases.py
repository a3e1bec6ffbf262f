"""The user's labels (``record_function`` names) per step, on the timeline.

Contract: ``phases_per_step(events, steps, gpu_busy) -> tuple[StepPhases, ...]``. A label's
``exclusive_ms`` is the time in which it is the innermost label on its thread, so nested
labels (``train`` > ``forward``) are never counted twice; ``inclusive_ms`` is the union of
its spans inside the step. Labels are attributed to the step in which they start. The
GPU idle time while a label ran is ``None`` when the GPU was not observed.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.steps import StepWindow
from steptrace.trace import intervals as iv
from steptrace.trace.kinds import Kind
from steptrace.trace.nesting import parents, self_time
from steptrace.trace.table import EventTable

_STEP_MARKER = re.compile(r"^ProfilerStep#\d+$")


class Phase(msgspec.Struct, frozen=True):
    """One label inside one step."""

    name: str
    calls: int
    inclusive_ms: float
    exclusive_ms: float
    share: float  # exclusive time / step wall time
    gpu_idle_ms: float | None
    gpu_launches: int | None  # GPU activities launched while it ran (any thread)


class StepPhases(msgspec.Struct, frozen=True):
    phases: tuple[Phase, ...]
    unlabeled_ms: float | None  # step time on the step's thread outside every label


def phases_per_step(
    events: EventTable,
    steps: tuple[StepWindow, ...],
    gpu_busy: iv.Intervals | None,
    launch_starts: NDArray[np.float64] | None,
) -> tuple[StepPhases, ...]:
    """Labels of every step, in the order they first start."""
    rows = label_rows(events)
    start, end = events.start_us[rows], events.end_us[rows]
    exclusive = self_time(start, end, parents(start, end, events.thread_id[rows]))
    launches = None if launch_starts is None else np.sort(launch_starts)
    return tuple(_step_phases(events, step, rows, exclusive, gpu_busy, launches) for step in steps)


def label_rows(events: EventTable) -> NDArray[np.int64]:
    """Rows of the user's labels (``record_function``), step markers excluded."""
    markers = np.array(
        [i for i, n in enumerate(events.names) if _STEP_MARKER.match(n)], dtype=np.int32
    )
    rows: NDArray[np.int64] = np.flatnonzero(
        (events.kind == Kind.USER_ANNOTATION) & ~np.isin(events.name_id, markers)
    )
    return rows


def _step_phases(
    events: EventTable,
    step: StepWindow,
    rows: NDArray[np.int64],
    exclusive: NDArray[np.float64],
    gpu_busy: iv.Intervals | None,
    launches: NDArray[np.float64] | None,
) -> StepPhases:
    start, end = events.start_us[rows], events.end_us[rows]
    inside = np.flatnonzero((start >= step.start_us) & (start < step.end_us))
    if gpu_busy is not None:  # labels may outlast the step only up to its end: clip once
        gpu_busy = iv.clip(gpu_busy, step.start_us, step.end_us)
    by_name: dict[int, list[int]] = {}
    for k in inside.tolist():
        by_name.setdefault(int(events.name_id[rows[k]]), []).append(k)
    phases = []
    for name_id, members in by_name.items():
        chosen = np.array(members, dtype=np.int64)
        spans = iv.clip(iv.union(start[chosen], end[chosen]), step.start_us, step.end_us)
        inclusive = iv.total(spans)
        exclusive_us = min(float(exclusive[chosen].sum()), inclusive)
        idle = None if gpu_busy is None else _idle_us(spans, gpu_busy) / 1000
        phases.append(
            Phase(
                name=events.names[name_id],
                calls=len(members),
                inclusive_ms=inclusive / 1000,
                exclusive_ms=exclusive_us / 1000,
                share=exclusive_us / 1000 / step.wall_ms if step.wall_ms > 0 else 0.0,
                gpu_idle_ms=idle,
                gpu_launches=None if launches is None else _count_inside(launches, spans),
            )
        )
    return StepPhases(tuple(phases), _unlabeled_ms(events, step, rows[inside]))


def _count_inside(points: NDArray[np.float64], spans: iv.Intervals) -> int:
    """How many sorted ``points`` fall inside the disjoint ``spans``."""
    starts, ends = spans
    return int((np.searchsorted(points, ends) - np.searchsorted(points, starts)).sum())


def _idle_us(spans: iv.Intervals, gpu_busy: iv.Intervals) -> float:
    """Time inside ``spans`` (disjoint) when the GPU was not busy."""
    return iv.total(spans) - float(iv.covered(gpu_busy, spans[0], spans[1]).sum())


def _unlabeled_ms(events: EventTable, step: StepWindow, rows: NDArray[np.int64]) -> float | None:
    if step.thread < 0:
        return None
    own = rows[events.thread_id[rows] == step.thread]
    labels = iv.union(events.start_us[own], events.end_us[own])
    return iv.total(iv.gaps(labels, step.start_us, step.end_us)) / 1000
