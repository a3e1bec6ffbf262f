"""A step's GPU lanes: one per (device, stream), each bar naming the CPU bar of the top
operator that launched it and when its launch call started, and each lane's launch queue
(launched on the stream, not yet started)."""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.efficiency.kernel_kinds import category_of
from steptrace.analysis.time.gpu import copy_kind
from steptrace.analysis.time.links import CpuTree
from steptrace.analysis.time.steps import StepWindow
from steptrace.analysis.timeline.merge import merge
from steptrace.analysis.timeline.model import KINDS, QUEUE_DETAIL, Drawing, Lane, Rows, ns
from steptrace.analysis.timeline.queue import queue_depth
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable


def gpu_lanes(
    c: Drawing, lo_ns: int, gpu_at: Rows, resolution: int, drawn: dict[int, int], first_id: int
) -> list[Lane]:
    events, links = c.events, c.links
    rows = links.rows[gpu_at]
    top = _top_owner(c.tree, links.owner[gpu_at])
    owner_bar = np.array([drawn.get(r, -1) for r in top.tolist()], dtype=np.int64)
    launch = links.launch[gpu_at]
    launch_ns = np.where(launch >= 0, ns(events.start_us[np.maximum(launch, 0)], lo_ns), -1)
    kinds = c.gpu_kinds[gpu_at]
    lanes = []
    keys = sorted(set(zip(events.device[rows].tolist(), events.stream[rows].tolist(), strict=True)))
    for device, stream in keys:
        on = np.flatnonzero((events.device[rows] == device) & (events.stream[rows] == stream))
        r = rows[on]
        depth = c.gpu_depth[gpu_at][on]
        bars, bands, _ = merge(
            ns(events.start_us[r], lo_ns),
            np.rint(events.dur_us[r] * 1000).astype(np.int64),
            depth,
            kinds[on],
            c.names.of(events.name_id[r]),
            resolution,
            first_id=first_id,
            owner=owner_bar[on],
            launch_ns=launch_ns[on],
        )
        first_id += len(bars)
        lanes.append(
            Lane(
                name=f"GPU {device} stream {stream}",
                label=f"GPU {device} stream {stream}",
                kind="gpu",
                stream=int(stream),
                device=int(device),
                depth=int(depth.max()) + 1,
                events=int(r.size),
                bars=bars,
                bands=bands,
            )
        )
    return lanes


def queued(c: Drawing, w: StepWindow, lanes: tuple[Lane, ...]) -> tuple[Lane, ...]:
    """The lanes, each GPU one with its launch queue: every linked activity of its stream
    queued during the step (launched before its end, started after its start)."""
    events, links = c.events, c.links
    rows, launch = links.rows, links.launch
    launch_us = events.start_us[np.maximum(launch, 0)]
    during = (launch >= 0) & (launch_us < w.end_us) & (events.start_us[rows] > w.start_us)
    rows, launch_us = rows[during], launch_us[during]
    lo_ns = round(w.start_us * 1000)
    wall_ns = round(w.end_us * 1000) - lo_ns
    resolution = max(wall_ns // QUEUE_DETAIL, 1)
    out = []
    for lane in lanes:
        on = (events.device[rows] == lane.device) & (events.stream[rows] == lane.stream)
        if lane.kind == "gpu" and on.any():
            curve = queue_depth(
                ns(launch_us[on], lo_ns),
                ns(events.start_us[rows[on]], lo_ns),
                wall_ns,
                resolution,
            )
            lane = msgspec.structs.replace(lane, queue=curve)
        out.append(lane)
    return tuple(out)


def _top_owner(tree: CpuTree, owner: Rows) -> Rows:
    """Per launching operator (event row, or -1), its top operator's event row."""
    if tree.ops.size == 0:
        return np.full(owner.size, -1, dtype=np.int64)
    at = np.searchsorted(tree.ops, np.maximum(owner, 0))
    at = np.where(owner >= 0, at, -1)
    while (climb := (at >= 0) & (tree.op_parent[np.maximum(at, 0)] >= 0)).any():
        at[climb] = tree.op_parent[at[climb]]
    return np.where(at >= 0, tree.ops[np.maximum(at, 0)], -1)


def gpu_kinds(events: EventTable, rows: Rows) -> NDArray[np.int64]:
    """Per GPU row, its kind's index in ``KINDS`` (decided once per kind and name)."""
    width = len(events.names) + 1
    pairs = events.kind[rows].astype(np.int64) * width + events.name_id[rows]
    unique, inverse = np.unique(pairs, return_inverse=True)
    per_pair = np.array(
        [KINDS.index(_gpu_kind(k // width, events.names[k % width])) for k in unique.tolist()],
        dtype=np.int64,
    )
    out: NDArray[np.int64] = per_pair[inverse.reshape(-1)]
    return out


def _gpu_kind(kind: int, name: str) -> str:
    if kind == Kind.MEMSET:
        return "memset"
    if kind == Kind.MEMCPY:
        direction, _ = copy_kind(name)
        return direction if direction in KINDS else "copy"
    return "communication" if category_of(name) == "communication" else "kernel"
