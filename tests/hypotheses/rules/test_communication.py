"""Rule ``comm-overlap`` on hand-built analyses: each collective type judged alone, one
finding for them all."""

from __future__ import annotations

from typing import Any

import pytest

from steptrace.analysis.communication.summary import CollectiveKind
from steptrace.hypotheses import Case, Finding, Thresholds, Where
from steptrace.hypotheses.rules.communication import ADVICE, comm_overlap
from tests.analyses import THREAD, analysis, collective, gpu_step, steps

NAMES = ("ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3")
WHERE = Where(NAMES, (1000.0, 31000.0), THREAD, (7,))


def overlap(*kinds: CollectiveKind, **limits: Any) -> list[Finding]:
    """Three GPU steps of 10 ms with these collectives."""
    data = analysis(steps(10.0, 10.0, 10.0, gpu=gpu_step(8.0)), communication=kinds)
    return comm_overlap(Case(data), Thresholds(**limits))


def test_it_fires_at_10_percent_of_the_step_mostly_exposed() -> None:
    (found,) = overlap(collective("all_reduce", (1.0, 0.75), (1.0, 0.75), (1.0, 0.75)))
    assert found.rule == "comm-overlap"
    values = found.evidence.values()
    assert values["collective"] == "all_reduce"
    assert values["communication_share"] == pytest.approx(0.1)
    assert values["overlapped_share"] == pytest.approx(0.25)
    assert values["bytes_per_call"] == 1 << 20 and values["busbw_gbps"] == 10.0
    assert found.severity == pytest.approx(0.075)  # the exposed 0.75 ms of 10
    assert found.evidence.where == WHERE
    assert "all-reduce takes 10.0% of the step" in found.observation
    assert "1.0 MB each, bus bandwidth 10 GB/s" in found.observation


@pytest.mark.parametrize(("ms", "exposed"), [(0.99, 0.99), (2.0, 1.0), (4.0, 1.0)])
def test_it_is_silent_when_small_or_half_overlapped(ms: float, exposed: float) -> None:
    assert overlap(collective("all_reduce", *[(ms, exposed)] * 3)) == []


def test_the_types_that_fire_make_one_finding_with_the_largest_as_evidence() -> None:
    (found,) = overlap(
        collective("reduce_scatter", *[(2.0, 1.5)] * 3),
        collective("all_to_all", *[(3.0, 3.0)] * 3),
        collective("all_reduce", *[(0.5, 0.5)] * 3),  # 5%: under the share
        collective("send_recv", *[(1.5, 1.5)] * 3),
    )
    values = found.evidence.values()
    assert values["collective"] == "all_to_all"  # the most exposed of those that fired
    assert values["communication_share"] == pytest.approx(0.3)
    assert values["instances"] == (
        "all_to_all: 30.0% of the step, 0.0% overlapped",
        "reduce_scatter: 20.0% of the step, 25.0% overlapped",
        "send_recv: 15.0% of the step, 0.0% overlapped",
        "all_reduce: 5.0% of the step, 0.0% overlapped",
    )
    # a CPU-side sum here (no communication kernel on the GPU): 3 + 1.5 + 0.5 + 1.5 of 10 ms
    assert found.severity == pytest.approx(0.65)
    assert "Collectives that no compute hides take 65.0% of the step: all-to-all takes " in (
        found.observation
    )
    assert found.observation.endswith(
        "; reduce-scatter takes 20.0%, 25.0% overlapped; send-recv takes 15.0%, 0.0% overlapped."
    )
    advice = found.next_check
    assert advice.startswith(ADVICE["all_to_all"][1])  # the largest type's advice in full
    assert "; for reduce-scatter: overlap the reduce-scatter with the next unit's backward" in (
        advice
    )
    assert "; for send-recv: use more micro-batches or an interleaved schedule" in advice
    assert "bucket_cap_mb" not in advice  # all-reduce did not fire: DDP's knob is its own
    (reduce,) = overlap(collective("all_reduce", *[(3.0, 3.0)] * 3))
    assert "bucket_cap_mb" in reduce.next_check


def test_on_a_gpu_the_severity_is_the_steps_communication_kernels_not_a_sum() -> None:
    """Two types of 3 ms, all exposed, that ran at once: the GPU's communication kernels
    cover 4 ms of each step, 1 ms of it under compute: 3 ms exposed, not 6."""
    kinds = [collective(k, *[(3.0, 3.0)] * 3) for k in ("all_gather", "reduce_scatter")]
    gpu = gpu_step(8.0, communication_ms=4.0, overlap_ms=1.0)
    data = analysis(steps(10.0, 10.0, 10.0, gpu=gpu), communication=kinds)
    (found,) = comm_overlap(Case(data), Thresholds())
    assert found.severity == pytest.approx(0.3)
    assert found.evidence.values()["instances"] == (
        "all_gather: 30.0% of the step, 0.0% overlapped",
        "reduce_scatter: 30.0% of the step, 0.0% overlapped",
    )


def test_on_a_cpu_the_types_add_up_to_the_step_at_most() -> None:
    kinds = [collective(k, *[(7.0, 7.0)] * 2) for k in ("all_reduce", "barrier")]
    data = analysis(steps(10.0, 10.0), communication=kinds)
    (found,) = comm_overlap(Case(data), Thresholds())
    assert found.severity == 1.0  # 14 ms of collectives, none hidden, in 10 ms steps
    assert "; for barrier: check why it runs in every step" in found.next_check


def test_the_median_is_over_the_steps_with_collectives() -> None:
    """Gradients accumulated over two steps: the all-reduce runs in every other one."""
    every_other = collective("all_reduce", (4.0, 4.0), (0.0, 0.0), (4.0, 4.0), (0.0, 0.0))
    data = analysis(steps(10.0, 10.0, 10.0, 10.0, gpu=gpu_step(5.0)), communication=[every_other])
    (found,) = comm_overlap(Case(data), Thresholds())
    assert found.severity == pytest.approx(0.4)


def test_long_collectives_after_little_compute_point_to_the_other_ranks() -> None:
    (waiting,) = overlap(collective("all_reduce", *[(3.0, 3.0)] * 3, waiting_ms=5.0))
    assert "may be waiting for other ranks" in waiting.hypothesis
    assert waiting.next_check.startswith("First analyze the job's ranks together")
    assert waiting.evidence.values()["waiting_share"] == pytest.approx(5 / 9)
    (busy,) = overlap(collective("all_reduce", *[(3.0, 3.0)] * 3, waiting_ms=4.0))
    assert "other ranks" not in busy.hypothesis


def test_overridden_thresholds() -> None:
    kind = collective("all_reduce", *[(1.0, 0.75)] * 3)
    assert overlap(kind, comm_share=0.11) == []
    assert overlap(kind, comm_overlap=0.25) == []
    assert len(overlap(collective("all_reduce", *[(2.0, 0.5)] * 3), comm_overlap=0.8)) == 1


def test_silent_without_communication_or_in_steps_without_it() -> None:
    assert overlap() == []
    assert overlap(collective("all_reduce", (0.0, 0.0), (0.0, 0.0), (0.0, 0.0))) == []
