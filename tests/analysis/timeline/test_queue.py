"""The launch queue of a GPU stream: by construction, and against the raw JSON."""

from __future__ import annotations

import numpy as np

from steptrace.analysis.timeline.queue import queue_depth
from tests import reference
from tests.conftest import gpu_trace, lanes_of


def test_the_queue_counts_what_was_launched_and_not_started() -> None:
    launch = np.array([0, 10, 20, 95, -30, -20], dtype=np.int64)
    start = np.array([50, 60, 30, 120, 5, -10], dtype=np.int64)  # the last: before the step
    curve = queue_depth(launch, start, wall_ns=100, resolution_ns=1)
    level = dict(zip(curve.at_ns, curve.depth, strict=True))
    assert (level[0], level[5], level[10], level[20], level[30]) == (2, 1, 2, 3, 2)
    assert (level[50], level[60], level[95], level[100]) == (1, 0, 1, 0)
    assert curve.peak == 3


def test_buckets_keep_the_peak_and_the_level_after_them() -> None:
    launch = np.array([0, 1, 2, 3], dtype=np.int64)
    start = np.array([4, 5, 6, 250], dtype=np.int64)
    curve = queue_depth(launch, start, wall_ns=300, resolution_ns=100)
    assert curve.at_ns == (0, 100, 200) and curve.depth == (4, 1, 0)


def test_the_peak_on_a_real_trace_is_the_raw_jsons() -> None:
    path = gpu_trace("resnet50_train")
    evs = reference.events(reference.read_exact(path))
    launches = {
        e.raw["args"]["correlation"]: e
        for e in evs
        if e.cat in ("cuda_runtime", "Runtime") and "correlation" in e.raw.get("args", {})
    }
    lanes = lanes_of("resnet50_train")
    for (name, lo, hi), step in zip(reference.step_windows(evs), lanes.steps, strict=True):
        assert step.name == name
        changes = []
        for g in reference.gpu_events(evs):
            call = launches.get(g.raw.get("args", {}).get("correlation"))
            if call is not None and call.start < hi and g.start > lo and g.start > call.start:
                changes += [(max(call.start, lo), 1), (min(g.start, hi), -1)]
        changes.sort(key=lambda c: (c[0], c[1]))
        level, peak = 0, 0
        for _, d in changes:
            level += d
            peak = max(peak, level)
        (gpu,) = [lane for lane in step.lanes if lane.kind == "gpu"]
        assert gpu.queue is not None and gpu.queue.peak == peak > 100
