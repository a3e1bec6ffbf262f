"""Rules ``sync-in-step`` and ``cpu-bound`` on hand-built analyses."""

from __future__ import annotations

from typing import Any

import pytest

from steptrace.analysis.measure import TraceAnalysis
from steptrace.hypotheses import Case, Figure, Finding, Thresholds, Where
from steptrace.hypotheses.rules.waiting import cpu_bound, sync_in_step
from tests.analyses import THREAD, analysis, cpu, gpu_step, operator, steps, sync

NAMES = ("ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3")
WHERE = Where(NAMES, (1000.0, 31000.0), THREAD, (7,))


def syncing(data: TraceAnalysis, **limits: Any) -> list[Finding]:
    return sync_in_step(Case(data), Thresholds(**limits))


def bound(data: TraceAnalysis, **limits: Any) -> list[Finding]:
    return cpu_bound(Case(data), Thresholds(**limits))


# -- sync-in-step -----------------------------------------------------------------------------
def idle_after_sync(*idle_ms: float, **gpu: Any) -> TraceAnalysis:
    """Steps of 10 ms; the GPU idle ``idle_ms`` after blocking calls in each."""
    gpus = [gpu_step(5.0, idle_after_sync_ms=ms, **gpu) for ms in idle_ms]
    return analysis(steps(*[10.0] * len(idle_ms), gpu=gpus))


def test_sync_in_step_fires_at_5_percent() -> None:
    (found,) = syncing(idle_after_sync(0.5, 0.5, 0.5))
    assert found.rule == "sync-in-step"
    assert found.evidence.figures == (
        Figure("idle_after_sync_ms", 0.5, "ms"),
        Figure("share_of_step", 0.05, "share"),
        Figure("sync_calls", (), "names"),
        Figure("syncing_operators", (), "names"),
    )
    assert (found.severity, found.level) == (0.05, "medium")
    assert found.evidence.where == WHERE
    assert "After blocking calls (blocking calls)" in found.observation


def test_sync_in_step_silent_just_under() -> None:
    assert syncing(idle_after_sync(0.49, 0.49, 0.49)) == []


def test_sync_in_step_names_the_calls_and_the_syncing_operators() -> None:
    data = analysis(
        steps(
            10.0,
            10.0,
            gpu=[
                gpu_step(
                    5.0, idle_after_sync_ms=3.0, sync_calls=[sync("cudaStreamSynchronize", 2)]
                ),
                gpu_step(
                    5.0,
                    idle_after_sync_ms=1.0,
                    sync_calls=[sync("cudaMemcpy", 1), sync("cudaStreamSynchronize", 1)],
                ),
            ],
        ),
        operators=[
            operator("aten::mm", calls=9),
            operator("aten::item", calls=3),
            operator("aten::nonzero", calls=1),
        ],
    )
    (found,) = syncing(data)
    values = found.evidence.values()
    assert values["idle_after_sync_ms"] == 2.0  # median of 3 and 1
    assert values["share_of_step"] == 0.2
    assert values["sync_calls"] == ("cudaStreamSynchronize ×3", "cudaMemcpy ×1")
    assert values["syncing_operators"] == ("aten::item ×3", "aten::nonzero ×1")
    assert found.level == "high"
    assert "(cudaStreamSynchronize ×3, cudaMemcpy ×1, aten::item ×3, aten::nonzero ×1)" in (
        found.observation
    )


def test_sync_in_step_overridden_threshold() -> None:
    assert syncing(idle_after_sync(0.5, 0.5, 0.5), sync_idle_share=0.051) == []
    assert len(syncing(idle_after_sync(0.1, 0.1, 0.1), sync_idle_share=0.01)) == 1


def test_sync_in_step_silent_when_the_gpu_is_not_observed() -> None:
    data = analysis(steps(10.0, 10.0), operators=[operator("aten::item", calls=50)])
    assert syncing(data, sync_idle_share=0.0) == []


