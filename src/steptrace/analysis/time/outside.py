"""GPU work that belongs to no step, and GPU time outside every step.

Contract: ``gpu_outside_steps(events, steps, timeline) -> GpuOutsideSteps | None`` (``None``:
the GPU was not observed). Two questions, two kinds of figure:

- What no step launched, counted as ``gpu_per_step`` counts (``GpuWork``: kernels, copies,
  sets, and the union of their intervals wherever they ran): ``launched_before_trace``, work
  whose correlation id is below every launch call's (``GpuLinks.before_trace``: profiling
  began after its launch), and ``launched_outside_steps``, work issued before the first
  step, between steps or after the last. The steps' counts and these two add up to every
  GPU activity of the trace.
- When the GPU was busy outside every step window, whoever launched the work: the union
  of all GPU work before the first step, in the gaps between steps, after the last step.
  With the union of the step windows, these three cover the GPU's whole busy time.

``outside_warnings`` says the same in words, for the trace's warnings.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.time.gpu_busy import GpuBusy
from steptrace.analysis.time.steps import StepWindow, step_of
from steptrace.trace import intervals as iv
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable


class GpuWork(msgspec.Struct, frozen=True):
    """GPU activities counted in no step."""

    kernels: int
    copies: int
    sets: int
    busy_ms: float  # union of their intervals, wherever they ran

    @property
    def count(self) -> int:
        return self.kernels + self.copies + self.sets


class GpuOutsideSteps(msgspec.Struct, frozen=True):
    """GPU work no step launched, and GPU busy time outside every step window."""

    launched_before_trace: GpuWork  # correlation below every launch call's
    launched_outside_steps: GpuWork  # issued before the first step, between steps, or after
    before_first_step_ms: float  # GPU busy before the first step began
    between_steps_ms: float  # GPU busy in the gaps between steps
    after_last_step_ms: float  # GPU busy after the last step ended


def gpu_outside_steps(
    events: EventTable, steps: tuple[StepWindow, ...], timeline: GpuBusy | None
) -> GpuOutsideSteps | None:
    """What no step launched, and when the GPU was busy outside every step."""
    if timeline is None:
        return None
    lo = np.array([s.start_us for s in steps])
    hi = np.array([s.end_us for s in steps])
    first, last = float(lo.min()), float(hi.max())
    between = iv.gaps(iv.union(lo, hi), first, last)
    outside = (step_of(steps, timeline.issued_us) < 0) & ~timeline.before_trace
    return GpuOutsideSteps(
        launched_before_trace=_work(events, timeline.rows[timeline.before_trace]),
        launched_outside_steps=_work(events, timeline.rows[outside]),
        before_first_step_ms=_covered_ms(timeline.busy, -np.inf, first),
        between_steps_ms=iv.total(iv.intersect(timeline.busy, between)) / 1000,
        after_last_step_ms=_covered_ms(timeline.busy, last, np.inf),
    )


def _covered_ms(busy: iv.Intervals, lo: float, hi: float) -> float:
    return float(iv.covered(busy, np.array([lo]), np.array([hi]))[0]) / 1000


def _work(events: EventTable, rows: NDArray[np.int64]) -> GpuWork:
    kind = events.kind[rows]
    return GpuWork(
        kernels=int((kind == Kind.KERNEL).sum()),
        copies=int((kind == Kind.MEMCPY).sum()),
        sets=int((kind == Kind.MEMSET).sum()),
        busy_ms=iv.total(iv.union(events.start_us[rows], events.end_us[rows])) / 1000,
    )


def outside_warnings(outside: GpuOutsideSteps | None) -> list[str]:
    """The figures of ``outside`` that are not zero, in words."""
    if outside is None:
        return []
    noticed = []
    if outside.launched_before_trace.count:
        noticed.append(
            f"GPU work launched before the trace began: {_describe(outside.launched_before_trace)}"
            " (correlation ids below every launch call's): counted in no step, though its time "
            "on the GPU is in the busy time of the steps it ran in"
        )
    if outside.launched_outside_steps.count:
        noticed.append(
            f"GPU work launched outside every step: {_describe(outside.launched_outside_steps)}:"
            " counted in no step"
        )
    parts = {
        "before the first": outside.before_first_step_ms,
        "between steps": outside.between_steps_ms,
    }
    if any(ms > 0 for ms in parts.values()):
        where = ", ".join(f"{_ms(ms)} ms {when}" for when, ms in parts.items() if ms > 0)
        noticed.append(
            f"{_ms(sum(parts.values()))} ms of GPU work ran outside every step ({where}): "
            "in no step's busy time"
        )
    if outside.after_last_step_ms > 0:
        noticed.append(
            f"{_ms(outside.after_last_step_ms)} ms of GPU work ran after the last step ended: "
            "in no step's busy time, though counted in the step that launched it, if any"
        )
    return noticed


def _describe(work: GpuWork) -> str:
    parts = [(work.kernels, "kernel"), (work.copies, "copy"), (work.sets, "set")]
    counts = ", ".join(f"{n:,} {_plural(what, n)}" for n, what in parts if n)
    return f"{counts}, {_ms(work.busy_ms)} ms"


def _plural(word: str, n: int) -> str:
    return word if n == 1 else ("copies" if word == "copy" else f"{word}s")


def _ms(value: float) -> str:
    return f"{value:.3f}" if value >= 0.001 or value == 0 else "< 0.001"


def _figure(context: TraceContext) -> GpuOutsideSteps | None:
    return gpu_outside_steps(context.events, context.windows, context.gpu_busy)


FIGURE = FigureSpec("gpu_outside_steps", _figure, frozenset({"steps", "gpu_busy"}))
