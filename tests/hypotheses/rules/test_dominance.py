"""Rules ``dominant-op`` and ``profiler-distortion`` on hand-built analyses."""

from __future__ import annotations

from typing import Any

import pytest

from steptrace.analysis.measure import TraceAnalysis
from steptrace.hypotheses import Case, Figure, Finding, Thresholds, Where
from steptrace.hypotheses.rules.dominance import (
    distortion_note,
    dominant_op,
    profiler_distortion,
)
from steptrace.report.sections.context import capture_lines
from steptrace.scenario import CaptureFacts, CpuFacts, ProfilerCost
from tests.analyses import THREAD, analysis, cpu, gpu_step, operator, steps

NAMES = ("ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3")


def dominant(data: TraceAnalysis, **limits: Any) -> list[Finding]:
    return dominant_op(Case(data), Thresholds(**limits))


def distortion(data: TraceAnalysis, ratio: float | None = None, **limits: Any) -> list[Finding]:
    capture = None if ratio is None else CaptureFacts(overhead_ratio=ratio)
    return profiler_distortion(Case(data, capture=capture), Thresholds(**limits))


# -- dominant-op ------------------------------------------------------------------------------
def on_gpu(*gpu_ms: float | None, walls: tuple[float, ...] = (10.0, 10.0, 10.0)) -> TraceAnalysis:
    """GPU steps; operators ``op0``, ``op1``, ... that launched ``gpu_ms`` of GPU work."""
    ops = [operator(f"op{k}", calls=4, self_ms=1.0, gpu_ms=ms) for k, ms in enumerate(gpu_ms)]
    return analysis(steps(*walls, gpu=gpu_step(5.0)), operators=ops)


def test_dominant_op_fires_at_30_percent_of_gpu_time() -> None:
    (found,) = dominant(on_gpu(2.5, 3.0, 2.5, 2.0))  # 3 ms of 10 ms launched
    assert found.rule == "dominant-op"
    assert found.evidence.figures == (
        Figure("operator", "op1", "text"),
        Figure("calls", 4, "count"),
        Figure("ms", 3.0, "ms"),
        Figure("share", 0.3, "share"),
        Figure("measure", "GPU time it launched", "text"),
        Figure("input_shapes", None, "text"),
    )
    assert (found.severity, found.level) == (0.1, "medium")  # 3 ms of 30 ms of steps
    assert found.evidence.where == Where(NAMES, (1000.0, 31000.0), THREAD, (7,))
    assert any("record_shapes=True" in c for c in found.caveats)


def test_dominant_op_silent_just_under_the_share() -> None:
    assert dominant(on_gpu(2.5, 2.99, 2.5, 2.01)) == []  # 29.9%


def test_on_a_gpu_bound_step_the_largest_operator_is_named_whatever_its_share() -> None:
    """Five operators of 20% each: named on a GPU-bound step (busy 80% or more), the first
    place to look; under 30% and not GPU-bound, silent."""
    spread = [operator(f"op{k}", calls=4, self_ms=1.0, gpu_ms=2.0) for k in range(5)]
    (found,) = dominant(analysis(steps(10.0, 10.0, 10.0, gpu=gpu_step(8.0)), operators=spread))
    assert (found.evidence.values()["operator"], found.evidence.values()["share"]) == ("op0", 0.2)
    assert dominant(analysis(steps(10.0, 10.0, 10.0, gpu=gpu_step(7.9)), operators=spread)) == []


def test_dominant_op_needs_a_share_of_wall_time() -> None:
    assert len(dominant(on_gpu(3.0, 7.0, walls=(20.0, 20.0, 100.0)))) == 1  # 7 of 140 ms: 5%
    assert dominant(on_gpu(3.0, 7.0, walls=(20.0, 20.0, 101.0))) == []


def test_dominant_op_on_a_cpu_trace_uses_self_time() -> None:
    ops = [
        operator("aten::conv2d", calls=2, self_ms=6.0, input_shapes="[[8, 3, 224, 224]]"),
        operator("aten::relu", calls=2, self_ms=4.0, gpu_ms=100.0),
    ]
    (found,) = dominant(analysis(steps(10.0, 10.0, 10.0, cpu=cpu(8.0)), operators=ops))
    values = found.evidence.values()
    assert (values["operator"], values["ms"], values["share"]) == ("aten::conv2d", 6.0, 0.6)
    assert values["measure"] == "CPU self time"
    assert values["input_shapes"] == "[[8, 3, 224, 224]]"
    assert found.severity == pytest.approx(0.2)  # 6 ms of the steps' 30 ms
    assert found.evidence.where.streams is None
    assert "(shapes [[8, 3, 224, 224]])" in found.next_check
    assert not any("record_shapes" in c for c in found.caveats)


