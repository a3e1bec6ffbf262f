"""CPU operators over the whole trace: self and inclusive time, calls, shapes, kernels.

Contract: ``operator_stats(events, tree, links) -> tuple[OperatorStat, ...]``, sorted by
self time. Self time excludes nested operators (runtime calls such as
``cudaLaunchKernel`` stay in the operator that made them, as in torch's own table);
inclusive time does not count a recursive call twice. Each kernel is attributed to the
innermost operator around the runtime call that launched it (via ``correlation``), and so
are copies and sets.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.links import CpuTree, GpuLinks
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


def operator_stats(
    events: EventTable, tree: CpuTree, links: GpuLinks | None
) -> tuple[OperatorStat, ...]:
    """Every CPU operator name, by self time (largest first); GPU figures need ``links``."""
    ops = tree.ops
    if ops.size == 0:
        return ()
    start, end = events.start_us[ops], events.end_us[ops]
    name = events.name_id[ops]
    own = self_time(start, end, tree.op_parent, events.thread_id[ops])
    outermost = ~has_same_name_ancestor(name, tree.op_parent)
    n = len(events.names)
    calls = np.bincount(name, minlength=n)
    self_us = np.bincount(name, weights=own, minlength=n)
    inclusive_us = np.bincount(name[outermost], weights=(end - start)[outermost], minlength=n)
    gpu_us, gpu_count = _launched_gpu_work(events, links) if links else (None, None)
    shapes = _typical_shapes(events, ops)
    stats = [
        OperatorStat(
            name=events.names[i],
            calls=int(calls[i]),
            self_ms=float(self_us[i]) / 1000,
            inclusive_ms=float(inclusive_us[i]) / 1000,
            gpu_ms=None if gpu_us is None else float(gpu_us[i]) / 1000,
            gpu_launches=None if gpu_count is None else int(gpu_count[i]),
            input_shapes=events.shapes[shapes[i]] if i in shapes else None,
            input_types=(events.shape_types[shapes[i]] or None) if i in shapes else None,
        )
        for i in np.flatnonzero(calls).tolist()
    ]
    return tuple(sorted(stats, key=lambda s: (-s.self_ms, s.name)))


def _launched_gpu_work(
    events: EventTable, links: GpuLinks
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Per operator name: summed duration and count of the GPU work it launched."""
    n = len(events.names)
    known = links.owner >= 0
    names = events.name_id[links.owner[known]]
    total = np.bincount(names, weights=events.dur_us[links.rows[known]], minlength=n)
    return total.astype(np.float64), np.bincount(names, minlength=n).astype(np.int64)


def _typical_shapes(events: EventTable, ops: NDArray[np.int64]) -> dict[int, int]:
    """Most frequent recorded inputs (shape id) per operator name."""
    recorded = ops[events.shape_id[ops] >= 0]
    if recorded.size == 0:
        return {}
    pairs, counts = np.unique(
        np.stack((events.name_id[recorded], events.shape_id[recorded]), axis=1),
        axis=0,
        return_counts=True,
    )
    best: dict[int, tuple[int, int]] = {}
    for (name, shape), count in zip(pairs.tolist(), counts.tolist(), strict=True):
        if name not in best or count > best[name][1]:
            best[name] = (shape, count)
    return {name: shape for name, (shape, _) in best.items()}
