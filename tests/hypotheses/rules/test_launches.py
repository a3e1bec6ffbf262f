"""Rules ``small-launches`` and ``optimizer-kernels`` on hand-built analyses, and
``small-launches`` on real graph traces."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import steptrace
from steptrace.analysis.measure import TraceAnalysis
from steptrace.hypotheses import Case, Figure, Finding, Thresholds, Where
from steptrace.hypotheses.rules.launches import optimizer_kernels, small_launches
from tests import reference
from tests.analyses import THREAD, analysis, gpu_step, phase, reading, steps
from tests.paths import FIXTURES

NAMES = ("ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3")
WHERE = Where(NAMES, (1000.0, 31000.0), THREAD, (7,))


def small(data: TraceAnalysis, **limits: Any) -> list[Finding]:
    return small_launches(Case(data), Thresholds(**limits))


def optimizer(data: TraceAnalysis, **limits: Any) -> list[Finding]:
    return optimizer_kernels(Case(data), Thresholds(**limits))


# -- small-launches ---------------------------------------------------------------------------
def launched(kernels: int, short: int, *, waiting_ms: float | None = None) -> TraceAnalysis:
    """Three steps of 10 ms, the GPU busy 4 ms of each (idle 60%)."""
    gpu = gpu_step(4.0, kernels=kernels, shorter_than_launch=short, waiting_on_host_ms=waiting_ms)
    return analysis(steps(10.0, 10.0, 10.0, gpu=gpu))


def test_small_launches_fires_at_100_kernels_half_of_them_short() -> None:
    (found,) = small(launched(100, 50, waiting_ms=4.0))
    assert found.rule == "small-launches"
    assert found.evidence.figures == (
        Figure("kernels_per_step", 100.0, "count"),
        Figure("shorter_than_launch_share", 0.5, "share"),
        Figure("idle_waiting_on_host_ms", 4.0, "ms"),
        Figure("idle_waiting_on_host_share", 0.4, "share"),
    )
    # half the 4 ms wait on the host goes to short launches: 2 ms of a 10 ms step
    assert found.severity == pytest.approx(0.2)
    assert found.level == "high"
    assert found.evidence.where == WHERE


def test_small_launches_claims_nothing_when_the_gpu_never_waits() -> None:
    (found,) = small(launched(100, 50))  # many short kernels, but queued: no idle wait
    assert (found.severity, found.level) == (0.0, "low")


@pytest.mark.parametrize(("kernels", "short"), [(99, 99), (100, 49), (1000, 0)])
def test_small_launches_silent_under_the_count_or_the_short_share(kernels: int, short: int) -> None:
    assert small(launched(kernels, short)) == []


def test_a_few_kernels_never_explain_a_wait_on_the_host() -> None:
    # the MI250 toy's case: 7 kernels a step, the GPU waiting on the host most of it
    assert small(launched(7, 4, waiting_ms=9.0)) == []
    assert small(launched(99, 99, waiting_ms=9.0)) == []


def test_small_launches_fires_when_short_launches_leave_the_gpu_waiting() -> None:
    # 40% of 200 kernels short (under small_kernel_share), 40% of a 5 ms wait: 2 ms of 10
    (found,) = small(launched(200, 80, waiting_ms=5.0))
    values = found.evidence.values()
    assert values["idle_waiting_on_host_ms"] == 5.0
    assert values["shorter_than_launch_share"] == 0.4
    assert found.severity == pytest.approx(0.2)
    assert small(launched(200, 80, waiting_ms=2.4)) == []  # 0.96 ms: under host_wait_share


def test_small_launches_gives_up_the_wait_while_reading_and_after_syncs() -> None:
    gpu = gpu_step(
        4.0, kernels=200, shorter_than_launch=200, waiting_on_host_ms=5.0, idle_after_sync_ms=1.5
    )
    alone = analysis(steps(10.0, 10.0, 10.0, gpu=gpu))
    (found,) = small(alone)
    assert found.severity == pytest.approx(0.35)  # 5 ms wait less 1.5 ms after syncs
    read = reading(3.0, gpu_idle_ms=2.0)
    (found,) = small(analysis(steps(10.0, 10.0, 10.0, gpu=gpu, reading=read)))
    # the reading takes 2 ms of idle, the syncs what is left of theirs: 1.5 - 2 -> 0
    assert found.severity == pytest.approx(0.3)


def test_small_launches_medians_over_steps() -> None:
    gpus = [
        gpu_step(4.0, kernels=50, shorter_than_launch=10, waiting_on_host_ms=3.0),
        gpu_step(4.0, kernels=300, shorter_than_launch=200, waiting_on_host_ms=None),
        gpu_step(4.0, kernels=120, shorter_than_launch=90, waiting_on_host_ms=0.5),
    ]
    (found,) = small(analysis(steps(10.0, 10.0, 10.0, gpu=gpus)))
    assert found.evidence.values() == {
        "kernels_per_step": 120.0,
        "shorter_than_launch_share": 0.75,  # median 90 of median 120
        "idle_waiting_on_host_ms": 0.5,  # None counts as 0
        "idle_waiting_on_host_share": 0.05,
    }


def test_small_launches_overridden_thresholds() -> None:
    assert small(launched(100, 50), small_kernel_count=101) == []
    assert small(launched(100, 50), small_kernel_share=0.51) == []
    assert len(small(launched(20, 10), small_kernel_count=20)) == 1
    assert small(launched(200, 80, waiting_ms=5.0), host_wait_share=0.21) == []


def test_small_launches_needs_the_gpu() -> None:
    assert small(analysis(steps(10.0, 10.0, 10.0))) == []
    many = gpu_step(1.0, kernels=500, shorter_than_launch=500)
    partly = analysis(steps(10.0, 10.0, gpu=[many, None]))
    assert small(partly) == []


# -- optimizer-kernels ------------------------------------------------------------------------
def optimizing(*launches: int | None, name: str = "Optimizer.step#AdamW.step") -> TraceAnalysis:
    """Steps of 10 ms whose optimizer label lasts 2 ms and launches ``launches`` each."""
    phases = [
        (phase("forward", 3.0, gpu_launches=500), phase(name, 2.0, gpu_launches=n))
        for n in launches
    ]
    return analysis(steps(*[10.0] * len(launches), phases=phases, gpu=gpu_step(5.0)))


def test_optimizer_kernels_fires_at_50_launches() -> None:
    (found,) = optimizer(optimizing(50, 50, 50))
    assert found.rule == "optimizer-kernels"
    assert found.evidence.figures == (
        Figure("launches_per_step", 50.0, "count"),
        Figure("optimizer_ms", 2.0, "ms"),
        Figure("labels", ("Optimizer.step#AdamW.step",), "names"),
    )
    assert (found.severity, found.level) == (0.2, "high")  # 2 ms of a 10 ms step
    assert found.evidence.where == WHERE


def test_optimizer_kernels_silent_just_under() -> None:
    assert optimizer(optimizing(49, 49, 49)) == []


@pytest.mark.parametrize("name", ["optimizer_step", "optimizer.step", "OPTIMIZER STEP"])
def test_optimizer_kernels_recognises_the_usual_labels(name: str) -> None:
    (found,) = optimizer(optimizing(60, 60, 60, name=name))
    assert found.evidence.values()["labels"] == (name,)


def test_optimizer_kernels_ignores_other_labels() -> None:
    assert optimizer(optimizing(60, 60, 60, name="optimizer.zero_grad")) == []


def test_optimizer_kernels_nested_labels_take_the_outer_one() -> None:
    nested = (
        phase("optimizer_step", 3.0, gpu_launches=80),
        phase("optimizer.step", 2.5, gpu_launches=70),
    )
    (found,) = optimizer(analysis(steps(10.0, 10.0, phases=nested, gpu=gpu_step(5.0))))
    assert found.evidence.values() == {
        "launches_per_step": 80.0,
        "optimizer_ms": 3.0,
        "labels": ("optimizer.step", "optimizer_step"),
    }
    assert found.severity == pytest.approx(0.3)


def test_optimizer_kernels_takes_torchs_own_label_inside_a_frameworks() -> None:
    """Lightning's optimizer_step holds the closure (training_step, backward): torch's own
    Optimizer.step# label inside it is the optimizer."""
    nested = (
        phase("[pl][profile][LightningModule]Model.optimizer_step", 8.0, gpu_launches=900),
        phase("Optimizer.step#SGD.step", 2.5, gpu_launches=70),
    )
    (found,) = optimizer(analysis(steps(10.0, 10.0, phases=nested, gpu=gpu_step(5.0))))
    assert found.evidence.values() == {
        "launches_per_step": 70.0,
        "optimizer_ms": 2.5,
        "labels": ("Optimizer.step#SGD.step",),
    }
    assert found.severity == pytest.approx(0.25)


