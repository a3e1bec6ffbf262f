"""The what-if table: the path's largest parts, and the user's targets, made faster.

Contract: ``what_if_table(context, found, ends) -> tuple[WhatIf, ...]``. The targets are
the user's (``TraceContext.what_if``: name and speedup, kept even off the path: they then
predict no change) and, at ``DEFAULT_SPEEDUP``, the path's two largest kinds of work (not
``idle``), its three largest operators and kernels and two largest labels (by time on the
path, over the counted steps). Each row holds one step's figures, the counted step whose
path has the median length (the lower one of an even count): the target's time on its
path, the path's length and the predicted length (``what_if.predict``), so that the gain
is never more than the target's time on that path allows.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.context import TraceContext
from steptrace.analysis.critical.graph import Graph
from steptrace.analysis.critical.slices import CPU, GPU, KIND_NAMES
from steptrace.analysis.critical.walk import Path
from steptrace.analysis.critical.what_if import predict, target_slices
from steptrace.trace.kinds import Kind

DEFAULT_SPEEDUP = 2.0
_STEP = re.compile(r"^ProfilerStep#\d+$")


class WhatIf(msgspec.Struct, frozen=True):
    """A target made ``speedup`` times faster: its time on the path, the predicted step."""

    target: str  # an operator, kernel or label's name, or "kind:gpu" (cpu, launch, wait)
    speedup: float
    on_path_ms: float  # on the path of the step of median path length (see module)
    step_ms: float  # that path's predicted length
    length_ms: float  # that path's length now


def what_if_table(
    context: TraceContext,
    paths: tuple[Path, ...],
    starts: tuple[int, ...],
    ends: list[tuple[int, int]],
    graph: Graph,
) -> tuple[WhatIf, ...]:
    """The rows (see module): ``paths`` of the steps on ``graph``, their ``starts`` and
    ``ends`` (lane, ns)."""
    counted = [k for k, cut in enumerate(context.partial) if not cut] or list(range(len(paths)))
    by_length = sorted(counted, key=lambda k: (ends[k][1] - starts[k], k))
    median = by_length[(len(by_length) - 1) // 2]
    chosen = [(name, speedup) for name, speedup in context.what_if]
    given = {name for name, _ in chosen}
    for name in _defaults(context, graph, [paths[k] for k in counted]):
        if name not in given:
            chosen.append((name, DEFAULT_SPEEDUP))
    rows = []
    for name, speedup in chosen:
        mask = target_slices(graph, context.events, name)
        lane, end = ends[median]
        predicted = predict(graph, starts[median], lane, end, mask, speedup)
        on = _on_path(paths[median], mask)
        rows.append(WhatIf(name, speedup, on / 1e6, predicted / 1e6, (end - starts[median]) / 1e6))
    return tuple(rows)


def _on_path(path: Path, mask: NDArray[np.bool_]) -> int:
    on = (path.slice >= 0) & mask[np.maximum(path.slice, 0)]
    return int((path.end_ns - path.start_ns)[on].sum())


def _defaults(context: TraceContext, graph: Graph, paths: list[Path]) -> list[str]:
    """The path's largest kinds, operators, kernels and labels, by time on it."""
    events = context.events
    kinds = np.zeros(len(KIND_NAMES))
    by_name: dict[tuple[str, str], int] = {}
    for path in paths:
        dur = path.end_ns - path.start_ns
        kinds += np.bincount(path.kind, weights=dur, minlength=len(KIND_NAMES))
        for code, wanted, group in ((CPU, Kind.CPU_OP, "op"), (GPU, Kind.KERNEL, "kernel")):
            chosen = (path.kind == code) & (path.row >= 0)
            chosen[chosen] = events.kind[path.row[chosen]] == wanted
            for name_id, spent in zip(
                events.name_id[path.row[chosen]].tolist(), dur[chosen].tolist(), strict=True
            ):
                key = (group, events.names[name_id])
                by_name[key] = by_name.get(key, 0) + spent
    names = [KIND_NAMES[k] for k in np.argsort(-kinds[:4], kind="stable")[:2] if kinds[k] > 0]
    found = [f"kind:{n}" for n in names]
    for group in ("op", "kernel"):
        ranked = sorted((t, n) for (g, n), t in by_name.items() if g == group)[::-1]
        found += [n for _, n in ranked[:3]]
    return found + _labels(context, graph, paths)


def _labels(context: TraceContext, graph: Graph, paths: list[Path]) -> list[str]:
    """The two labels (``record_function``, not the steps) with the most time on the
    path."""
    events = context.events
    rows = np.flatnonzero(events.kind == Kind.USER_ANNOTATION)
    names = {events.names[int(n)] for n in np.unique(events.name_id[rows])}
    ranked = []
    for name in sorted(n for n in names if not _STEP.match(n))[:50]:
        mask = target_slices(graph, events, name)
        spent = sum(_on_path(p, mask) for p in paths)
        if spent > 0:
            ranked.append((spent, name))
    return [n for _, n in sorted(ranked, reverse=True)[:2]]
