"""Rule ``comm-overlap`` on hand-built analyses: one finding per collective type."""

from __future__ import annotations

from typing import Any

import pytest

from steptrace.analysis.communication.summary import CollectiveKind
from steptrace.hypotheses import Case, Finding, Thresholds, Where
from steptrace.hypotheses.rules.communication import comm_overlap
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


def test_each_type_is_judged_alone_with_its_own_advice() -> None:
    found = overlap(
        collective("all_to_all", *[(3.0, 3.0)] * 3),
        collective("all_reduce", *[(0.5, 0.5)] * 3),  # 5%: under the share
        collective("reduce_scatter", *[(2.0, 1.5)] * 3),
        collective("send_recv", *[(1.5, 1.5)] * 3),
    )
    advice = {f.evidence.values()["collective"]: f.next_check for f in found}
    assert list(advice) == ["all_to_all", "reduce_scatter", "send_recv"]
    assert "bucket_cap_mb" not in " ".join(advice.values())  # DDP's knob is all-reduce's
    assert "split" in advice["all_to_all"] and "pipeline" in advice["all_to_all"]
    assert "backward_prefetch" in advice["reduce_scatter"]
    assert "micro-batches" in advice["send_recv"]
    (reduce,) = overlap(collective("all_reduce", *[(3.0, 3.0)] * 3))
    assert "bucket_cap_mb" in reduce.next_check


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
