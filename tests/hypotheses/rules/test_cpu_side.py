"""Rules ``per-tensor-optimizer``, ``dispatch-bound`` and ``thread-oversubscription`` on
hand-built analyses: where each fires, where it stays silent, and what it claims."""

from __future__ import annotations

from typing import Any

import pytest

from steptrace.hypotheses import Case, Thresholds, find
from steptrace.hypotheses.rules.cpu_side import (
    dispatch_bound,
    per_tensor_optimizer,
    thread_oversubscription,
)
from steptrace.scenario import CaptureFacts, CpuFacts
from tests.analyses import analysis, cpu, gpu_step, operator, phase, steps

ADAM = "Optimizer.step#Adam.step"


def optimizing(operators: int, ms: float = 4.0, *, extra: tuple[str, ...] = ()) -> Any:
    """Three 10 ms CPU steps whose optimizer step runs ``operators`` operators in ``ms``."""
    return analysis(
        steps(10.0, 10.0, 10.0, phases=(phase(ADAM, ms, operators=operators),), cpu=cpu(8.0)),
        operators=[operator("aten::add_", calls=3 * operators), *map(operator, extra)],
    )


def test_a_per_tensor_optimizer_claims_its_step_on_the_cpu() -> None:
    (found,) = per_tensor_optimizer(Case(optimizing(400)), Thresholds())
    assert found.rule == "per-tensor-optimizer"
    assert found.severity == pytest.approx(0.4) and found.level == "high"
    assert found.evidence.values()["operators_per_step"] == 400
    assert "fused=True" in found.next_check


@pytest.mark.parametrize(
    "case",
    [
        Case(optimizing(99)),  # a few parameters: under the count
        Case(optimizing(400, ms=0.4)),  # 4% of the step: little to gain
        Case(optimizing(400, extra=("aten::_foreach_add_",))),  # multi-tensor already
        Case(optimizing(400, extra=("aten::_fused_adam_",))),
    ],
    ids=["few-operators", "small-share", "foreach", "fused"],
)
def test_a_per_tensor_optimizer_is_silent_otherwise(case: Case) -> None:
    assert per_tensor_optimizer(case, Thresholds()) == []


def test_a_per_tensor_optimizer_leaves_gpu_traces_to_optimizer_kernels() -> None:
    data = analysis(
        steps(10.0, 10.0, phases=(phase(ADAM, 4.0, operators=400),), gpu=gpu_step(5.0)),
        operators=[operator("aten::add_")],
    )
    assert per_tensor_optimizer(Case(data), Thresholds()) == []


def dispatching(outer: int, work_ms: float, wall_ms: float = 10.0) -> Any:
    return analysis(
        steps(wall_ms, wall_ms, cpu=cpu(wall_ms, outer_operators=outer, leaf_work_ms=work_ms))
    )


def test_a_dispatch_bound_step_claims_what_its_work_leaves() -> None:
    (found,) = dispatch_bound(Case(dispatching(400, 2.0)), Thresholds())
    assert found.severity == pytest.approx(0.8)
    assert found.evidence.values()["leaf_work_ms"] == 2.0
    assert "torch.compile" in found.next_check and "vectorise" in found.next_check


@pytest.mark.parametrize(("outer", "work_ms"), [(199, 0.0), (400, 5.01), (5000, 9.0)])
def test_a_step_of_few_operators_or_mostly_work_is_not_dispatch_bound(
    outer: int, work_ms: float
) -> None:
    assert dispatch_bound(Case(dispatching(outer, work_ms)), Thresholds()) == []


def test_dispatch_bound_gives_the_optimizer_s_time_to_per_tensor_optimizer() -> None:
    """Both fire on a per-tensor optimizer: its time is claimed once, by the optimizer."""
    data = analysis(
        steps(
            10.0,
            10.0,
            phases=(phase(ADAM, 5.0, operators=3000),),
            cpu=cpu(10.0, outer_operators=1500, leaf_work_ms=1.0),
        ),
        operators=[operator("aten::add_", calls=6000)],
    )
    found = {f.rule: f for f in find(Case(data))}
    assert found["per-tensor-optimizer"].severity == pytest.approx(0.5)
    assert found["dispatch-bound"].severity == pytest.approx(0.9 - 0.5)


def on(threads: int, cores: int, others: int | None) -> Case:
    facts = CpuFacts(
        torch_threads=threads, interop_threads=1, cores=cores, others_running=others, load_1min=1.0
    )
    return Case(analysis(steps(10.0, 10.0, cpu=cpu(8.0))), capture=CaptureFacts(cpu=facts))


def test_more_threads_than_free_cores_is_oversubscription_that_claims_no_time() -> None:
    (found,) = thread_oversubscription(on(8, 2, 0), Thresholds())
    assert (found.severity, found.level) == (0.0, "low")
    assert found.evidence.values() == {
        "torch_threads": 8,
        "cores": 2,
        "others_running": 0,
        "free_cores": 2,
    }
    assert "torch.set_num_threads(2)" in found.next_check
    (busy,) = thread_oversubscription(on(2, 2, 1), Thresholds())  # one core taken
    assert "torch.set_num_threads(1)" in busy.next_check


@pytest.mark.parametrize(
    "case",
    [on(2, 2, 0), on(1, 2, 5), on(4, 8, 4), on(8, 2, None), Case(analysis(steps(10.0)))],
    ids=["fits", "one-thread", "fits-beside-others", "load-unknown", "no-facts"],
)
def test_threads_that_fit_the_free_cores_are_not_oversubscribed(case: Case) -> None:
    assert thread_oversubscription(case, Thresholds()) == []
