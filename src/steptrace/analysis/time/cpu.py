"""CPU operators per step: how busy the CPU was in operators, and how short they were.

Contract: ``cpu_per_step(events, tree, steps, silences=None) -> tuple[CpuStep, ...]``.
``busy_ms`` is the union of operator intervals over all threads, clipped to the step
(concurrent threads are not added up). ``unrecorded_ms`` is the step's time in
``silences`` (``TraceContext.silences``: gaps of at least 100 µs with no host event on any
thread and the GPU idle): time in which the trace records no work at all; None when
``silences`` are not given.
Operators are attributed to the step in which they start (the latest-begun one, where
steps overlap). How the step's work is cut: the outermost operators (inside no other
operator: what the Python code called) and the time in leaf operators (no operator inside
them) longer than ``SHORT_OPERATOR_US``, where the work is done; the rest of the step
(shorter leaves, the operators' own dispatch, Python between them) is overhead when the
operators are many and small.
"""

from __future__ import annotations

import msgspec
import numpy as np

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.spread import Spread
from steptrace.analysis.time.links import CpuTree
from steptrace.analysis.time.steps import StepWindow, indices_by_step, step_of
from steptrace.trace import intervals as iv
from steptrace.trace.table import EventTable

# An operator this short spends much of its time in torch's per-operator dispatch (a few
# µs on a CPU, more under the profiler) rather than in its work.
SHORT_OPERATOR_US = 20.0


class CpuStep(msgspec.Struct, frozen=True):
    busy_ms: float  # time at least one CPU operator ran, any thread
    operators: int  # operator calls starting in the step, nested ones included
    operator_us: Spread | None  # their durations
    grad_recording: int  # of those, operators autograd recorded (grad mode was on)
    outer_operators: int = 0  # of those, the outermost: inside no other operator
    leaf_work_ms: float = 0.0  # summed time of leaf operators longer than SHORT_OPERATOR_US
    # in silences: no operator, Python function, runtime or driver call on any thread, no
    # GPU work, for 100 µs at least
    unrecorded_ms: float | None = None


def cpu_per_step(
    events: EventTable,
    tree: CpuTree,
    steps: tuple[StepWindow, ...],
    silences: iv.Intervals | None = None,
) -> tuple[CpuStep, ...]:
    start, end = events.start_us[tree.ops], events.end_us[tree.ops]
    grad = events.records_grad[tree.ops]
    busy = iv.union(start, end)
    lo = np.array([s.start_us for s in steps])
    hi = np.array([s.end_us for s in steps])
    covered = iv.covered(busy, lo, hi) / 1000
    unrecorded = None if silences is None else iv.covered(silences, lo, hi) / 1000
    owner = step_of(steps, start)  # one step per operator, even where steps overlap
    duration = end - start
    outer = tree.op_parent < 0
    leaf = np.ones(tree.ops.size, dtype=bool)
    leaf[tree.op_parent[~outer]] = False
    working = leaf & (duration > SHORT_OPERATOR_US)
    results = []
    for k, inside in enumerate(indices_by_step(owner, len(steps))):
        results.append(
            CpuStep(
                busy_ms=float(covered[k]),
                operators=int(inside.size),
                operator_us=Spread.of(duration[inside]),
                grad_recording=int(grad[inside].sum()),
                outer_operators=int(outer[inside].sum()),
                leaf_work_ms=float(duration[inside][working[inside]].sum()) / 1000,
                unrecorded_ms=None if unrecorded is None else max(float(unrecorded[k]), 0.0),
            )
        )
    return tuple(results)


def _figure(context: TraceContext) -> tuple[CpuStep, ...]:
    return cpu_per_step(context.events, context.tree, context.windows, context.silences)


FIGURE = FigureSpec("cpu", _figure, frozenset({"steps", "tree", "gpu_busy"}))
