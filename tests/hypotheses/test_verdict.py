"""The verdict on hand-built analyses: each bound where its rule says, and the top findings."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from steptrace.analysis.efficiency.roofline import RooflineRow
from steptrace.analysis.measure import TraceAnalysis
from steptrace.analysis.memory.holders import PeakHolders
from steptrace.analysis.memory.usage import DeviceMemory, MemoryAnalysis, MemoryStep
from steptrace.hypotheses import Case, Finding, Thresholds, find
from steptrace.hypotheses.finding import Evidence, Where, finding
from steptrace.hypotheses.verdict import Verdict, verdict_of, with_outcomes
from steptrace.scenario import Scenario
from tests.analyses import analysis, collective, cpu, device, gpu_step, reading, steps

WHERE = Where(("ProfilerStep#1",), (0.0, 1.0), None, None)
GIB = 2**30


def judged(data: TraceAnalysis, *found: Finding, **limits: Any) -> Verdict:
    return verdict_of(Case(data), found, Thresholds(**limits))


def made(rule: str, share: float, **kw: Any) -> Finding:
    return finding(
        rule,
        share,
        observation=f"{rule} observed.",
        evidence=Evidence((), WHERE),
        hypothesis="h",
        next_check=f"check {rule}",
        **kw,
    )


def on_gpu(busy_ms: float, *, wall: float = 10.0, **gpu: Any) -> TraceAnalysis:
    """Three steps of ``wall`` ms, the GPU busy ``busy_ms`` of each."""
    read = gpu.pop("read", None)
    return analysis(steps(wall, wall, wall, gpu=gpu_step(busy_ms, **gpu), reading=read))


def shares(verdict: Verdict) -> dict[str, Any]:
    return {f.name: f.value for f in verdict.figures}


def test_the_gpu_computing_80_percent_of_the_step_bounds_it() -> None:
    verdict = judged(on_gpu(8.0))
    assert (verdict.bound, verdict.on) == ("gpu", "gpu")
    assert verdict.sentence.startswith("GPU-bound: the GPU computes 80.0% of the step")
    assert "not known here (record_shapes=True" in verdict.sentence
    assert judged(on_gpu(7.9)).bound == "host"


def row(bound: Literal["compute", "memory"] | None, gpu_ms: float) -> RooflineRow:
    """A GEMM on the roofline (None: an operator without a model): only its bound and GPU
    time matter here."""
    return RooflineRow(
        operator="aten::mm" if bound else "aten::cudnn_convolution",
        input_shapes="[[8, 8], [8, 8]]",
        input_types=None,
        concrete_inputs=None,
        calls=1,
        model="GEMM" if bound else None,
        precision="float32",
        flops_per_call=1,
        bytes_per_call=1,
        gpu_ms=gpu_ms,
        cpu_ms=0.0,
        achieved_tflops=None,
        achieved_tbps=None,
        intensity=None,
        peak_tflops=None,
        peak_tbps=None,
        bound=bound,
        roofline_pct=None,
    )


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([row("memory", 3.0), row("compute", 1.0)], "memory"),
        ([row("memory", 1.0), row("compute", 3.0)], "compute"),
        ([], None),
        # three quarters of the placed time, but not half of the operators' GPU time
        ([row("memory", 3.0), row("compute", 1.0), row(None, 4.0)], None),
    ],
)
def test_gpu_bound_says_compute_or_memory_from_the_roofline_rows(
    rows: list[RooflineRow], expected: str | None
) -> None:
    data = analysis(steps(10.0, gpu=gpu_step(9.0)), roofline=rows)
    verdict = judged(data)
    assert (verdict.bound, verdict.gpu_bound) == ("gpu", expected)
    if expected is not None:
        assert f"mostly in {expected}-bound operators (75.0%" in verdict.sentence
    elif rows:
        assert "compute- or memory-bound is not claimed" in verdict.sentence
        assert "places 50.0% of the operators' GPU time" in verdict.sentence
        assert "memory-bound operators 37.5%" in verdict.sentence
        assert "aten::cudnn_convolution" in verdict.sentence
        assert ("roofline_coverage", 0.5) in [(f.name, f.value) for f in verdict.figures]


def test_the_gpu_idle_while_reading_bounds_it_as_input() -> None:
    # busy 4 of 10; idle 6, of which 4 while the batch is read: two thirds of the idle time
    verdict = judged(on_gpu(4.0, read=reading(5.0, gpu_idle_ms=4.0)))
    assert verdict.bound == "input"
    values = shares(verdict)
    assert values["input_share"] == pytest.approx(0.4)
    assert values["host_share"] == pytest.approx(0.2)
    assert values["gpu_computing_share"] == pytest.approx(0.4)
    assert verdict.sentence.startswith("Input-bound: the GPU sits idle while the batch is read")


def test_the_host_bounds_it_when_the_gpu_waits_for_it() -> None:
    verdict = judged(on_gpu(1.0, kernels=500, shorter_than_launch=400, waiting_on_host_ms=9.0))
    assert verdict.bound == "host"
    assert shares(verdict)["host_share"] == pytest.approx(0.9)
    assert "mostly for the host's own work" in verdict.sentence  # small-launches did not fire
    fired = made("small-launches", 0.72)
    data = on_gpu(1.0, kernels=500, shorter_than_launch=400, waiting_on_host_ms=9.0)
    assert "mostly for launches of kernels shorter" in judged(data, fired).sentence


def test_exposed_communication_bounds_it() -> None:
    verdict = judged(on_gpu(8.0, communication_ms=6.0, overlap_ms=1.0))
    assert verdict.bound == "communication"  # 5 of the 7 ms the GPU is not computing
    assert shares(verdict)["communication_share"] == pytest.approx(0.5)
    assert shares(verdict)["gpu_computing_share"] == pytest.approx(0.3)


def test_no_part_holding_60_percent_of_the_rest_is_mixed() -> None:
    data = on_gpu(4.0, communication_ms=2.0, read=reading(3.0, gpu_idle_ms=3.0))
    verdict = judged(data)  # computing 2, communication 2, input 3, host 3
    assert verdict.bound == "mixed"
    assert verdict.sentence.startswith("Mixed: no single cause holds 60.0%")
    assert judged(data, bound_share=0.35).bound in ("input", "host")


def test_a_cpu_trace_is_answered_on_the_cpu() -> None:
    cpu_steps = steps(10.0, 10.0, cpu=cpu(7.0), reading=reading(3.0))
    verdict = judged(analysis(cpu_steps))
    assert (verdict.bound, verdict.on) == ("host", "cpu")
    assert "on the CPU (this trace holds no GPU work)" in verdict.sentence
    assert "GPU computes" not in verdict.sentence
    assert set(shares(verdict)) == {
        "cpu_computing_share",
        "communication_share",
        "input_share",
        "steps",
    }
    reading_most = analysis(steps(10.0, 10.0, cpu=cpu(3.0), reading=reading(6.0)))
    assert judged(reading_most).bound == "input"
    comm = collective("all_reduce", (7.0, 7.0), (7.0, 7.0))
    talking = analysis(steps(10.0, 10.0, cpu=cpu(3.0)), communication=[comm])
    assert judged(talking).bound == "communication"


@pytest.mark.parametrize(
    ("unrecorded_ms", "answer"), [(6.0, "unrecorded-time"), (4.0, "dominant-op")]
)
def test_a_cpu_step_mostly_unrecorded_is_answered_by_unrecorded_time(
    unrecorded_ms: float, answer: str
) -> None:
    """The host holds the step; an operator holds 30% of it. With more of the step
    unrecorded than recorded, the unrecorded time answers the verdict, whatever the order
    of the findings; with less, the operator does."""
    found = (made("dominant-op", 0.3), made("unrecorded-time", unrecorded_ms / 10))
    data = analysis(
        steps(10.0, 10.0, 10.0, cpu=cpu(10.0 - unrecorded_ms, unrecorded_ms=unrecorded_ms))
    )
    verdict = judged(data, *found)
    assert (
        verdict.bound == "host"
        and f"no work is recorded in {unrecorded_ms * 10:.1f}%" in verdict.sentence
    )
    assert verdict.answered_by == answer and verdict.top[0].rule == answer


def test_a_gpu_expected_but_not_recorded_is_not_observed() -> None:
    data = analysis(steps(10.0, cpu=cpu(5.0)), launch_calls=12)
    found = find(Case(data, Scenario(question="q", device="cuda")))
    verdict = judged(data, *found)
    assert (verdict.bound, verdict.figures) == ("not-observed", ())
    assert verdict.sentence.startswith("Not observed: no GPU event in the trace")
    assert [t.rule for t in verdict.top] == ["gpu-not-observed"]


def memory(peak_bytes: int) -> MemoryAnalysis:
    holders = PeakHolders(0, 0, (), (), 0)
    step = MemoryStep(
        "ProfilerStep#1", 0, peak_bytes, peak_bytes, 0, 1, peak_bytes, 0.0, None, None, holders, ()
    )
    return MemoryAnalysis((DeviceMemory("cuda:0", (step,), 0.0),))


def test_a_high_memory_finding_on_a_nearly_full_device_bounds_it() -> None:
    full = analysis(
        steps(10.0, gpu=gpu_step(9.0)),
        devices=[device(memory_bytes=80 * GIB)],
        memory=memory(75 * GIB),
    )
    high = made("memory-reserved", 0.5, basis="reserved memory")
    verdict = judged(full, high)
    assert verdict.bound == "memory"
    assert verdict.sentence.startswith("Memory-bound: cuda:0 holds 93.8% of its")
    assert judged(full).bound == "gpu"  # no memory finding: time decides
    roomy = analysis(
        steps(10.0, gpu=gpu_step(9.0)),
        devices=[device(memory_bytes=80 * GIB)],
        memory=memory(40 * GIB),
    )
    assert judged(roomy, high).bound == "gpu"  # room left: memory is not the limit


def test_top_is_three_findings_time_first_never_a_minor_one() -> None:
    found = [
        made("input-pipeline", 0.3),
        made("precision", 0.1),
        made("repeated-copy", 0.004),  # minor
        made("memory-churn", 0.9, basis="allocated bytes"),
        made("small-launches", 0.06),
    ]
    verdict = judged(on_gpu(8.0), *found)
    # GPU-bound: precision answers it, first; the others by severity
    assert verdict.answered_by == "precision"
    assert [(t.rule, t.basis) for t in verdict.top] == [
        ("precision", "step time"),
        ("input-pipeline", "step time"),
        ("small-launches", "step time"),
    ]
    two = judged(on_gpu(8.0), *found[:4])
    assert [t.rule for t in two.top] == ["precision", "input-pipeline", "memory-churn"]
    assert two.top[0].next_check == "check precision" and two.top[0].outcome is None
    unanswered = judged(on_gpu(8.0), found[0], found[3])  # nothing about the GPU's work
    assert unanswered.answered_by is None
    assert [t.rule for t in unanswered.top] == ["input-pipeline", "memory-churn"]


def test_after_investigate_each_top_finding_carries_its_outcome() -> None:
    found = (made("input-pipeline", 0.3), made("precision", 0.1))
    verdict = judged(on_gpu(8.0), *found)
    checked = with_outcomes(verdict, found, {"precision": "supported: B/A 0.71 [0.69, 0.73]"})
    assert [t.outcome for t in checked.top] == ["supported: B/A 0.71 [0.69, 0.73]", None]


def test_after_investigate_the_top_is_chosen_again_from_the_findings_as_checked() -> None:
    verdict = judged(on_gpu(8.0), made("precision", 0.5), made("input-pipeline", 0.3))
    refuted = made("precision", 0.0)  # as ranking.ranked leaves a refuted finding
    checked = with_outcomes(verdict, (made("input-pipeline", 0.3), refuted), {})
    assert [t.rule for t in verdict.top] == ["precision", "input-pipeline"]
    assert [(t.rule, t.share) for t in checked.top] == [("input-pipeline", 0.3)]
