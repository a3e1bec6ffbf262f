"""``investigation.order``: the checks that serve the most step time per second of their
known cost run first; a check's cost counts the copies of the state it makes."""

from __future__ import annotations

import torch

from steptrace.hypotheses.finding import Basis, Evidence, Finding, Where, finding
from steptrace.investigation.order import (
    COPIES,
    COPY_BYTES_PER_S,
    check_order,
    cost_s,
    sharing_now,
    state_bytes,
)
from steptrace.investigation.rule_checks import CHECKS

WHERE = Where(steps=("ProfilerStep#1",), time_us=(0.0, 1.0), thread=None, streams=None)


def made(rule: str, share: float, basis: Basis = "step time") -> Finding:
    return finding(
        rule,
        share,
        observation="o",
        evidence=Evidence((), WHERE),
        hypothesis="h",
        next_check="n",
        basis=basis,
    )


def test_a_cheap_check_on_a_large_finding_runs_before_a_compile_on_a_larger_one() -> None:
    found = [made("dispatch-bound", 0.85), made("input-pipeline", 0.66), made("precision", 0.1)]
    costs = [cost_s(CHECKS[f.rule], 0) for f in found]
    assert costs == [CHECKS["dispatch-bound"].min_s, 2.0, 2.0]
    assert check_order(found, costs, [False] * 3) == [1, 2, 0]  # 0.33/s, 0.05/s, 0.028/s


def test_checks_marked_first_run_first_and_memory_findings_after_time() -> None:
    found = [made("input-pipeline", 0.5), made("memory-peak", 0.9, "memory peak"), made("x", 0.1)]
    order = check_order(found, [2.0, 2.0, 2.0], [False, False, True])
    assert order == [2, 0, 1]


def test_with_a_memory_question_memory_findings_run_before_time_and_minor_ones_last() -> None:
    found = [
        made("input-pipeline", 0.5),
        made("memory-growth", 0.6, "memory peak"),
        made("profiler-distortion", 0.001),  # under the noise floor: minor
        made("dispatch-bound", 0.05),
    ]
    costs = [2.0] * 4
    assert check_order(found, costs, [False] * 4) == [0, 3, 1, 2]
    assert check_order(found, costs, [False] * 4, memory_first=True) == [1, 0, 3, 2]


def test_a_check_that_cannot_start_or_a_minor_one_does_not_thin_the_others_shares() -> None:
    # the demo on a loaded machine: 19 s left, a compile that needs 30 s, a minor finding
    found = [made("input-pipeline", 0.82), made("dispatch-bound", 0.06), made("x", 0.0)]
    costs = [6.4, 30.0, 2.0]
    coming = [0, 1, 2]
    assert sharing_now(found, coming, costs, [True] * 3, 19.1) == 1  # the pipeline: all 19 s
    assert sharing_now(found, coming, costs, [True] * 3, 40.0) == 2  # the compile fits: halves
    assert sharing_now(found, coming, costs, [False, True, True], 40.0) == 1  # cannot run here
    assert sharing_now(found, [2], costs, [True] * 3, 19.1) == 0  # a minor one alone: all left


def test_the_copies_of_a_large_state_are_part_of_the_cost() -> None:
    model = torch.nn.Linear(1000, 1000)  # 1,001,000 float32 values
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(2, 1000)).sum().backward()
    optimizer.step()  # momentum buffers: as many values again
    held = state_bytes({"model": model, "optimizer": optimizer, "again": model})
    assert held == 2 * 4 * 1_001_000  # each tensor once, the model named twice
    spec = CHECKS["input-pipeline"]
    assert cost_s(spec, held) == spec.min_s + COPIES * held / COPY_BYTES_PER_S
