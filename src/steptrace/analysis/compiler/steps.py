"""torch.compile in a step: the compiler's own time, kept apart from the step's work.

A compile inside a step records each of its phases as a ``cpu_op "<phase> (dynamo_timed)"``
(often with the phase itself as an operator, and a zero-length ``user_annotation
"<phase>_data: ... compile_id=F/C"``); the outermost are ``_compile.compile_inner
(dynamo_timed)`` for a frame and, for the lazy backward compile, ``backward._backward_impl
(dynamo_timed)`` outside it. Contract:

- ``events.compiler_rows(events)``: the compiler's own events, which the operator tree
  leaves out, so no operator table, label or rule takes them for the step's own work.
- ``compile_per_step(events, steps)``: per step, ``StepCompile`` or None when the step ran
  no compiled region and compiled nothing: ``compile_ms``, the union of the
  ``(dynamo_timed)`` events in it (the outermost's time); the compile ids ``F/C`` compiled
  in it (from the ``_data:`` annotations), those with C > 0 recompiles; a cache hit
  (``AOTAutogradCache.inductor_load``); the compiled regions called (``Torch-Compiled
  Region: F/C``, the outermost: ``region_ms`` their time) and the graph breaks they show
  (regions nested in a region: one level per break); ``eager_ms``, the time inside those
  regions outside their compiled graphs (``CompiledFunction``, ``## Call CompiledFxGraph
  ...``): the code a graph break left eager between graphs, with Dynamo's guards and
  wrappers; ``eager_ops``, the operators that ran there outside those wrappers (what the
  break ran, e.g. ``aten::item``); ``eager_calls``, the ``TorchDynamo Cache Lookup``s that
  no compiled region followed (before the thread's next lookup, in the step): the frame
  ran eagerly, as it does once it reached ``torch._dynamo.config.recompile_limit``.
"""

from __future__ import annotations

import re
from collections import Counter

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.compiler.events import COMPILE_ID, TIMED, compiler_rows, is_annotation
from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.time.steps import StepWindow
from steptrace.trace import intervals as iv
from steptrace.trace.arrays import in_order
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable

REGION = re.compile(r"^Torch-Compiled Region: (\d+/\d+)")
LOOKUP = "TorchDynamo Cache Lookup"
# A compiled graph's execution: AOTAutograd's function (training) or the graph's own call.
GRAPH_CALLS = ("CompiledFunction", "CompiledFunctionBackward", "## Call CompiledFxGraph")
# Dynamo's and AOTAutograd's runtime around a graph: not the user's eager code.
WRAPPERS = ("Pregraph bytecode", "AOTDispatcher Runtime Wrapper", LOOKUP)
CACHE_HIT = "AOTAutogradCache.inductor_load (dynamo_timed)"
COMPILING = 0.10  # of a step's wall time spent compiling: the step is shown apart


class StepCompile(msgspec.Struct, frozen=True):
    """What torch.compile did in one step."""

    compile_ms: float  # the compiler's time in the step: union of its (dynamo_timed) events
    compiled: tuple[str, ...]  # compile ids F/C compiled in the step, in order
    recompiled: tuple[str, ...]  # of those, C > 0: a frame compiled again
    cache_hit: bool  # Inductor's cache served a graph (AOTAutogradCache.inductor_load)
    regions: int  # compiled regions called, the outermost
    graph_breaks: int  # the most regions nested in one (one level per graph break)
    region_ms: float = 0.0  # the outermost compiled regions' time in the step
    eager_ms: float = 0.0  # inside the outermost regions, outside their compiled graphs
    eager_ops: tuple[str, ...] = ()  # operators run there, outside Dynamo's wrappers
    eager_calls: int = 0  # cache lookups no compiled region followed: the frame ran eagerly

    def compiling(self, step: StepWindow) -> bool:
        """Did ``step`` (its window) compile ``COMPILING`` of its wall time or more?"""
        return self.compile_ms >= COMPILING * step.wall_ms


def compile_per_step(
    events: EventTable, steps: tuple[StepWindow, ...]
) -> tuple[StepCompile | None, ...]:
    """Per step, what torch.compile did in it (see module)."""
    names = events.names
    timed = [i for i, n in enumerate(names) if n.endswith(TIMED)]
    data = {
        i: m.group(1)
        for i, n in enumerate(names)
        if is_annotation(n) and (m := COMPILE_ID.search(n))
    }
    regions = {i: m.group(1) for i, n in enumerate(names) if (m := REGION.match(n))}
    if not timed and not data and not regions:
        return tuple(None for _ in steps)
    graph_ids = [i for i, n in enumerate(names) if n.startswith(GRAPH_CALLS)]
    wrapper_ids = [i for i, n in enumerate(names) if n.startswith(WRAPPERS)] + graph_ids
    graphs = iv.union(*_spans(events, graph_ids))
    wrapped = iv.union(*_spans(events, wrapper_ids))
    lookups = _rows(events, [names.index(LOOKUP)] if LOOKUP in names else [])
    compiler = compiler_rows(events)
    ids = events.name_id
    spans = np.flatnonzero(np.isin(ids, np.array(timed, dtype=ids.dtype)))
    busy = iv.union(events.start_us[spans], events.end_us[spans])
    lo = np.array([s.start_us for s in steps])
    hi = np.array([s.end_us for s in steps])
    compile_ms = iv.covered(busy, lo, hi) / 1000
    hit_id = names.index(CACHE_HIT) if CACHE_HIT in names else -1
    noted = np.flatnonzero(np.isin(ids, np.array(list(data), dtype=ids.dtype)))
    called = np.flatnonzero(np.isin(ids, np.array(list(regions), dtype=ids.dtype)))
    found: list[StepCompile | None] = []
    for k, step in enumerate(steps):
        compiled = tuple(
            dict.fromkeys(data[int(ids[r])] for r in _within(events, noted, step).tolist())
        )
        mine = _within(events, called, step)
        looked = _within(events, lookups, step)
        if not compiled and not mine.size and not looked.size and compile_ms[k] <= 0:
            found.append(None)
            continue
        outer, breaks = _regions(events, mine)
        outermost = _outermost(events, mine)
        found.append(
            StepCompile(
                compile_ms=float(compile_ms[k]),
                compiled=compiled,
                recompiled=tuple(c for c in compiled if not c.endswith("/0")),
                cache_hit=hit_id >= 0 and bool((ids[_within(events, spans, step)] == hit_id).any()),
                regions=outer,
                graph_breaks=breaks,
                region_ms=iv.total(outermost) / 1000,
                eager_ms=iv.total(iv.difference(outermost, graphs)) / 1000,
                eager_ops=_eager_ops(events, outermost, wrapped, compiler),
                eager_calls=_eager_calls(events, looked, mine, step),
            )
        )
    return tuple(found)