@pytest.mark.parametrize(
    "record",
    [
        "CompiledFunction",
        "CompiledFunctionBackward",
        "Torch-Compiled Region: 0/1",
        "TorchDynamo Cache Lookup",
        "## Call CompiledFxGraph fcmxbq2v ##",
    ],
)
def test_a_compiled_graph_s_record_is_never_the_dominant_operator(record: str) -> None:
    """Its self time is the graph's generated code, no operator to time alone: the largest
    operator is named instead, or nothing when none is large enough."""
    ops = [
        operator(record, calls=2, self_ms=6.0),
        operator("aten::addmm", calls=2, self_ms=3.0),
        operator("aten::relu", calls=2, self_ms=1.0),
    ]
    (found,) = dominant(analysis(steps(10.0, 10.0, 10.0, cpu=cpu(8.0)), operators=ops))
    assert found.evidence.values()["operator"] == "aten::addmm"
    ops[1] = operator("aten::addmm", calls=2, self_ms=1.0)
    assert dominant(analysis(steps(10.0, 10.0, 10.0, cpu=cpu(8.0)), operators=ops)) == []


@pytest.mark.parametrize(
    ("threads", "others", "waits"), [(4, 1, True), (1, 1, False), (2, 0, False)]
)
def test_a_cpu_operator_s_share_may_be_waiting_for_threads(
    threads: int, others: int, waits: bool
) -> None:
    """More intra-op threads than free cores (2 cores, ``others`` busy): the dominant
    operator's time may be a wait for a thread, and its caveat says so."""
    ops = [operator("aten::mm", calls=2, self_ms=6.0), operator("aten::relu", calls=2, self_ms=1.0)]
    data = analysis(steps(10.0, 10.0, 10.0, cpu=cpu(8.0)), operators=ops)
    facts = CpuFacts(
        torch_threads=threads, interop_threads=1, cores=2, others_running=others, load_1min=None
    )
    (found,) = dominant_op(Case(data, capture=CaptureFacts(cpu=facts)), Thresholds())
    said = [c for c in found.caveats if "thread-oversubscription" in c]
    assert bool(said) == waits
    assert (
        not said
        or f"torch ran {threads} intra-op threads with {2 - others} core(s) free" in said[0]
    )


@pytest.mark.parametrize("gpu_ms", [(None, None), (0.0, 0.0)])
def test_dominant_op_silent_without_gpu_time(gpu_ms: tuple[float | None, ...]) -> None:
    assert dominant(on_gpu(*gpu_ms)) == []


def test_dominant_op_silent_without_operators() -> None:
    assert dominant(on_gpu()) == []


def test_dominant_op_overridden_thresholds() -> None:
    data = on_gpu(2.5, 3.0, 2.5, 2.0)
    assert dominant(data, dominant_share=0.31) == []
    assert dominant(data, dominant_step_share=0.11) == []
    assert len(dominant(on_gpu(2.0, 2.0, 2.0, 2.0, 2.0), dominant_share=0.2)) == 1


# -- profiler-distortion ----------------------------------------------------------------------
def dispatching(operators: int, operator_us: float | None, busy_ms: float = 6.0) -> TraceAnalysis:
    """Three CPU steps of 10 ms, each with ``operators`` operators of this median duration."""
    return analysis(
        steps(10.0, 10.0, 10.0, cpu=cpu(busy_ms, operators=operators, operator_us=operator_us))
    )


def note(data: TraceAnalysis, ratio: float | None = None, **limits: Any) -> str | None:
    capture = CaptureFacts(overhead_ratio=ratio) if ratio is not None else None
    return distortion_note(Case(data, capture=capture), Thresholds(**limits))


def test_unmeasured_short_operators_are_a_line_of_context_not_a_finding() -> None:
    assert distortion(dispatching(200, 10.0)) == []
    assert note(dispatching(200, 10.0)) == (
        "Profiler distortion: not measured. 200 CPU operators per step with a median "
        "duration of 10.0 µs: the profiler's few µs per operator may be a large part of what "
        "they show, so validate any change outside it (steptrace compare; "
        "profile_training(measure_overhead=True) measures it)."
    )
    assert note(dispatching(200, 10.0), ratio=1.1) is None  # measured: the measure speaks


@pytest.mark.parametrize(("operators", "operator_us"), [(199, 5.0), (1000, 10.01), (0, None)])
def test_no_distortion_line_under_the_count_or_over_the_duration(
    operators: int, operator_us: float | None
) -> None:
    assert note(dispatching(operators, operator_us)) is None