def test_optimizer_kernels_median_over_the_labelled_steps_only() -> None:
    with_label = optimizing(40, 60, 70).steps
    data = analysis([*with_label, *steps(30.0, start_us=31000.0, gpu=gpu_step(1.0))])
    (found,) = optimizer(data)
    assert found.evidence.values()["launches_per_step"] == 60.0
    assert found.severity == pytest.approx(0.2)  # 2 ms of the median step, 10 ms


def test_optimizer_kernels_overridden_threshold() -> None:
    assert optimizer(optimizing(60, 60, 60), optimizer_launches=61) == []
    assert len(optimizer(optimizing(10, 10, 10), optimizer_launches=10)) == 1


def test_optimizer_kernels_silent_when_the_gpu_is_not_observed() -> None:
    phases = (phase("optimizer_step", 2.0, gpu_launches=None),)  # launches not known
    assert optimizer(analysis(steps(10.0, 10.0, 10.0, phases=phases))) == []


# -- graph replays: one launch for the whole graph --------------------------------------------

GRAPHS = sorted((FIXTURES / "graphs").glob("*.json.gz"))
GRAPH_LAUNCH = re.compile(r"^(?:cuda|cu|hip)GraphLaunch(?:_\w+)?$")


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: p.name[:24])
def test_kernels_a_graph_replays_are_not_launched_one_by_one(path: Path) -> None:
    """TraceLens's graph traces (tests/fixtures/graphs/): the kernels sharing a graph
    launch's correlation have no launch of their own; small-launches must not count them
    (it fired on each with a 'launch delay' of milliseconds, the graph's length)."""
    doc = reference.read_exact(path)
    events = reference.complete_events(doc)
    graph = {
        e["args"]["correlation"]
        for e in events
        if GRAPH_LAUNCH.match(e["name"]) and "correlation" in (e.get("args") or {})
    }
    kernels = [e for e in events if e.get("cat") == "kernel"]
    replayed = sum(1 for e in kernels if (e.get("args") or {}).get("correlation") in graph)
    assert replayed > 0.8 * len(kernels)
    report = steptrace.analyze(path)
    assert sum(s.gpu.kernels.replayed for s in report.analysis.steps if s.gpu) == replayed
    assert "small-launches" not in {f.rule for f in report.findings}