def _rows(events: EventTable, name_ids: list[int]) -> NDArray[np.int64]:
    """The rows whose name is one of ``name_ids``."""
    ids = events.name_id
    return np.flatnonzero(np.isin(ids, np.array(name_ids, dtype=ids.dtype)))


def _spans(events: EventTable, name_ids: list[int]) -> tuple[NDArray[np.float64], ...]:
    """(starts, ends) of the rows named one of ``name_ids``."""
    rows = _rows(events, name_ids)
    return events.start_us[rows], events.end_us[rows]


def _outermost(events: EventTable, regions: NDArray[np.int64]) -> iv.Intervals:
    """The union of the regions ``regions`` (the nested ones lie inside the outermost)."""
    order = regions[np.argsort(events.start_us[regions], kind="stable")]
    return iv.union(events.start_us[order], events.end_us[order])


def _eager_ops(
    events: EventTable,
    spans: iv.Intervals,
    wrapped: iv.Intervals,
    compiler: NDArray[np.bool_] | None,
) -> tuple[str, ...]:
    """The operators that start inside ``spans`` (the outermost regions) and outside
    ``wrapped`` (compiled graphs and Dynamo's wrappers), not the compiler's own, the
    outermost of them, by name, most called first."""
    if not spans[0].size:
        return ()
    ops = np.flatnonzero(events.kind == Kind.CPU_OP)
    start, end = events.start_us[ops], events.end_us[ops]
    region = np.array([REGION.match(n) is not None for n in events.names], dtype=bool)
    inside = (
        _within_any(spans, start)
        & ~_within_any(wrapped, start)
        & ~region[events.name_id[ops]]
        & (True if compiler is None else ~compiler[ops])
    )
    ops, start, end = ops[inside], start[inside], end[inside]
    order = np.lexsort((-(end - start), start))
    names, reach = [], -np.inf
    for r in order.tolist():  # the outermost: not inside the one open before it
        if start[r] >= reach:
            names.append(events.names[int(events.name_id[ops[r]])])
            reach = end[r]
    counted = Counter(names)
    return tuple(n for n, _ in counted.most_common())


def _within_any(intervals: iv.Intervals, t: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Per time in ``t``: inside one of ``intervals`` (half-open, start included)."""
    starts, ends = intervals
    at = np.searchsorted(starts, t, side="right") - 1
    inside: NDArray[np.bool_] = (at >= 0) & (t < ends[np.maximum(at, 0)])
    return inside


def _eager_calls(
    events: EventTable,
    lookups: NDArray[np.int64],
    regions: NDArray[np.int64],
    step: StepWindow,
) -> int:
    """Cache lookups in the step that no compiled region followed on their thread before
    the thread's next lookup (or the step's end): the frame ran eagerly."""
    eager = 0
    for thread in np.unique(events.thread_id[lookups]).tolist():
        mine = lookups[events.thread_id[lookups] == thread]
        ends = in_order(events.end_us[mine])
        nexts = np.append(in_order(events.start_us[mine])[1:], step.end_us)
        starts = in_order(events.start_us[regions[events.thread_id[regions] == thread]])
        if not starts.size:
            eager += mine.size
            continue
        at = np.searchsorted(starts, ends, side="left")  # the first region after each
        followed = (at < starts.size) & (starts[np.minimum(at, starts.size - 1)] < nexts)
        eager += int((~followed).sum())
    return eager


def _within(events: EventTable, rows: NDArray[np.int64], step: StepWindow) -> NDArray[np.int64]:
    """The ``rows`` that start in ``step``."""
    start = events.start_us[rows]
    chosen: NDArray[np.int64] = rows[(start >= step.start_us) & (start < step.end_us)]
    return chosen


def _regions(events: EventTable, rows: NDArray[np.int64]) -> tuple[int, int]:
    """(outermost regions, the deepest nesting less one) of the regions ``rows``."""
    if not rows.size:
        return 0, 0
    order = rows[np.lexsort((-events.dur_us[rows], events.start_us[rows]))]
    open_ends: list[tuple[int, float]] = []  # (thread, end) of the regions open around
    outer, deepest = 0, 0
    for r in order.tolist():
        thread, start, end = int(events.thread_id[r]), events.start_us[r], events.end_us[r]
        open_ends = [(t, e) for t, e in open_ends if t != thread or e > start]
        depth = sum(1 for t, e in open_ends if t == thread and e >= end)
        outer += depth == 0
        deepest = max(deepest, depth)
        open_ends.append((thread, end))
    return outer, deepest


def _figure(context: TraceContext) -> tuple[StepCompile | None, ...]:
    return compile_per_step(context.events, context.windows)


FIGURE = FigureSpec("compile", _figure, frozenset({"steps"}))
