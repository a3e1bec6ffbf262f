"""CPU operators per step: how busy the CPU was in operators, and how short they were.

Contract: ``cpu_per_step(events, tree, steps) -> tuple[CpuStep, ...]``. ``busy_ms`` is the
union of operator intervals over all threads, clipped to the step (concurrent threads
are not added up). Operators are attributed to the step in which they start (the
latest-begun one, where steps overlap).
"""

from __future__ import annotations

import msgspec
import numpy as np

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.links import CpuTree
from steptrace.analysis.spread import Spread
from steptrace.analysis.steps import StepWindow, indices_by_step, step_of
from steptrace.trace import intervals as iv
from steptrace.trace.table import EventTable


class CpuStep(msgspec.Struct, frozen=True):
    busy_ms: float  # time at least one CPU operator ran, any thread
    operators: int  # operator calls starting in the step, nested ones included
    operator_us: Spread | None  # their durations
    grad_recording: int  # of those, operators autograd recorded (grad mode was on)


def cpu_per_step(
    events: EventTable, tree: CpuTree, steps: tuple[StepWindow, ...]
) -> tuple[CpuStep, ...]:
    start, end = events.start_us[tree.ops], events.end_us[tree.ops]
    grad = events.records_grad[tree.ops]
    busy = iv.union(start, end)
    lo = np.array([s.start_us for s in steps])
    hi = np.array([s.end_us for s in steps])
    covered = iv.covered(busy, lo, hi) / 1000
    owner = step_of(steps, start)  # one step per operator, even where steps overlap
    duration = end - start
    results = []
    for k, inside in enumerate(indices_by_step(owner, len(steps))):
        results.append(
            CpuStep(
                busy_ms=float(covered[k]),
                operators=int(inside.size),
                operator_us=Spread.of(duration[inside]),
                grad_recording=int(grad[inside].sum()),
            )
        )
    return tuple(results)


def _figure(context: TraceContext) -> tuple[CpuStep, ...]:
    return cpu_per_step(context.events, context.tree, context.windows)


FIGURE = FigureSpec("cpu", _figure, frozenset({"steps", "tree"}))
