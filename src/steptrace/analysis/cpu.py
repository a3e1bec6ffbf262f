"""CPU operators per step: how busy the CPU was in operators, and how short they were.

Contract: ``cpu_per_step(events, tree, steps) -> tuple[CpuStep, ...]``. ``busy_ms`` is the
union of operator intervals over all threads, clipped to the step (concurrent threads
are not added up). Operators are attributed to the step in which they start (the
latest-begun one, where steps overlap). How the step's work is cut: the outermost
operators (inside no other operator: what the Python code called) and the time in leaf
operators (no operator inside them) longer than ``SHORT_OPERATOR_US``, where the work
is done; the rest of the step (shorter leaves, the operators' own dispatch, Python
between them) is overhead when the operators are many and small.
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
            )
        )
    return tuple(results)


def _figure(context: TraceContext) -> tuple[CpuStep, ...]:
    return cpu_per_step(context.events, context.tree, context.windows)


FIGURE = FigureSpec("cpu", _figure, frozenset({"steps", "tree"}))
