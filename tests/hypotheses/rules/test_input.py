"""Rule ``input-pipeline`` on hand-built analyses: reading the batch, and the GPU idle."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from steptrace.analysis.measure import TraceAnalysis
from steptrace.hypotheses import Case, Figure, Finding, Thresholds, Where
from steptrace.hypotheses.rules.input import input_pipeline
from tests.analyses import THREAD, analysis, gpu_step, reading, step, steps

NAMES = ("ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3")


def run(data: TraceAnalysis, **limits: Any) -> list[Finding]:
    return input_pipeline(Case(data), Thresholds(**limits))


def cpu_reads(*read_ms: float) -> TraceAnalysis:
    """Steps of 10 ms, no GPU, each reading its batch for ``read_ms``."""
    return analysis(steps(*[10.0] * len(read_ms), reading=[reading(ms) for ms in read_ms]))


def gpu_reads(read_ms: float, idle_ms: float | None) -> TraceAnalysis:
    """Three steps of 10 ms on the GPU, reading for ``read_ms`` with the GPU idle ``idle_ms``."""
    return analysis(
        steps(10.0, 10.0, 10.0, reading=reading(read_ms, gpu_idle_ms=idle_ms), gpu=gpu_step(5.0))
    )


def test_fires_at_the_share_threshold_without_gpu() -> None:
    (found,) = run(cpu_reads(1.0, 1.0, 1.0))  # 1 ms of 10: exactly input_share
    assert found.rule == "input-pipeline"
    assert found.evidence.figures == (
        Figure("read_ms_median", 1.0, "ms"),
        Figure("share_of_step_median", 0.1, "share"),
        Figure("gpu_idle_share_while_reading", None, "share"),
        Figure("labels", ("read_batch",), "names"),
    )
    assert (found.severity, found.level) == (0.1, "medium")
    assert found.evidence.where == Where(NAMES, (1000.0, 31000.0), THREAD, None)
    assert "GPU not observed" in found.observation
    assert "median over 3 steps" in found.observation


def test_silent_just_under_the_share_threshold() -> None:
    assert run(cpu_reads(0.99, 0.99, 0.99)) == []


def test_silent_without_a_reading_label() -> None:
    assert run(analysis(steps(10.0, 10.0, 10.0))) == []


def test_medians_over_steps_and_labels_from_all_of_them() -> None:
    labelled = [
        reading(1.0, labels=("read_batch",)),
        reading(3.0, labels=("DataLoader.__next__",)),
        reading(2.0, labels=("read_batch", "DataLoader.__next__")),
    ]
    (found,) = run(analysis(steps(10.0, 10.0, 10.0, reading=labelled)))
    values = found.evidence.values()
    assert values["read_ms_median"] == 2.0
    assert values["share_of_step_median"] == 0.2
    assert values["labels"] == ("DataLoader.__next__", "read_batch")
    assert (found.severity, found.level) == (0.2, "high")


def test_shares_are_per_step_wall_time() -> None:
    data = analysis(
        [
            step("a", 4.0, start_us=0.0, reading=reading(1.0)),  # 25%
            step("b", 20.0, start_us=4000.0, reading=reading(1.0)),  # 5%
            step("c", 10.0, start_us=24000.0, reading=reading(1.0)),  # 10%
        ]
    )
    (found,) = run(data)
    assert found.evidence.values()["share_of_step_median"] == 0.1
    assert found.evidence.where.time_us == (0.0, 34000.0)


def test_fires_when_the_gpu_is_idle_half_the_reading() -> None:
    (found,) = run(gpu_reads(2.0, 1.0))
    assert found.evidence.figures == (
        Figure("read_ms_median", 2.0, "ms"),
        Figure("share_of_step_median", 0.2, "share"),
        Figure("gpu_idle_share_while_reading", 0.5, "share"),
        Figure("labels", ("read_batch",), "names"),
    )
    assert found.evidence.where == Where(NAMES, (1000.0, 31000.0), THREAD, (7,))
    assert "the GPU sat idle for 50.0% of that time" in found.observation


@pytest.mark.parametrize("idle_ms", [0.99, None])
def test_silent_when_the_gpu_keeps_busy_or_its_idle_is_unknown(idle_ms: float | None) -> None:
    assert run(gpu_reads(2.0, idle_ms)) == []


def test_overridden_thresholds() -> None:
    assert run(cpu_reads(2.0, 2.0, 2.0), input_share=0.21) == []
    assert len(run(cpu_reads(0.5, 0.5, 0.5), input_share=0.05)) == 1
    assert len(run(gpu_reads(2.0, 0.8), input_gpu_idle=0.4)) == 1
    assert run(gpu_reads(2.0, 1.0), input_gpu_idle=0.51) == []


def test_where_joins_the_streams_of_every_step_and_names_the_first_thread() -> None:
    data = analysis(
        steps(
            5.0,
            5.0,
            start_us=0.0,
            reading=reading(2.5, gpu_idle_ms=2.5),
            gpu=[gpu_step(1.0, streams=(7,)), gpu_step(1.0, streams=(13, 7))],
            thread=["pid 1 tid 2", "pid 1 tid 3"],
        )
    )
    (found,) = run(data)
    assert found.evidence.where == Where(
        ("ProfilerStep#1", "ProfilerStep#2"), (0.0, 10000.0), "pid 1 tid 2", (7, 13)
    )
    unknown = analysis([msgspec.structs.replace(s, thread=None) for s in data.steps])
    assert run(unknown)[0].evidence.where.thread is None


# -- with the DataLoader's workers beside the trace -----------------------------------------


def _with_workers(data: TraceAnalysis, behind_ms: float) -> TraceAnalysis:
    """``data`` with a worker file joined to each step: a 2 ms wait of which ``behind_ms``
    came before the batch was made."""
    from steptrace.analysis.loader.figure import LoaderAnalysis, StepBatch, WorkerLoad

    joined = tuple(
        StepBatch(
            step=s.name,
            batch=k,
            worker=k % 2,
            pid=100 + k % 2,
            wait_ms=2.0,
            behind_ms=behind_ms,
            fetch_ms=1.0,
            collate_ms=0.1,
            ready_ms=2.0 - behind_ms,
            samples=4,
            slow_samples=0,
        )
        for k, s in enumerate(data.steps)
    )
    load = WorkerLoad(worker=0, pid=100, busy_ms=1.0, share=0.2, samples=4, batches=1, waited_ms=1)
    loader = LoaderAnalysis(
        folder="t.workers",
        num_workers=2,
        window_ms=30.0,
        workers=(load, msgspec.structs.replace(load, worker=1, pid=101)),
        sample_ms_median=0.25,
        samples=12,
        slow_samples=(),
        slow_samples_total=0,
        imbalance=1.0,
        collate_share=0.1,
        steps=joined,
    )
    return msgspec.structs.replace(data, loader=loader)


def test_on_the_gpu_ready_batches_the_gpu_waits_for_are_their_transfer() -> None:
    (found,) = run(_with_workers(gpu_reads(4.0, 4.0), behind_ms=0.0))
    values = found.evidence.values()
    assert values["cause"] == "transfer" and "pin_memory=True" in found.next_check
    assert found.severity == pytest.approx(0.4)  # the GPU's idle time while reading, as before


def test_on_the_cpu_ready_batches_are_no_finding_and_late_ones_are_the_share() -> None:
    assert run(_with_workers(cpu_reads(2.0, 2.0, 2.0), behind_ms=0.0)) == []
    (found,) = run(_with_workers(cpu_reads(2.0, 2.0, 2.0), behind_ms=1.5))
    assert found.severity == pytest.approx(4.5 / 30)  # 1.5 ms late of each 10 ms step
    assert found.evidence.values()["cause"] == "workers-busy"