def test_profiler_distortion_fires_on_a_measured_overhead_ratio() -> None:
    (found,) = distortion(dispatching(50, 40.0, busy_ms=2.0), ratio=1.5)
    assert found.evidence.values() == {
        "operators_per_step": 50.0,
        "operator_us_median": 40.0,
        "measured_overhead_ratio": 1.5,
    }
    # the profiler's share of a profiled step: 1 - 1/1.5
    assert found.severity == pytest.approx(1 / 3) and found.level == "high"
    assert "profiled steps took 1.50× the time of the same steps without the profiler" in (
        found.observation
    )
    assert "the profiler added 33.3% of each profiled step" in found.observation


def test_profiler_distortion_ratio_without_operators() -> None:
    (found,) = distortion(dispatching(0, None, busy_ms=0.0), ratio=2.0)
    assert found.evidence.values()["operator_us_median"] is None
    assert (found.severity, found.level) == (0.5, "high")
    assert found.observation.startswith("CPU operators; profiled steps took 2.00×")


def test_profiler_distortion_measured_below_the_ratio_silences_short_operators() -> None:
    """A compute-bound step of many short operators, measured 0.96×: the measure decides."""
    assert distortion(dispatching(500, 2.0, busy_ms=9.5), ratio=0.96) == []
    assert distortion(dispatching(500, 2.0, busy_ms=9.5), ratio=1.19) == []


def test_profiler_distortion_calls_a_ratio_below_1_noise() -> None:
    (found,) = distortion(dispatching(500, 2.0), ratio=0.96, overhead_ratio=0.0)
    assert (found.severity, found.level) == (0.0, "low")
    assert "0.96×" in found.observation and "noise between runs, not a speed-up" in (
        found.observation
    )
    assert "faster" not in found.observation


def test_profiler_distortion_silent_under_the_ratio_or_without_one() -> None:
    assert distortion(dispatching(50, 40.0), ratio=1.19) == []
    no_ratio = CaptureFacts(profiled_step_ms=(10.0, 10.0))
    assert profiler_distortion(Case(dispatching(50, 40.0), capture=no_ratio), Thresholds()) == []


def test_profiler_distortion_overridden_thresholds() -> None:
    assert note(dispatching(200, 10.0), short_operator_count=201) is None
    assert note(dispatching(200, 10.0), short_operator_us=9.99) is None
    longer = {"short_operator_us": 40.0, "short_operator_count": 50}
    assert note(dispatching(50, 40.0), **longer) is not None
    assert distortion(dispatching(50, 40.0), ratio=1.3, overhead_ratio=1.31) == []


def cost(ratio: float, ci: tuple[float, float]) -> CaptureFacts:
    """A capture whose profiler cost was measured in 8 pairs of interleaved blocks."""
    measured = ProfilerCost(
        ratio=ratio,
        ci=ci,
        confidence=0.95,
        block_steps=2,
        order=("PB", "BP") * 4,
        profiled_ms=(1.0,) * 16,
        bare_ms=(1.0,) * 16,
    )
    return CaptureFacts(overhead_ratio=ratio, overhead=measured)


def test_profiler_distortion_measured_in_blocks_says_its_interval() -> None:
    (found,) = profiler_distortion(
        Case(dispatching(50, 40.0), capture=cost(1.5, (1.4, 1.6))), Thresholds()
    )
    assert found.severity == pytest.approx(1 / 3)
    assert "1.50× [95% CI 1.40–1.60×, 8 pairs of interleaved blocks]" in found.observation
    assert found.evidence.values()["measured_overhead_ci"] == "1.40–1.60"
    assert not any("not interleaved" in c for c in found.caveats)


@pytest.mark.parametrize(
    ("ratio", "ci"),
    [(1.5, (0.95, 2.1)), (1.1, (1.05, 1.15)), (0.8, (0.7, 0.9))],
    ids=["no-detectable-difference", "under-the-ratio", "below-1"],
)
def test_profiler_distortion_measured_in_blocks_is_silent_unless_detected_and_large(
    ratio: float, ci: tuple[float, float]
) -> None:
    """Measured, the interval decides, even over 500 operators of 2 µs a step."""
    case = Case(dispatching(500, 2.0), capture=cost(ratio, ci))
    assert profiler_distortion(case, Thresholds()) == []


def test_the_capture_lines_say_no_detectable_difference_as_such() -> None:
    quiet = cost(1.02, (0.97, 1.08)).overhead
    assert quiet is not None and not quiet.detected
    (line,) = capture_lines(CaptureFacts(overhead_ratio=1.02, overhead=quiet))
    assert line.startswith("Profiler distortion: no detectable difference")
    assert "95% CI 0.97–1.08×" in line and "1.02×" not in line
