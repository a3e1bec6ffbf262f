"""``investigate``: the method end to end, each finding's check run for the user.

1. The question is the workload's scenario. 2. A labelled window is captured with minimal
options (and the same steps timed without the profiler). 3. It is analyzed. 4. For each
finding, most severe first, up to ``checks`` of them within ``budget_s`` seconds, its
check (``registry.CHECKS``) runs outside the profiler from the same state, correctness
first. 5. The report comes back with ``checks``: each hypothesis supported, not
supported, outputs differ, or not testable here (and what to run instead). A check never
changes the user's objects (``compare`` deep-copies them), and nothing is called
confirmed from the trace alone.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import torch

from steptrace.capturing.workload import Workload, run_workload
from steptrace.devices import resolve
from steptrace.errors import CaptureError, NotTestable, raised_at
from steptrace.hypotheses.finding import Finding
from steptrace.hypotheses.thresholds import Thresholds
from steptrace.investigation.check import Check, Context, Measured
from steptrace.investigation.order import check_order, cost_s, sharing_now, state_bytes
from steptrace.investigation.outcome import outcome_of
from steptrace.investigation.predicted import with_predictions
from steptrace.investigation.ranking import ranked
from steptrace.investigation.rule_checks import check_for
from steptrace.investigation.subject import Subject, subject_of
from steptrace.pipeline import analyze
from steptrace.process import ctrl_c
from steptrace.report.model import Report
from steptrace.scenario import Scenario
from steptrace.validate.ab import GRACE
from steptrace.validate.results import CheckResult, Outcome
from steptrace.validate.timing import TimingPlan
from steptrace.window import Window

Say = Callable[[str], None]
Clock = Callable[[], float]
WINDOW = Window(active=3, measure_overhead=True)  # minimal options: no shapes, no stack


def default_window(scenario: Scenario, *, memory: bool = False) -> Window:
    """The window ``investigate`` captures: ``WINDOW`` (inference: without the unprofiled
    timing); ``memory``: with allocations recorded (``profile_memory``)."""
    plan = WINDOW if scenario.kind == "training" else Window(active=WINDOW.active)
    return msgspec.structs.replace(plan, profile_memory=memory)


def investigate(
    workload: Workload,
    scenario: Scenario | None = None,
    *,
    out: str | Path,
    checks: int = 3,
    budget_s: float = 60.0,
    window: Window | None = None,
    thresholds: Thresholds | None = None,
    say: Say = lambda _: None,
    clock: Clock = time.perf_counter,
) -> Report:
    """Capture, analyze, and run the checks of up to ``checks`` findings, all within
    ``budget_s`` seconds (an upper bound on the whole run: the checks get what the capture
    and the analysis left). ``scenario`` replaces the workload's own. A Ctrl-C during the
    checks raises ``Interrupted`` holding the report with the checks done so far."""
    began = clock()
    if scenario is not None:
        workload = dataclasses.replace(workload, scenario=scenario)
    scenario = workload.scenario
    say(f"Question: {scenario.question}")
    plan = window or default_window(scenario)
    say(
        f"Capturing a labelled window (wait {plan.wait}, warm-up {plan.warmup}, "
        f"active {plan.active}) ..."
    )
    captured = run_workload(workload, out=out, window=plan)
    ctrl_c.check()  # a Ctrl-C the workload swallowed (its trace, complete, is kept)
    say("Analyzing the trace ...")
    report = analyze(captured.trace, thresholds=thresholds, critical_path=True)
    ctrl_c.check()
    say("Findings: " + (", ".join(f.rule for f in report.findings) or "none above thresholds"))
    subject = subject_of(workload, resolve(scenario.device))
    left_s = max(budget_s - (clock() - began), 0.0)
    say(f"{left_s:.0f} s of the {budget_s:g} s budget left for the checks")
    try:
        results = run_checks(
            report, subject, checks=checks, budget_s=left_s, window=plan, say=say, clock=clock
        )
    except ChecksInterrupted as stop:
        findings, done = ranked(report.findings, stop.results)
        partial = msgspec.structs.replace(report, findings=findings).checked(done)
        raise Interrupted(partial, captured.trace) from None
    results = with_predictions(report, Path(captured.trace), results)  # the graph, checked
    findings, results = ranked(report.findings, results)
    return msgspec.structs.replace(report, findings=findings).checked(results)


class ChecksInterrupted(KeyboardInterrupt):
    """Ctrl-C during the checks: every finding's result so far (those not done: not run)."""

    def __init__(self, results: tuple[CheckResult, ...]) -> None:
        super().__init__()
        self.results = results


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during ``investigate``'s checks: the report as far as it got, and its trace."""

    def __init__(self, report: Report, trace: str) -> None:
        super().__init__()
        self.report, self.trace = report, trace


