"""Loading details: metadata, progress display, thread identity, args of every vintage."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

import steptrace
from steptrace.trace.kinds import Kind
from steptrace.trace.read.progress import loading_progress
from tests.conftest import WriteTrace, gpu_trace
from tests.tracegen import cpu, document, gpu, kernel, label, step


def test_rocm_trace_reads_hip_calls_and_string_streams() -> None:
    trace = steptrace.load_trace(gpu_trace("amd_mi250"))
    events = trace.events
    launches = events.mask(Kind.RUNTIME)
    hip = {events.names[i] for i in np.unique(events.name_id[launches])}
    assert "hipLaunchKernel" in hip
    kernels = events.kind == Kind.KERNEL
    assert (events.correlation[kernels] >= 0).all()
    assert trace.info.devices is not None and trace.info.devices[0].name == "AMD Radeon Graphics"


def test_metadata_of_a_rank_trace() -> None:
    info = steptrace.load_trace(gpu_trace("a100_2rank_rank0")).info
    assert info.distributed is not None
    assert (info.distributed.rank, info.distributed.world_size) == (0, 2)
    assert info.distributed.backend == "nccl"
    assert info.base_time_ns is not None


def test_trace_without_device_properties_is_not_a_cpu_trace() -> None:
    result = steptrace.analyze(gpu_trace("sampled_128rank_rank0")).analysis
    assert result.trace.devices is None
    assert result.trace.gpu_observed  # decided by the events, not by deviceProperties


def test_progress_display_goes_to_stderr_and_leaves_the_result_unchanged(
    write_trace: WriteTrace, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    buffer = io.StringIO()
    monkeypatch.setattr(
        "rich.console.Console",
        lambda **kwargs: Console(file=buffer, force_terminal=True, width=100),
    )
    path = write_trace(document([step(1, 0, 100), label("read_batch", 0, 50), kernel("k", 60, 5)]))
    shown = steptrace.load_trace(path, progress=True)
    hidden = steptrace.load_trace(path, progress=False)
    assert "read_batch" in shown.events.names
    assert np.array_equal(shown.events.start_us, hidden.events.start_us)
    assert "trace" in buffer.getvalue()


def test_progress_is_off_for_small_files_and_pipes(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from steptrace.trace.read.progress import LARGE_TRACE_BYTES, shows_progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert shows_progress(LARGE_TRACE_BYTES) and not shows_progress(LARGE_TRACE_BYTES - 1)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)  # a pipe: never
    assert not shows_progress(LARGE_TRACE_BYTES)
    shown: list[str] = []
    monkeypatch.setattr("rich.console.Console", lambda **_: shown.append("console"))
    with loading_progress("x", 10, None) as stage:
        stage.read(10)
        stage.step("decoding")
    assert shown == []  # no display was made


def test_copies_carry_bytes_and_host_memory_kind(write_trace: WriteTrace) -> None:
    copy = gpu("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 10, 5, bytes=4096)
    result = steptrace.analyze(write_trace(document([step(1, 0, 100), copy]))).analysis
    gpu_step = result.steps[0].gpu
    assert gpu_step is not None
    (summary,) = gpu_step.memcpy
    assert (summary.direction, summary.bytes, summary.pinned, summary.pageable) == (
        "DtoH",
        4096,
        1,
        0,
    )


def test_collective_args_follow_their_rows_into_table_order(write_trace: WriteTrace) -> None:
    """Collectives written out of time order, one with an unusable ts: each kept row's args
    are its own, the rows sorted, the unusable one left out."""
    comms = [
        cpu("record_param_comms", ts, 1.0, **{"Collective name": f"c{ts}", "Seq": ts})
        for ts in (50, 10, 40, 20, 30)
    ]
    comms[2]["ts"] = "soon"  # not a number: skipped
    events = [step(1, 0, 100), *comms, *(cpu("aten::add", k, 0.5) for k in range(60))]
    trace = steptrace.load_trace(write_trace(document(events)))
    table = trace.events
    names = table.sparse_column("collective")
    assert names.rows.tolist() == sorted(names.rows.tolist())
    written = [f"c{round(table.start_us[r] + table.origin_ns / 1000)}" for r in names.rows]
    assert [table.text(int(i)) for i in names.values] == written == ["c10", "c20", "c30", "c50"]
    assert table.sparse_column("seq").values.tolist() == [10, 20, 30, 50]


@pytest.mark.parametrize("largest", [2**31 - 1, 2**31, 2**40 + 3])
def test_integer_columns_are_int32_where_every_value_fits(
    write_trace: WriteTrace, largest: int
) -> None:
    """Devices, streams and correlation ids are held in int32 (half the memory) when every
    value of the trace fits, in int64 when one does not; their values are those written."""
    written = [1, 5, largest]
    events = [step(1, 0, 100)] + [
        kernel(f"k{i}", 10 + i, 1, stream=3 + i, correlation=c) for i, c in enumerate(written)
    ]
    table = steptrace.load_trace(write_trace(document(events))).events
    kernels = np.flatnonzero(table.kind == Kind.KERNEL)
    assert table.correlation[kernels].tolist() == written
    assert table.stream[kernels].tolist() == [3, 4, 5] and table.stream.dtype == np.int32
    assert table.correlation.dtype == (np.int32 if largest < 2**31 else np.int64)
    assert table.device.dtype == np.int32


def test_the_host_a_trace_names_but_not_a_scrubbed_placeholder(write_trace: WriteTrace) -> None:
    events = document([step(1, 0, 100), kernel("k", 10, 20)])
    named = steptrace.load_trace(write_trace({**events, "host_name": "node-a"}, name="a.json"))
    assert named.info.host == "node-a"
    scrubbed = steptrace.load_trace(write_trace({**events, "host_name": "<host-1>"}, name="b.json"))
    assert scrubbed.info.host is None  # each scrubbed file numbers its hosts from 1
    assert steptrace.load_trace(write_trace(events, name="c.json")).info.host is None
