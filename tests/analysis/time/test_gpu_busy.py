"""``gpu_busy``: GPU work rows, busy intervals over every stream, launch calls."""

from __future__ import annotations

import numpy as np

from steptrace.analysis.time.gpu_busy import GpuBusy, gpu_busy
from steptrace.analysis.time.links import cpu_tree, gpu_links
from steptrace.trace.table import EventTable
from tests.tables import kernel, label, memcpy, memset, op, runtime, table


def timeline_of(t: EventTable) -> GpuBusy | None:
    return gpu_busy(t, gpu_links(t, cpu_tree(t)))


def test_no_gpu_work_means_not_observed() -> None:
    t = table(op("aten::mm", 0, 10), runtime("cudaLaunchKernel", 2, 2, correlation=1))
    assert timeline_of(t) is None
    assert timeline_of(table(label("x", 0, 5))) is None


def test_busy_is_the_union_over_streams_and_kinds() -> None:
    t = table(
        kernel("a", 10, 20, stream=7),
        kernel("b", 20, 20, stream=8),  # overlaps a: counted once
        memcpy("Memcpy HtoD (Pageable -> Device)", 50, 10),
        memset(60, 5, stream=9),  # touches the copy: one interval
        kernel("empty", 80, 0),  # no time
        op("aten::mm", 0, 100),  # CPU: not GPU work
    )
    timeline = timeline_of(t)
    assert timeline is not None
    assert [t.name_of(r) for r in timeline.rows] == [
        "a",
        "b",
        "Memcpy HtoD (Pageable -> Device)",
        "Memset (Device)",
        "empty",
    ]
    assert timeline.start_us.tolist() == [10, 20, 50, 60, 80]
    starts, ends = timeline.busy
    assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == [(10, 40), (50, 65)]


def test_launch_calls_give_launch_end_duration_and_issue_time() -> None:
    t = table(
        runtime("cudaLaunchKernel", 2, 3, correlation=1),
        runtime("cudaMemcpyAsync", 8, 4, correlation=2),
        kernel("linked", 10, 5, correlation=1),
        memcpy("Memcpy DtoH (Device -> Pinned)", 20, 5, correlation=2),
        kernel("unlinked", 30, 5),
    )
    timeline = timeline_of(t)
    assert timeline is not None
    nan = np.nan
    np.testing.assert_array_equal(timeline.launch_end_us, [5, 12, nan])
    np.testing.assert_array_equal(timeline.launch_dur_us, [3, 4, nan])
    assert timeline.issued_us.tolist() == [2, 8, 30]  # the GPU start where no call is known
