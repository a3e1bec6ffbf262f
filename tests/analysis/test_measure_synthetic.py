"""The analyses on a synthetic trace whose every answer is known by construction (µs)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import steptrace
from steptrace.analysis.measure import TraceAnalysis
from tests.conftest import WriteTrace
from tests.tracegen import cpu, document, gpu, kernel, label, launch, step

DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def events() -> list[dict]:  # type: ignore[type-arg]
    return [
        step(1, 0, 10_000),
        label("read_batch", 0, 4_000),
        label(DATALOADER, 100, 3_800),
        label("transfer", 4_000, 500),
        cpu("aten::copy_", 4_020, 100),
        launch(4_050, 10, correlation=4, name="cudaMemcpyAsync"),
        gpu(
            "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 4_100, 300, correlation=4, bytes=1000
        ),
        label("train", 4_500, 5_000),
        label("forward", 4_500, 1_500),
        cpu("aten::mm", 4_600, 1_000),
        launch(4_700, 10, correlation=1),
        launch(4_800, 5, correlation=3),
        kernel("gemm", 5_000, 3_000, correlation=1),
        kernel("small", 7_000, 500, stream=8, correlation=3),
        kernel("ncclKernel_AllReduce", 7_200, 600, stream=9),
        label("backward", 6_000, 3_000),
        cpu("aten::add", 6_100, 200),
        launch(6_150, 10, correlation=2),
        kernel("add", 8_500, 500, stream=8, correlation=2),
        launch(9_100, 300, correlation=5, name="cudaStreamSynchronize"),
        step(2, 10_000, 3_000),
        kernel("gemm", 10_500, 500),
    ]


@pytest.fixture
def result(write_trace: WriteTrace) -> TraceAnalysis:
    return steptrace.analyze(write_trace(document(events()))).analysis


def test_steps_and_first_step_apart(result: TraceAnalysis) -> None:
    assert [(s.name, s.wall_ms) for s in result.steps] == [
        ("ProfilerStep#1", 10.0),
        ("ProfilerStep#2", 3.0),
    ]
    first = result.summary.first_step
    assert first is not None and first.differs
    assert first.ratio == pytest.approx(10 / 3)


def test_gpu_busy_is_a_union_over_streams(result: TraceAnalysis) -> None:
    gpu_step = result.steps[0].gpu
    assert gpu_step is not None
    # copy 300 + gemm 3000 (small and nccl lie inside it) + add 500
    assert gpu_step.busy_ms == pytest.approx(3.8)
    assert gpu_step.idle_ms == pytest.approx(6.2)
    assert gpu_step.kernels.count == 4
    assert gpu_step.kernels.busy_ms == pytest.approx(3.5)
    assert gpu_step.communication.count == 1
    assert gpu_step.communication.overlap_with_compute_ms == pytest.approx(0.6)
    assert [(c.direction, c.count, c.bytes, c.pageable) for c in gpu_step.memcpy] == [
        ("HtoD", 1, 1000, 1)
    ]
    assert [(s.name, s.count, s.total_ms) for s in gpu_step.sync_calls] == [
        ("cudaStreamSynchronize", 1, pytest.approx(0.3))
    ]
    delay = gpu_step.launch_delay_us
    assert delay is not None
    # gemm 5000-4710, small 7000-4805, add 8500-6160, copy 4100-4060; nccl has no launch call
    assert (delay.min, delay.max) == (pytest.approx(40), pytest.approx(2340))


def test_labels_exclusive_of_nested_labels(result: TraceAnalysis) -> None:
    phases = {p.name: p for p in result.steps[0].phases}
    assert list(phases) == ["read_batch", DATALOADER, "transfer", "train", "forward", "backward"]
    expected_exclusive = {
        "read_batch": 0.2,
        DATALOADER: 3.8,
        "transfer": 0.5,
        "train": 0.5,
        "forward": 1.5,
        "backward": 3.0,
    }
    for name, ms in expected_exclusive.items():
        assert phases[name].exclusive_ms == pytest.approx(ms), name
        assert phases[name].share == pytest.approx(ms / 10)
    assert sum(p.exclusive_ms for p in phases.values()) == pytest.approx(9.5)
    assert phases["train"].inclusive_ms == pytest.approx(5.0)
    assert phases["read_batch"].gpu_idle_ms == pytest.approx(4.0)
    assert phases["transfer"].gpu_idle_ms == pytest.approx(0.2)
    assert phases["train"].gpu_idle_ms == pytest.approx(1.5)
    assert result.steps[0].unlabeled_ms == pytest.approx(0.5)


def test_operators_own_the_kernels_they_launched(result: TraceAnalysis) -> None:
    ops = {o.name: o for o in result.operators}
    assert ops["aten::mm"].self_ms == pytest.approx(1.0)  # its launch calls stay in it
    assert ops["aten::mm"].gpu_ms == pytest.approx(3.5)
    assert ops["aten::mm"].gpu_launches == 2
    assert ops["aten::add"].gpu_ms == pytest.approx(0.5)
    assert ops["aten::copy_"].gpu_ms == pytest.approx(0.3)  # the memcpy it launched


def test_kernel_table(result: TraceAnalysis) -> None:
    gemm = next(k for k in result.kernels if k.name == "gemm")
    assert (gemm.calls, gemm.total_ms, gemm.min_us, gemm.max_us) == (2, 3.5, 500, 3000)
    assert gemm.mean_us == 1750
    assert result.kernels[0].name == "gemm"


def test_shuffled_events_give_the_same_analysis(write_trace: WriteTrace) -> None:
    shuffled = events()
    random.Random(7).shuffle(shuffled)
    ordered = steptrace.analyze(write_trace(document(events()))).analysis
    unordered = steptrace.analyze(write_trace(document(shuffled))).analysis
    assert unordered.steps == ordered.steps
    assert unordered.operators == ordered.operators
    assert unordered.kernels == ordered.kernels


def test_gzip_and_plain_json_are_the_same(write_trace: WriteTrace) -> None:
    plain = steptrace.analyze(write_trace(document(events()))).analysis
    packed = steptrace.analyze(write_trace(document(events()), gz=True)).analysis
    assert plain.steps == packed.steps


def test_a_trace_without_steps_is_one_window(write_trace: WriteTrace) -> None:
    no_steps = [e for e in events() if not e["name"].startswith("ProfilerStep")]
    result = steptrace.analyze(write_trace(document(no_steps))).analysis
    assert not result.trace.steps_from_markers
    (window,) = result.steps
    assert window.name == "window"
    assert window.wall_ms == pytest.approx(11.0)  # from 0 to the end of the last kernel


def test_legacy_vocabulary_and_string_thread_ids(write_trace: WriteTrace) -> None:
    legacy = [
        {
            **e,
            "cat": {
                "user_annotation": "Operator",
                "cpu_op": "Operator",
                "kernel": "Kernel",
                "cuda_runtime": "Runtime",
                "gpu_memcpy": "Memcpy",
            }[e["cat"]],
            "tid": str(e["tid"]) if e["cat"] != "kernel" else f"stream {e['tid']}",
        }
        for e in events()
    ]
    result = steptrace.analyze(write_trace(document(legacy))).analysis
    current = steptrace.analyze(write_trace(document(events()))).analysis
    assert result.steps == current.steps
    assert {o.name for o in result.operators} == {o.name for o in current.operators}


def test_path_is_reported(write_trace: WriteTrace) -> None:
    path = write_trace(document(events()))
    assert Path(steptrace.analyze(path).analysis.trace.path) == path


def test_why_the_gpu_was_idle(result: TraceAnalysis) -> None:
    gpu_step = result.steps[0].gpu
    assert gpu_step is not None
    # gap 0-4100: the copy's launch ended at 4060, after the step began -> the host's;
    # gap 4400-5000: gemm's launch ended at 4710, after the GPU went idle -> the host's.
    # gap 8000-8500: add was launched at 6160, long before -> not waiting on the host.
    assert gpu_step.idle_waiting_on_host_ms == pytest.approx(4.1 + 0.6)
    # the sync ends at 9400 after blocking the host 300 µs, the GPU is idle until the
    # step ends at 10000: the sync owns 9400-9700, as long as it blocked the host
    assert gpu_step.idle_after_sync_ms == pytest.approx(0.3)
    assert gpu_step.kernels.shorter_than_launch == 0


def test_launches_per_label_and_cpu_busy(result: TraceAnalysis) -> None:
    launches = {p.name: p.gpu_launches for p in result.steps[0].phases}
    assert launches == {
        "read_batch": 0,
        DATALOADER: 0,
        "transfer": 1,
        "train": 3,
        "forward": 2,
        "backward": 1,
    }
    cpu = result.steps[0].cpu
    assert cpu.busy_ms == pytest.approx(1.3) and cpu.operators == 3


def test_copy_patterns(result: TraceAnalysis) -> None:
    (pattern,) = result.copies
    assert (pattern.direction, pattern.bytes, pattern.operator) == ("HtoD", 1000, "aten::copy_")
    assert pattern.label == "transfer"
    assert pattern.per_step == (1, 0) and pattern.steps == 1
    assert pattern.host_memory == "Pageable"


def test_a_label_crossing_a_step_boundary_is_split(write_trace: WriteTrace) -> None:
    events = [step(1, 0, 100), step(2, 100, 100), label("A", 0, 200), label("B", 0, 90)]
    result = steptrace.analyze(write_trace(document(events))).analysis
    first, second = ({p.name: p for p in s.phases} for s in result.steps)
    assert first["A"].exclusive_ms == pytest.approx(0.010)  # 90-100: B owns 0-90
    assert first["B"].exclusive_ms == pytest.approx(0.090)
    assert second["A"].exclusive_ms == pytest.approx(0.100) and "B" not in second
    assert second["A"].inclusive_ms == pytest.approx(0.100)
    assert [s.unlabeled_ms for s in result.steps] == [pytest.approx(0), pytest.approx(0)]


def test_gpu_work_counts_in_the_step_that_launched_it(write_trace: WriteTrace) -> None:
    events = [
        step(1, 0, 100),
        step(2, 100, 100),
        launch(50, 5, correlation=1),
        kernel("late", 150, 30, correlation=1),
        launch(160, 5, correlation=2),
        kernel("tail", 250, 40, correlation=2),
    ]
    result = steptrace.analyze(write_trace(document(events))).analysis
    first, second = (s.gpu for s in result.steps)
    assert first is not None and second is not None
    assert (first.kernels.count, second.kernels.count) == (1, 1)
    assert (first.busy_ms, second.busy_ms) == (0, pytest.approx(0.030))  # busy: by time
    assert any("0.040 ms of GPU work ran after the last step" in w for w in result.trace.warnings)


def test_input_idle_never_exceeds_the_read_time(write_trace: WriteTrace) -> None:
    events = [
        step(1, 0, 1000),
        label("read_batch", 0, 300),
        label("decode", 50, 190),
        kernel("k", 400, 500),
    ]
    finding = {f.rule: f for f in steptrace.analyze(write_trace(document(events))).findings}
    evidence = finding["input-pipeline"].evidence.values()
    assert evidence["share_of_step_median"] == pytest.approx(0.3)
    assert evidence["gpu_idle_share_while_reading"] == pytest.approx(1.0)
