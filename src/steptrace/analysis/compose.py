"""``compute(context, figures)``: the figures of one trace, and where each one runs.

The policy, in one place. numpy releases the GIL inside its loops, so on a large table
(``threads.LARGE_ROWS`` and more) a helper thread keeps the second core busy:

1. the operator tree is built on the helper while this thread computes the figures that
   do not read it (the GPU figures, the labels, the kernels), in registry order;
2. then the links of the GPU work to their operators, and the tree's temporaries are given
   back to the system (``heap``) before the next pair allocates its own;
3. then the figures that read the tree itself (operators, CPU) run on this thread, those
   that read only the links (copies) on the helper.

So the largest parts run at most two at a time, their temporaries never three at once
(the peak memory ``benchmarks/scale_one_trace.py`` checks). Below ``LARGE_ROWS`` the
helper is this thread and everything runs in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.trace import heap
from steptrace.trace.threads import helper_for


def compute(context: TraceContext, figures: Sequence[FigureSpec[Any]]) -> dict[str, Any]:
    """Each figure's result by name (see module)."""
    early = [f for f in figures if not f.reads_tree]
    late = [f for f in figures if f.reads_tree]
    results: dict[str, Any] = {}
    with helper_for(len(context.events)) as helper:
        tree = helper.submit(lambda: context.tree) if late else None
        for figure in early:
            results[figure.name] = context.figure(figure)
        if tree is None:
            return results
        tree.result()
        if any("links" in f.needs for f in late):
            _ = context.links, context.gpu_busy, context.counted
        if len(context.events) >= heap.TRIM_ROWS:
            heap.release_freed_memory()
        helped = [f for f in late if "tree" not in f.needs]
        side = helper.submit(_each, context, helped)
        for figure in late:
            if "tree" in figure.needs:
                results[figure.name] = context.figure(figure)
    return results | side.result()


def _each(context: TraceContext, figures: Sequence[FigureSpec[Any]]) -> dict[str, Any]:
    return {f.name: context.figure(f) for f in figures}
