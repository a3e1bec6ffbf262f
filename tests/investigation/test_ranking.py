"""investigate's ranking: a supported finding first, by the share its check measured; the
undecided by the trace's share; refuted ones last at 0; the profiler's own distortion after
the step's findings whatever its check says; memory findings after time ones."""

from __future__ import annotations

import random

import msgspec
import pytest

torch = pytest.importorskip("torch", reason="the checks' comparisons are run for real")

from steptrace.hypotheses.finding import (  # noqa: E402
    Evidence,
    Finding,
    OnCriticalPath,
    Where,
    finding,
)
from steptrace.investigation.ranking import ranked  # noqa: E402
from steptrace.validate import TimingPlan, compare  # noqa: E402
from steptrace.validate.results import CheckResult, Comparison, Outcome  # noqa: E402
from steptrace.validate.timing import Instruments  # noqa: E402


class StepClock:
    """A clock the steps advance: A by ``a_ms``, B by ``b_ms``, with 1% of noise."""

    def __init__(self) -> None:
        self.now = 0.0
        self.noise = random.Random(0)

    def __call__(self) -> float:
        return self.now

    def step(self, ms: float) -> object:
        def run(state: object, batch: torch.Tensor) -> torch.Tensor:
            self.now += ms / 1000 * (1 + 0.01 * self.noise.random())
            return batch + 0

        return run


def timed(a_ms: float, b_ms: float) -> Comparison:
    clock = StepClock()
    return compare(
        clock.step(a_ms),  # type: ignore[arg-type]
        clock.step(b_ms),  # type: ignore[arg-type]
        make_state=lambda: {"model": torch.nn.Identity()},
        batches=[torch.ones(2)],
        plan=TimingPlan(budget_s=5.0),
        instruments=Instruments(clock=clock),
    )


def made(rule: str, severity: float, basis: str = "step time") -> Finding:
    return finding(
        rule,
        severity,
        observation="o",
        evidence=Evidence((), Where(("ProfilerStep#1",), (0.0, 1.0), None, None)),
        hypothesis="h",
        next_check="n",
        basis=basis,  # type: ignore[arg-type]
    )


def checked(rule: str, outcome: Outcome, comparison: Comparison | None = None) -> CheckResult:
    return CheckResult(
        rule=rule, check="c", change="x", outcome=outcome, sentence="s", comparison=comparison
    )


def test_supported_first_by_measured_share_refuted_last_profiler_after_the_step() -> None:
    halves, tenth = timed(2.0, 1.0), timed(1.0, 0.9)
    findings = (
        made("memory-peak", 0.9, basis="memory peak"),
        made("profiler-distortion", 0.8),
        made("precision", 0.7),
        made("input-pipeline", 0.1),
        made("dispatch-bound", 0.3),
        made("small-launches", 0.5),
    )
    checks = (
        checked("memory-peak", "supported"),
        checked("profiler-distortion", "supported", timed(3.0, 1.0)),  # 67%: still after
        checked("precision", "not-supported", timed(1.0, 1.0)),
        checked("input-pipeline", "supported", halves),
        checked("dispatch-bound", "supported", tenth),
        checked("small-launches", "not-testable"),
    )
    order, results = ranked(findings, checks)
    assert [f.rule for f in order] == [
        "input-pipeline",  # supported, ~50% measured (the trace said 10%)
        "dispatch-bound",  # supported, ~10%
        "small-launches",  # undecided: the trace's 50%
        "precision",  # refuted: last of the step's, at 0
        "profiler-distortion",  # the profiler's cost, not the step's
        "memory-peak",  # a share of memory, after every time finding
    ]
    assert [c.rule for c in results] == [f.rule for f in order]
    assert order[0].severity == pytest.approx(0.5, abs=0.02)
    assert order[1].severity == pytest.approx(0.1, abs=0.02)
    assert order[3].severity == 0.0 and "Refuted" in order[3].caveats[-1]


def test_an_undecided_finding_off_the_critical_path_comes_after_the_others() -> None:
    """The trace ranked it after: a check that decided nothing keeps it there; a check
    that measured it supported outranks what the graph said."""
    off = OnCriticalPath(on_path_ms=0.0, share=0.0)
    on = OnCriticalPath(on_path_ms=2.0, share=1.0)
    findings = (
        msgspec.structs.replace(made("small-launches", 0.6), critical_path=off),
        msgspec.structs.replace(made("precision", 0.3), critical_path=on),
        msgspec.structs.replace(made("input-pipeline", 0.2), critical_path=off),
    )
    checks = (
        checked("small-launches", "not-testable"),
        checked("precision", "not-testable"),
        checked("input-pipeline", "supported", timed(2.0, 1.0)),
    )
    order, _ = ranked(findings, checks)
    assert [f.rule for f in order] == ["input-pipeline", "precision", "small-launches"]
