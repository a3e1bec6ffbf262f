"""CPU operators over the whole trace: self and inclusive time, calls, shapes, kernels.

Contract: ``operator_stats(events, tree, links, steps) -> tuple[OperatorStat, ...]``, sorted
by self time over the whole trace. Self time excludes nested operators (runtime calls such as
``cudaLaunchKernel`` stay in the operator that made them, as in torch's own table);
inclusive time does not count a recursive call twice. Each kernel is attributed to the
innermost operator around the runtime call that launched it (via ``correlation``), and so
are copies and sets.

The whole-trace figures (``calls``, ``self_ms``, ...) count every call, inside the steps or
not. The ``*_per_step`` figures are means over the given steps (the complete ones): the
calls that started inside a step, summed, divided by the number of steps, so that they
add up, operator by operator, to a per-step total (a median per operator would not).
Recorded shapes and types are kept on one line (``compact_json``: some writers indent
them).
"""

from __future__ import annotations

import json

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.compiler import steps as compiled
from steptrace.analysis.compiler.events import compile_inside
from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.time.links import CpuTree, GpuLinks
from steptrace.analysis.time.steps import StepWindow, step_of
from steptrace.trace.nesting import has_same_name_ancestor, self_time
from steptrace.trace.table import EventTable


class OperatorStat(msgspec.Struct, frozen=True):
    """One CPU operator name, all calls together."""

    name: str
    calls: int
    self_ms: float
    inclusive_ms: float
    gpu_ms: float | None  # summed durations of the GPU work it launched (kernels, copies, sets)
    gpu_launches: int | None  # how many GPU activities it launched; None: GPU not observed
    input_shapes: str | None  # most frequent recorded input shapes; None when not recorded
    input_types: str | None  # the input types recorded with those shapes
    # means over the steps of the calls starting in each (total in the steps / steps)
    calls_per_step: float = 0.0
    self_ms_per_step: float = 0.0
    inclusive_ms_per_step: float = 0.0
    gpu_ms_per_step: float | None = None  # None: GPU not observed


def operator_stats(
    events: EventTable,
    tree: CpuTree,
    links: GpuLinks | None,
    steps: tuple[StepWindow, ...] = (),
    apart: tuple[StepWindow, ...] = (),
) -> tuple[OperatorStat, ...]:
    """Every CPU operator name, by self time (largest first); GPU figures need ``links``;
    the per-step means are over ``steps`` (0 without steps); the operators that start in
    a step of ``apart`` (the steps that compiled: their eager first calls are not the
    step's steady work) count in no CPU figure."""
    ops = tree.ops
    if ops.size == 0:
        return ()
    start, end = events.start_us[ops], events.end_us[ops]
    name = events.name_id[ops]
    own = self_time(start, end, tree.op_parent, events.thread_id[ops])
    compiling = compile_inside(events, ops)  # the compiler's, left out of the tree
    if compiling is not None:  # less what the operators' children already hold of it
        child = np.flatnonzero(tree.op_parent >= 0)
        held = np.bincount(tree.op_parent[child], weights=compiling[child], minlength=ops.size)
        own = np.maximum(own - np.maximum(compiling - held, 0.0), 0.0)
    duration = np.subtract(end, start, out=end)  # ``end`` is not needed after
    in_step = step_of(steps, start) >= 0
    kept = step_of(apart, start) < 0 if apart else None
    del start, end  # a large table's operators: let each array go once used
    outermost = ~has_same_name_ancestor(name, tree.op_parent)
    if kept is not None:
        name, own, duration = name[kept], own[kept], duration[kept]
        in_step, outermost = in_step[kept], outermost[kept]
    n = len(events.names)
    calls = np.bincount(name, minlength=n)
    self_us = np.bincount(name, weights=own, minlength=n)
    inclusive_us = np.bincount(name[outermost], weights=duration[outermost], minlength=n)
    gpu_us, gpu_count = _launched_gpu_work(events, links) if links else (None, None)
    shapes = _typical_shapes(events, ops)
    per = 1.0 / max(len(steps), 1) if steps else 0.0
    step_calls = np.bincount(name[in_step], minlength=n) * per
    step_self = np.bincount(name[in_step], weights=own[in_step], minlength=n) * per
    counted = outermost & in_step
    step_inclusive = np.bincount(name[counted], weights=duration[counted], minlength=n) * per
    step_gpu = _gpu_in_steps(events, links, ops, in_step) * per if links else None
    stats = [
        OperatorStat(
            name=events.names[i],
            calls=int(calls[i]),
            self_ms=float(self_us[i]) / 1000,
            inclusive_ms=float(inclusive_us[i]) / 1000,
            gpu_ms=None if gpu_us is None else float(gpu_us[i]) / 1000,
            gpu_launches=None if gpu_count is None else int(gpu_count[i]),
            input_shapes=compact_json(events.text(shapes[i][0])) if i in shapes else None,
            input_types=compact_json(events.text(shapes[i][1])) if i in shapes else None,
            calls_per_step=float(step_calls[i]),
            self_ms_per_step=float(step_self[i]) / 1000,
            inclusive_ms_per_step=float(step_inclusive[i]) / 1000,
            gpu_ms_per_step=None if step_gpu is None else float(step_gpu[i]) / 1000,
        )
        for i in np.flatnonzero(calls).tolist()
    ]
    return tuple(sorted(stats, key=lambda s: (-s.self_ms, s.name)))


