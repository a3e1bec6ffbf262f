"""``compute(context, figures)``: the figures of one trace, one after the other.

The figures that do not read the operator tree come first (the GPU figures, the labels,
the kernels), then those that read the tree itself (operators, CPU), then those that read
only the links of the GPU work to their operators (copies); each cached part they share
(``TraceContext``) is built by the first figure that reads it.

They run on this thread, one at a time, so that one figure's temporaries never add to
another's: on a large table (``heap.TRIM_ROWS`` rows and more) large temporaries are mapped
(``heap.bound_heap``) and each figure gives what it freed back to the system as it ends
(``TraceContext.figure``). The peak memory is then the table, the cached parts and one
figure's temporaries: ``benchmarks/scale_one_trace.py`` checks it. Building the operator
tree beside the GPU figures on a second thread (as until 2026-12-07) raised that peak on the
1.7 GB replica from 855 to 936 MB, over half the text's size, for no gain in time on two
busy cores.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.trace import heap


def compute(context: TraceContext, figures: Sequence[FigureSpec[Any]]) -> dict[str, Any]:
    """Each figure's result by name (see module)."""
    if len(context.events) >= heap.TRIM_ROWS:
        heap.bound_heap()
    tree = [f for f in figures if f.reads_tree and "tree" in f.needs]
    links = [f for f in figures if f.reads_tree and "tree" not in f.needs]
    ordered = [f for f in figures if not f.reads_tree] + tree + links
    return {figure.name: context.figure(figure) for figure in ordered}