def run_checks(
    report: Report,
    subject: Subject,
    *,
    checks: int,
    budget_s: float,
    window: Window = WINDOW,
    say: Say = lambda _: None,
    clock: Clock = time.perf_counter,
) -> tuple[CheckResult, ...]:
    """Every finding's check result, in the findings' order; at most ``checks`` run, those
    marked ``first`` (what distorts the others' timings) before the rest and beyond the
    count, the others by the step time they serve per second of their known cost
    (``order``). Each gets an equal share of the budget left with the checks still to run
    that it can hold (``sharing_now``), or its cost when that is more and the budget left holds
    it; one whose cost the budget left does not hold is not started."""
    start = clock()
    findings = report.findings
    copied = state_bytes(subject.make_state())
    costs = [cost_s(check_for(f), copied) for f in findings]
    first = [check_for(f).first for f in findings]
    order = check_order(findings, costs, first, memory_first=window.profile_memory)
    runnable = [_reason_not_run(f, subject) is None for f in findings]
    results: dict[int, CheckResult] = {}
    ran = 0
    for place, k in enumerate(order):
        finding, spec, cost = findings[k], check_for(findings[k]), costs[k]
        reason = _reason_not_run(finding, subject)
        counted = not spec.first  # a check run first (threads) protects the others: free
        if reason is None and (ran >= checks if counted else checks == 0):
            reason = f"not run: {checks} checks were asked for (--checks) and ran first"
        left = budget_s - (clock() - start)
        sharing = sharing_now(findings, order[place:], costs, runnable, left)
        share = max(left / max(1, min(checks - ran, sharing)), min(cost, left))
        if reason is None and share < cost:
            reason = (
                f"not run: {max(share, 0.0):.1f} s of the budget ({budget_s:.1f} s) was left for "
                f"it and it needs {cost:.0f} s or more; allow more with --budget"
            )
        if reason is not None:
            results[k] = _not_run(finding, spec, reason)
            continue
        ran += counted
        say(f"Checking {finding.rule}: {spec.change} ({share:.0f} s at most) ...")
        context = _context(report, subject, finding, window, share)
        try:
            result = _run_one(finding, spec, context, share, clock)
            ctrl_c.check()  # swallowed, or turned into an error, by the step: not a result
        except KeyboardInterrupt:
            raise ChecksInterrupted(_so_far(findings, results)) from None
        results[k] = result
        say(f"  {finding.rule}: {results[k].sentence}")
    return tuple(results[k] for k in range(len(findings)))


def _so_far(
    findings: tuple[Finding, ...], results: dict[int, CheckResult]
) -> tuple[CheckResult, ...]:
    """The results done, the others not run (Ctrl-C)."""
    stopped = "not run: interrupted by Ctrl-C"
    return tuple(
        results.get(k) or _not_run(f, check_for(f), stopped) for k, f in enumerate(findings)
    )


def _reason_not_run(finding: Finding, subject: Subject) -> str | None:
    spec = check_for(finding)
    if spec.run is None:
        return f"cannot be automated: {spec.manual}"
    if subject.kind not in spec.kinds:
        return f"not testable here: this check is for {' or '.join(spec.kinds)} workloads"
    if spec.needs_gpu and subject.device.type != "cuda":
        return (
            f"not testable here: the check needs a CUDA GPU and this workload runs on "
            f"{subject.device} (torch sees {'a' if torch.cuda.is_available() else 'no'} GPU)"
        )
    return None


def _context(
    report: Report, subject: Subject, finding: Finding, window: Window, share_s: float
) -> Context:
    """The check's plan: its comparison (correctness steps, warm-up and timing) gets its
    share, the watchdog's grace included (each factory keeps its own correctness plan:
    tolerances are the check's to choose)."""
    step_s, step_from = _step_s(report)
    timing_s = max((share_s - 1.0) / (1 + GRACE), 0.5)  # deadline_s(timing_s) == share_s
    return Context(
        subject=subject,
        finding=finding,
        analysis=report.analysis,
        limits=report.thresholds,
        window=window,
        step_ms=1000 * step_s,
        step_from=step_from,
        plan=TimingPlan(budget_s=timing_s),
        timeout_s=share_s,
    )


def _step_s(report: Report) -> tuple[float, str]:
    """The step time without the profiler when it was measured, else the trace's median."""
    facts = report.capture
    if facts is not None and facts.unprofiled_step_ms:
        ordered = sorted(facts.unprofiled_step_ms)
        return ordered[len(ordered) // 2] / 1000, "outside the profiler"
    return report.analysis.summary.wall_ms.median / 1000, "in the trace (profiled)"


def _run_one(
    finding: Finding, spec: Check, context: Context, share_s: float, clock: Clock
) -> CheckResult:
    assert spec.run is not None
    began = clock()
    try:
        made = spec.run(context)
    except NotTestable as exc:
        return _not_run(
            finding,
            spec,
            f"not testable here: {exc.reason}",
            exc.instead or None,
            share_s,
            clock() - began,
        )
    except CaptureError as exc:  # the user's step raised or could not be copied
        return _not_run(finding, spec, f"not testable here: {exc}", None, share_s, clock() - began)
    except Exception as exc:  # the workload failed under the check's change: said, not raised
        said = f"the check failed: the workload raised {raised_at(exc)}"
        return _not_run(finding, spec, said, None, share_s, clock() - began)
    elapsed = clock() - began
    if isinstance(made, Measured):
        return CheckResult(
            rule=finding.rule,
            check=spec.name,
            change=spec.change,
            outcome=made.outcome,
            sentence=made.sentence,
            measured=made.figures,
            budget_s=share_s,
            elapsed_s=elapsed,
        )
    outcome, sentence = outcome_of(made)
    return CheckResult(
        rule=finding.rule,
        check=spec.name,
        change=spec.change,
        outcome=outcome,
        sentence=sentence,
        comparison=made,
        budget_s=share_s,
        elapsed_s=elapsed,
    )


def _not_run(
    finding: Finding,
    spec: Check,
    reason: str,
    instead: str | None = None,
    budget_s: float | None = None,
    elapsed_s: float | None = None,
) -> CheckResult:
    outcome: Outcome = "not-testable"
    return CheckResult(
        rule=finding.rule,
        check=spec.name,
        change=spec.change,
        outcome=outcome,
        sentence=reason[0].upper() + reason[1:] + ".",
        instead=instead or finding.next_check,
        budget_s=budget_s,
        elapsed_s=elapsed_s,
    )
