"""Severity is a share of the step's wall time, and no time is claimed by two findings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from steptrace.hypotheses import Case, Thresholds, find
from steptrace.hypotheses.rules.common import idle_causes
from steptrace.hypotheses.rules.waiting import cpu_bound
from tests.analyses import (
    analysis,
    copy,
    copy_pattern,
    cpu,
    device,
    gpu_step,
    kernel,
    operator,
    reading,
    step,
    steps,
)
from tests.conftest import report_of

IDLE_RULES = ("input-pipeline", "sync-in-step", "small-launches", "cpu-bound")


def starved() -> Case:
    """10 ms steps, the GPU busy 1 ms: 3 ms of its idle time while reading, 4 ms after a
    blocking call, 7 ms waiting on the host; 150 of 200 kernels shorter than their launch;
    the CPU in operators 9 ms. The four causes of idle time all fire."""
    gpu = gpu_step(
        1.0, kernels=200, shorter_than_launch=150, waiting_on_host_ms=7.0, idle_after_sync_ms=4.0
    )
    data = analysis(
        steps(10.0, 10.0, 10.0, gpu=gpu, reading=reading(3.0, gpu_idle_ms=3.0), cpu=cpu(9.0))
    )
    return Case(data)


def test_the_gpu_idle_time_goes_to_one_cause_each() -> None:
    found = {f.rule: f.severity for f in find(starved())}
    assert set(IDLE_RULES) <= set(found)
    assert found["input-pipeline"] == pytest.approx(0.3)  # 3 ms idle while reading
    assert found["sync-in-step"] == pytest.approx(0.1)  # 4 ms after syncs, less those 3
    assert found["small-launches"] == pytest.approx(0.75 * (7 - 3 - 1) / 10)  # short share
    assert found["cpu-bound"] == pytest.approx((9 - 3 - 1 - 2.25) / 10)  # what is left
    assert sum(found[r] for r in IDLE_RULES) == pytest.approx(0.9)  # the GPU's idle share


@given(
    busy=st.floats(0, 10),
    read_idle=st.one_of(st.none(), st.floats(0, 10)),
    after_sync=st.floats(0, 10),
    waiting=st.one_of(st.none(), st.floats(0, 10)),
    kernels=st.integers(0, 50),
    short=st.integers(0, 50),
)
def test_idle_causes_never_add_up_to_more_than_the_idle_time(
    busy: float,
    read_idle: float | None,
    after_sync: float,
    waiting: float | None,
    kernels: int,
    short: int,
) -> None:
    gpu = gpu_step(
        busy,
        kernels=kernels,
        shorter_than_launch=min(short, kernels),
        waiting_on_host_ms=waiting,
        idle_after_sync_ms=after_sync,
    )
    measured = step("ProfilerStep#1", 10.0, gpu=gpu, reading=reading(1.0, gpu_idle_ms=read_idle))
    causes = idle_causes(measured)
    assert causes is not None and measured.gpu is not None
    assert all(part >= 0 for part in causes)
    assert sum(causes) == pytest.approx(measured.gpu.idle_ms, abs=1e-9)


def test_idle_causes_need_the_gpu() -> None:
    assert idle_causes(step("ProfilerStep#1", 10.0)) is None


def test_the_dataloader_gap_is_not_counted_twice() -> None:
    """The GPU waits on the host during the whole batch read (4 ms of a 10 ms step): that
    wait is input-pipeline's, not small-launches' too."""
    gpu = gpu_step(5.0, kernels=300, shorter_than_launch=300, waiting_on_host_ms=4.5)
    data = analysis(steps(10.0, 10.0, 10.0, gpu=gpu, reading=reading(4.0, gpu_idle_ms=4.0)))
    found = {f.rule: f.severity for f in find(Case(data))}
    assert found["input-pipeline"] == pytest.approx(0.4)
    assert found["small-launches"] == pytest.approx(0.05)  # the 0.5 ms outside the read
    assert sum(found.values()) <= 0.5 + 1e-9  # the GPU is idle half of each step


def test_cpu_bound_explains_only_idle_time_no_other_cause_took() -> None:
    (found,) = cpu_bound(starved(), Thresholds())
    assert found.severity == pytest.approx(0.275)  # not the 0.9 of the GPU's idle time
    assert found.evidence.values()["gpu_busy_share"] == pytest.approx(0.1)


def test_a_dominant_matrix_operator_gives_up_the_time_precision_claims() -> None:
    data = analysis(
        steps(10.0, 10.0, 10.0, gpu=gpu_step(9.0)),
        operators=[operator("aten::addmm", gpu_ms=15.0), operator("aten::add", gpu_ms=12.0)],
        kernels=[kernel("volta_sgemm_128x64_nn", 15.0), kernel("elementwise", 12.0)],
        devices=[device("Tesla V100", "7.0")],
    )
    found = {f.rule: f for f in find(Case(data))}
    precision, dominant = found["precision"], found["dominant-op"]
    assert precision.severity == pytest.approx(0.5)  # 15 ms of the steps' 30
    # alone, addmm would explain 15 ms of 30 too: the same kernels, counted once
    assert dominant.severity == 0.0 and dominant.level == "low"
    assert "precision claims (50.0% of the step)" in dominant.caveats[-1]


def test_a_dominant_elementwise_operator_keeps_its_time() -> None:
    data = analysis(
        steps(10.0, 10.0, 10.0, gpu=gpu_step(9.0)),
        operators=[operator("aten::addmm", gpu_ms=9.0), operator("aten::add", gpu_ms=18.0)],
        kernels=[kernel("volta_sgemm_128x64_nn", 9.0), kernel("elementwise", 18.0)],
        devices=[device("Tesla V100", "7.0")],
    )
    found = {f.rule: f for f in find(Case(data))}
    assert found["precision"].severity == pytest.approx(0.3)
    assert found["dominant-op"].severity == pytest.approx(0.6)  # aten::add: other kernels


def test_a_repeated_pageable_copy_is_counted_once() -> None:
    pageable = copy("HtoD", count=1, busy_ms=1.0, nbytes=2_000_000, pageable=1)
    data = analysis(
        steps(10.0, 10.0, 10.0, gpu=gpu_step(5.0, memcpy=[pageable])),
        copies=[copy_pattern("aten::copy_", "loss", nbytes=2_000_000, total_ms=3.0)],
    )
    found = {f.rule: f for f in find(Case(data))}
    assert found["pageable-memcpy"].severity == pytest.approx(0.1)
    assert found["repeated-copy"].severity == 0.0  # the same 1 ms per step


def test_silence_is_never_a_collective_s_exposed_time() -> None:
    """On the sampled DLRM rank both fire: a silence has no GPU work (its all-to-all
    kernels included), so unrecorded-time keeps its whole share beside comm-overlap's."""
    report = report_of("sampled_128rank_rank0")
    by_rule = {f.rule: f for f in report.findings}
    silent, exposed = by_rule["unrecorded-time"], by_rule["comm-overlap"]
    assert exposed.severity > 0.2
    assert silent.severity == silent.evidence.values()["share_of_step_median"]
    assert not any("comm-overlap" in c for c in silent.caveats)
