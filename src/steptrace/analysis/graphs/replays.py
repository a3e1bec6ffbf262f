"""CUDA (and HIP) graph replays: each graph launch and the GPU work it replayed.

Contract: ``graph_replays(events, steps, links) -> GraphReplays``. A replay is one graph
launch call (``cudaGraphLaunch``, ``cuGraphLaunch``, ``hipGraphLaunch``, a ``_ptsz``-style
suffix allowed) and the kernels, copies and sets that share its ``correlation`` (the link
``links.gpu_links`` follows for all GPU work). Per replay: the call's name and start
(µs from ``origin_ns``), the kernels and the copies or sets it replayed, their GPU span
(first start to last end) and busy time (the union of their intervals), and the graph's
id: the kernels' ``graph id`` (CUDA >= 12) when they all say the same, else None. A span
and a busy time are None when none of its work is in the trace.

A step's replays are those whose launch call starts in it (``steps.step_of``); replays
outside every step are in no step. ``GraphReplays.without_operator`` is the whole trace's
replayed work whose launch call has no CPU operator above it (the usual case: a graph is
replayed outside the operators), which operator tables cannot attribute: counted, with
its summed durations as an operator's GPU ms. Nothing here changes busy or idle time:
replayed work is GPU work like any other (``gpu_busy``).
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.time.links import GpuLinks
from steptrace.analysis.time.steps import StepWindow, indices_by_step, step_of
from steptrace.trace import intervals as iv
from steptrace.trace.kinds import GRAPH_LAUNCH, LAUNCHES, Kind
from steptrace.trace.table import EventTable, Sparse


class GraphReplay(msgspec.Struct, frozen=True):
    """One replay of a graph: its launch call and the GPU work that shares its correlation."""

    launch: str  # the launch call's name (cudaGraphLaunch, hipGraphLaunch, ...)
    start_us: float  # the launch call's start, from ``origin_ns``
    kernels: int  # kernels replayed
    copies: int  # memcpy and memset nodes replayed
    gpu_span_ms: float | None  # first start to last end of its work; None: none in the trace
    gpu_busy_ms: float | None  # union of its work's intervals; None: none in the trace
    graph_id: int | None  # the kernels' ``graph id`` (CUDA >= 12); None: not recorded


class ReplayedWork(msgspec.Struct, frozen=True):
    """Replays of the whole trace, inside the steps or not, whose launch call has no
    operator above it: work the operator tables cannot attribute."""

    replays: int
    kernels: int
    copies: int  # memcpy and memset nodes
    gpu_ms: float  # summed durations, as an operator's GPU ms


class GraphReplays(msgspec.Struct, frozen=True):
    steps: tuple[tuple[GraphReplay, ...], ...]  # per step: the replays launched in it
    without_operator: ReplayedWork | None  # None: no such replay in the trace


def graph_replays(
    events: EventTable, steps: tuple[StepWindow, ...], links: GpuLinks
) -> GraphReplays:
    """Each step's graph replays and the trace's replayed work no operator launched."""
    calls = graph_calls(events)
    if not calls.size:
        return GraphReplays(tuple(() for _ in steps), None)
    replayed = np.isin(links.launch, calls)
    rows, owner = links.rows[replayed], links.owner[replayed]
    which = np.searchsorted(calls, links.launch[replayed])  # per row: its call's index
    order = np.lexsort((events.start_us[rows], which))
    rows, which, owner = rows[order], which[order], owner[order]
    bounds = np.searchsorted(which, np.arange(calls.size + 1))
    ids = events.sparse.get("graph_id")
    replays = [
        _replay(events, int(call), rows[bounds[k] : bounds[k + 1]], ids)
        for k, call in enumerate(calls.tolist())
    ]
    by_step = indices_by_step(step_of(steps, events.start_us[calls]), len(steps))
    per_step = tuple(tuple(replays[k] for k in at.tolist()) for at in by_step)
    return GraphReplays(per_step, _without_operator(events, rows[owner < 0], which[owner < 0]))


def _without_operator(
    events: EventTable, rows: NDArray[np.int64], which: NDArray[np.int64]
) -> ReplayedWork | None:
    """The replayed work of ``rows`` (no operator above its launch; ``which``: its call)."""
    if not rows.size:
        return None
    is_kernel = events.kind[rows] == Kind.KERNEL
    return ReplayedWork(
        replays=int(np.unique(which).size),
        kernels=int(is_kernel.sum()),
        copies=int((~is_kernel).sum()),
        gpu_ms=float(events.dur_us[rows].sum()) / 1000.0,
    )


def graph_calls(events: EventTable) -> NDArray[np.int64]:
    """Rows of the graph launch calls, in table order."""
    named = np.array([bool(GRAPH_LAUNCH.match(n)) for n in events.names], dtype=bool)
    if not named.any():
        return np.zeros(0, dtype=np.int64)
    rows: NDArray[np.int64] = np.flatnonzero(events.mask(*LAUNCHES) & named[events.name_id])
    return rows


def _replay(
    events: EventTable, call: int, rows: NDArray[np.int64], ids: Sparse | None
) -> GraphReplay:
    """One launch call and its GPU work (``rows``, by start)."""
    kernels = rows[events.kind[rows] == Kind.KERNEL]
    start, end = events.start_us[rows], events.end_us[rows]
    return GraphReplay(
        launch=events.name_of(call),
        start_us=float(events.start_us[call]),
        kernels=int(kernels.size),
        copies=int(rows.size - kernels.size),
        gpu_span_ms=float(end.max() - start[0]) / 1000.0 if rows.size else None,
        gpu_busy_ms=iv.total(iv.union(start, end)) / 1000.0 if rows.size else None,
        graph_id=_graph_id(kernels, ids),
    )


def _graph_id(kernels: NDArray[np.int64], ids: Sparse | None) -> int | None:
    """The kernels' one ``graph id``; None when none carries it or they differ."""
    if ids is None or not kernels.size or not ids.rows.size:
        return None
    at = np.minimum(np.searchsorted(ids.rows, kernels), ids.rows.size - 1)
    values = ids.values[at[ids.rows[at] == kernels]]
    found = np.unique(values[values >= 0])  # MISSING (-1): not recorded
    return int(found[0]) if found.size == 1 else None


def _figure(context: TraceContext) -> GraphReplays:
    return graph_replays(context.events, context.windows, context.links)


FIGURE = FigureSpec(
    "graph_replays", _figure, frozenset({"steps", "links"}), groups=frozenset({"launch"})
)