def compact_json(text: str | None) -> str | None:
    """Recorded JSON on one line (a pretty-printed trace indents it): the same values."""
    if text is None or "\n" not in text:
        return text
    try:
        return json.dumps(json.loads(text))
    except ValueError:
        return " ".join(text.split())


def _launched_gpu_work(
    events: EventTable, links: GpuLinks
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Per operator name: summed duration and count of the GPU work it launched."""
    n = len(events.names)
    known = links.owner >= 0
    names = events.name_id[links.owner[known]]
    total = np.bincount(names, weights=events.dur_us[links.rows[known]], minlength=n)
    return total.astype(np.float64), np.bincount(names, minlength=n).astype(np.int64)


def _gpu_in_steps(
    events: EventTable, links: GpuLinks, ops: NDArray[np.int64], in_step: NDArray[np.bool_]
) -> NDArray[np.float64]:
    """Per operator name: summed duration of the GPU work launched by its calls in a step."""
    started_in_step = np.zeros(len(events), dtype=bool)
    started_in_step[ops[in_step]] = True
    known = links.owner >= 0
    owner = links.owner[known]
    chosen = started_in_step[owner]
    names = events.name_id[owner[chosen]]
    weights = events.dur_us[links.rows[known][chosen]]
    total = np.bincount(names, weights=weights, minlength=len(events.names)).astype(np.float64)
    return total


def _typical_shapes(events: EventTable, ops: NDArray[np.int64]) -> dict[int, tuple[int, int]]:
    """Most frequent recorded inputs (ids of their dims and types) per operator name; of
    equally frequent ones, those of the earliest call."""
    dims, types = events.input_dims, events.input_types
    recorded = ops[dims[ops] >= 0]  # in table order: by start
    if recorded.size == 0:
        return {}
    keys = np.stack((events.name_id[recorded], dims[recorded], types[recorded]), axis=1)
    groups, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
    best: dict[int, tuple[tuple[int, int], int, int]] = {}
    rows = zip(groups.tolist(), first.tolist(), counts.tolist(), strict=True)
    for (name, dims_id, types_id), at, count in rows:
        held = best.get(name)
        if held is None or (count, -at) > (held[2], -held[1]):
            best[name] = ((dims_id, types_id), at, count)
    return {name: shape for name, (shape, _, _) in best.items()}


def _figure(context: TraceContext) -> tuple[OperatorStat, ...]:
    """GPU time per operator only where the GPU was observed."""
    links = context.links if context.gpu_busy is not None else None
    made = context.figure(compiled.FIGURE)
    apart = tuple(
        w for w, c in zip(context.windows, made, strict=True) if c is not None and c.compiling(w)
    )
    steady = tuple(w for w in context.counted if w not in apart) or context.counted
    if len(steady) == len(context.counted):
        apart = ()
    return operator_stats(context.events, context.tree, links, steady, apart)


FIGURE = FigureSpec("operators", _figure, frozenset({"steps", "tree", "links"}))