# -- cpu-bound --------------------------------------------------------------------------------
def busy(gpu_ms: float, cpu_ms: float) -> TraceAnalysis:
    """Three steps of 10 ms: the GPU busy ``gpu_ms``, the CPU in operators ``cpu_ms``."""
    return analysis(steps(10.0, 10.0, 10.0, gpu=gpu_step(gpu_ms), cpu=cpu(cpu_ms)))


def test_cpu_bound_fires_with_the_cpu_busy_80_percent_and_the_gpu_under_half() -> None:
    (found,) = bound(busy(4.0, 8.0))
    assert found.rule == "cpu-bound"
    assert found.evidence.figures == (
        Figure("gpu_busy_share", 0.4, "share"),
        Figure("cpu_in_operators_share", 0.8, "share"),
        Figure("host_work_share", 0.6, "share"),
        Figure("operators_per_step", 0.0, "count"),
        Figure("operator_us_median", None, "us"),
        Figure("recorded_options", (), "names"),
    )
    assert found.next_check.startswith("Cut the host's time per step")
    assert found.severity == pytest.approx(0.6)  # the GPU idle share
    assert found.level == "high"
    assert found.evidence.where == WHERE
    assert found.observation == (
        "The GPU is busy 40.0% of the step while the CPU is inside operators 80.0% of it."
    )


@pytest.mark.parametrize(("gpu_ms", "cpu_ms"), [(5.0, 9.0), (4.0, 7.99)])
def test_cpu_bound_silent_at_half_gpu_or_under_the_cpu_share(gpu_ms: float, cpu_ms: float) -> None:
    assert bound(busy(gpu_ms, cpu_ms), cpu_bound_host_share=0.7) == []


def test_cpu_bound_just_under_half_gpu() -> None:
    (found,) = bound(busy(4.99, 8.0))
    assert found.evidence.values()["gpu_busy_share"] == pytest.approx(0.499)


def test_cpu_bound_medians_over_steps() -> None:
    data = analysis(
        steps(
            10.0,
            20.0,
            10.0,
            gpu=[gpu_step(1.0), gpu_step(8.0), gpu_step(9.0)],
            cpu=[cpu(9.0), cpu(19.0), cpu(2.0)],
        )
    )
    (found,) = bound(data)
    values = found.evidence.values()
    assert (values["gpu_busy_share"], values["cpu_in_operators_share"]) == (0.4, 0.9)
    assert found.evidence.where.time_us == (1000.0, 41000.0)


def test_cpu_bound_overridden_thresholds() -> None:
    assert bound(busy(4.0, 8.0), cpu_bound_gpu_busy=0.4) == []
    assert bound(busy(4.0, 8.0), cpu_bound_cpu_busy=0.81, cpu_bound_host_share=0.61) == []
    assert len(bound(busy(4.0, 8.0), cpu_bound_cpu_busy=0.81)) == 1  # the host's work: 0.6
    assert len(bound(busy(6.0, 5.0), cpu_bound_gpu_busy=0.7, cpu_bound_cpu_busy=0.5)) == 1


def test_cpu_bound_silent_when_the_gpu_is_not_observed() -> None:
    assert bound(analysis(steps(10.0, 10.0, 10.0, cpu=cpu(10.0)))) == []


def test_cpu_bound_fires_on_the_host_s_recorded_work_between_short_operators() -> None:
    """Few operator µs but Python between them (recorded, not silent): the GPU waits for
    the host's own work, which the verdict names; silent when that time is unrecorded."""
    python = analysis(steps(4.43, gpu=gpu_step(0.31), cpu=cpu(0.9, operators=479, operator_us=1.9)))
    (found,) = bound(python)
    values = found.evidence.values()
    assert values["cpu_in_operators_share"] == pytest.approx(0.9 / 4.43)
    assert values["host_work_share"] == pytest.approx((4.43 - 0.31) / 4.43)
    assert "479 CPU operators per step, 1.9 µs each" in found.observation
    silent = analysis(
        steps(4.43, gpu=gpu_step(0.31), cpu=cpu(0.9, operators=479, unrecorded_ms=3.9))
    )
    assert bound(silent) == []
