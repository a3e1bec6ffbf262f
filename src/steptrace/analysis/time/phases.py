"""The user's labels (``record_function`` names) per step, on the timeline.

Contract: ``phases_per_step(events, steps, gpu_busy, launch_starts, silences=None) ->
tuple[StepPhases, ...]``.
Each label owns the pieces of time in which it is the innermost label on its thread; a
label's ``exclusive_ms`` in a step is the part of those pieces inside the step, so nested
labels (``train`` > ``forward``) are never counted twice and a label that crosses a step
boundary is split between the steps. ``inclusive_ms`` is the union of its spans inside
the step. GPU figures are ``None`` when the GPU was not observed. ``unrecorded_ms``: the
part of a label's exclusive time in ``silences`` (``TraceContext.silences``), in which the
trace records no work: what the label names and nothing else explains. Each label is
read as a part of the step when its name says which (``steptrace.analysis.time.parts``);
reading the batch is the union of the ``data_read`` labels' spans.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.time.parts import part_of
from steptrace.analysis.time.steps import StepWindow, label_rows
from steptrace.scenario import TRAINING_STEP
from steptrace.trace import intervals as iv
from steptrace.trace.arrays import distinct, in_order
from steptrace.trace.kinds import Kind
from steptrace.trace.nesting import innermost_pieces, parents
from steptrace.trace.table import EventTable


class Phase(msgspec.Struct, frozen=True):
    """One label inside one step."""

    name: str
    calls: int  # instances overlapping the step
    inclusive_ms: float
    exclusive_ms: float
    share: float  # exclusive time / step wall time
    gpu_idle_ms: float | None  # GPU idle while it ran (inclusive spans)
    gpu_idle_exclusive_ms: float | None  # GPU idle during its exclusive time only
    gpu_launches: int | None  # GPU activities launched while it ran (any thread)
    part: str | None = None  # the step part its name stands for (data_read, ...), if any
    # operators autograd recorded that started while it ran (any thread); inside another
    # label of the same part they count there only, so that a part's labels add up
    grad_recording: int = 0
    operators: int = 0  # CPU operators that started while it ran (any thread, nested too)
    unrecorded_ms: float | None = None  # exclusive time in silences; None: not read


class Reading(msgspec.Struct, frozen=True):
    """Reading the batch in one step: the union of the data-read labels' spans."""

    ms: float
    gpu_idle_ms: float | None
    labels: tuple[str, ...]


class StepPhases(msgspec.Struct, frozen=True):
    phases: tuple[Phase, ...]
    unlabeled_ms: float | None  # step time on the step's thread outside every label
    reading: Reading | None  # None: no data-read label in the step


class _Labels(msgspec.Struct, frozen=True):
    """The labels of a trace, with what every step reads of them, computed once."""

    rows: NDArray[np.int64]
    start: NDArray[np.float64]
    end: NDArray[np.float64]
    name_id: NDArray[np.int32]
    piece_start: NDArray[np.float64]  # the pieces of time each label owns, by label
    piece_end: NDArray[np.float64]
    first_piece: NDArray[np.int64]  # label k owns pieces first_piece[k]:first_piece[k + 1]
    outermost: NDArray[np.bool_]  # inside no other label of the same part

    @classmethod
    def of(cls, events: EventTable, rows: NDArray[np.int64]) -> _Labels:
        start, end = events.start_us[rows], events.end_us[rows]
        thread = events.thread_id[rows]
        piece_start, piece_end, owner = innermost_pieces(start, end, thread)
        by_label = np.argsort(owner, kind="stable")
        return cls(
            rows=rows,
            start=start,
            end=end,
            name_id=events.name_id[rows],
            piece_start=piece_start[by_label],
            piece_end=piece_end[by_label],
            first_piece=np.searchsorted(owner[by_label], np.arange(rows.size + 1)),
            outermost=_outermost_of_part(events, rows, parents(start, end, thread)),
        )

    def pieces_of(self, chosen: NDArray[np.int64]) -> NDArray[np.int64]:
        """The pieces the ``chosen`` labels own."""
        first, after = self.first_piece[chosen], self.first_piece[chosen + 1]
        counts = after - first
        shift = np.repeat(first - (np.cumsum(counts) - counts), counts)  # runs, concatenated
        return shift + np.arange(counts.sum())


def phases_per_step(
    events: EventTable,
    steps: tuple[StepWindow, ...],
    gpu_busy: iv.Intervals | None,
    launch_starts: NDArray[np.float64] | None,
    silences: iv.Intervals | None = None,
) -> tuple[StepPhases, ...]:
    """Labels of every step, in the order they first appear in it."""
    labels = _Labels.of(events, label_rows(events))
    launches = None if launch_starts is None else in_order(launch_starts)
    grads = in_order(events.start_us[events.records_grad])
    operators = in_order(events.start_us[events.kind == Kind.CPU_OP])
    return tuple(
        _step_phases(events, step, labels, (gpu_busy, silences), launches, (grads, operators))
        for step in steps
    )


