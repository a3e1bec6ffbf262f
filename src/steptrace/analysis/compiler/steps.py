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
  Region: F/C``, the outermost) and the graph breaks they show (regions nested in a region:
  one level per break).
"""

from __future__ import annotations

import re

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.compiler.events import COMPILE_ID, TIMED, is_annotation
from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.time.steps import StepWindow
from steptrace.trace import intervals as iv
from steptrace.trace.table import EventTable

REGION = re.compile(r"^Torch-Compiled Region: (\d+/\d+)")
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
        if not compiled and not mine.size and compile_ms[k] <= 0:
            found.append(None)
            continue
        outer, breaks = _regions(events, mine)
        found.append(
            StepCompile(
                compile_ms=float(compile_ms[k]),
                compiled=compiled,
                recompiled=tuple(c for c in compiled if not c.endswith("/0")),
                cache_hit=hit_id >= 0 and bool((ids[_within(events, spans, step)] == hit_id).any()),
                regions=outer,
                graph_breaks=breaks,
            )
        )
    return tuple(found)


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