def _step_phases(
    events: EventTable,
    step: StepWindow,
    labels: _Labels,
    timelines: tuple[iv.Intervals | None, iv.Intervals | None],
    launches: NDArray[np.float64] | None,
    starts: tuple[NDArray[np.float64], NDArray[np.float64]],
) -> StepPhases:
    """``timelines``: the GPU busy and the silences; ``starts``: the sorted starts of the
    operators autograd recorded, and of all."""
    (gpu_busy, silences), (grads, operators) = timelines, starts
    lo, hi = step.start_us, step.end_us
    start, end = labels.start, labels.end
    overlapping = np.flatnonzero((end > lo) & (start < hi) | (start == lo))
    if gpu_busy is not None:  # only the step's part of the GPU timeline matters here
        gpu_busy = iv.clip(gpu_busy, lo, hi)
    seen = overlapping[np.argsort(np.maximum(start[overlapping], lo), kind="stable")]
    names = labels.name_id[seen]
    distinct_names, first_seen = np.unique(names, return_index=True)
    phases = []
    reading: list[iv.Intervals] = []
    for name_id in distinct_names[np.argsort(first_seen)].tolist():  # as they appear
        chosen = seen[names == name_id]
        spans = iv.clip(iv.union(start[chosen], end[chosen]), lo, hi)
        pieces = labels.pieces_of(chosen)
        own = iv.union(
            np.maximum(labels.piece_start[pieces], lo), np.minimum(labels.piece_end[pieces], hi)
        )
        exclusive_us = iv.total(own)
        first = chosen[labels.outermost[chosen]]  # recorded operators count once per part
        outer = iv.clip(iv.union(start[first], end[first]), lo, hi)
        part = part_of(events.names[name_id])
        if part == "data_read":
            reading.append(spans)
        phases.append(
            Phase(
                name=events.names[name_id],
                calls=chosen.size,
                inclusive_ms=iv.total(spans) / 1000,
                exclusive_ms=exclusive_us / 1000,
                share=exclusive_us / 1000 / step.wall_ms if step.wall_ms > 0 else 0.0,
                gpu_idle_ms=None if gpu_busy is None else _idle_us(spans, gpu_busy) / 1000,
                gpu_idle_exclusive_ms=None if gpu_busy is None else _idle_us(own, gpu_busy) / 1000,
                gpu_launches=None if launches is None else _count_inside(launches, spans),
                part=part,
                grad_recording=_count_inside(grads, outer),
                operators=_count_inside(operators, spans),
                unrecorded_ms=None if silences is None else _inside_us(own, silences) / 1000,
            )
        )
    return StepPhases(
        tuple(phases),
        _unlabeled_ms(events, step, labels.rows[overlapping]),
        _reading(reading, [p.name for p in phases if p.part == "data_read"], gpu_busy),
    )


def _outermost_of_part(
    events: EventTable, rows: NDArray[np.int64], parent: NDArray[np.int64]
) -> NDArray[np.bool_]:
    """Per label instance: no label around it on its thread is read as the same part."""
    code: dict[str | None, int] = {name: k for k, name in enumerate(TRAINING_STEP)}
    part = np.full(rows.size, -1, dtype=np.int64)
    for name_id in distinct(events.name_id[rows]).tolist():
        part[events.name_id[rows] == name_id] = code.get(part_of(events.names[name_id]), -1)
    nested = np.zeros(rows.size, dtype=bool)
    ancestor = parent.copy()
    while (alive := ancestor >= 0).any():
        nested[alive] |= (part[ancestor[alive]] == part[alive]) & (part[alive] >= 0)
        ancestor[alive] = parent[ancestor[alive]]
    outermost: NDArray[np.bool_] = ~nested
    return outermost


def _reading(
    spans: list[iv.Intervals], names: list[str], gpu_busy: iv.Intervals | None
) -> Reading | None:
    if not spans:
        return None
    union = iv.union(np.concatenate([s for s, _ in spans]), np.concatenate([e for _, e in spans]))
    idle = None if gpu_busy is None else _idle_us(union, gpu_busy) / 1000
    return Reading(iv.total(union) / 1000, idle, tuple(names))


def _count_inside(points: NDArray[np.float64], spans: iv.Intervals) -> int:
    """How many sorted ``points`` fall inside the disjoint ``spans``."""
    starts, ends = spans
    return int((np.searchsorted(points, ends) - np.searchsorted(points, starts)).sum())


def _idle_us(spans: iv.Intervals, gpu_busy: iv.Intervals) -> float:
    """Time inside ``spans`` (disjoint) when the GPU was not busy."""
    return iv.total(spans) - _inside_us(spans, gpu_busy)


def _inside_us(spans: iv.Intervals, other: iv.Intervals) -> float:
    """Time inside ``spans`` (disjoint) that ``other`` covers."""
    return float(iv.covered(other, spans[0], spans[1]).sum())


def _unlabeled_ms(events: EventTable, step: StepWindow, rows: NDArray[np.int64]) -> float | None:
    if step.thread < 0:
        return None
    own = rows[events.thread_id[rows] == step.thread]
    labels = iv.union(events.start_us[own], events.end_us[own])
    return iv.total(iv.gaps(labels, step.start_us, step.end_us)) / 1000


def _figure(context: TraceContext) -> tuple[StepPhases, ...]:
    """Idle GPU time per label needs the GPU busy intervals and the launch calls' starts."""
    events, timeline = context.events, context.gpu_busy
    silent = context.silences
    if timeline is None:
        return phases_per_step(events, context.windows, None, None, silent)
    launch = context.launches.launch
    starts = events.start_us[distinct(launch[launch >= 0])]
    return phases_per_step(events, context.windows, timeline.busy, starts, silent)


FIGURE = FigureSpec("phases", _figure, frozenset({"steps", "gpu_busy"}))
