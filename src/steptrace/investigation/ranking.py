"""The findings ranked once their checks ran: what was measured outranks what was read.

A check's A/B measures the share of the step its change removes, ``1 - B/A`` (the
profiler's own check: the share of a profiled step it adds), outside the profiler, with a
confidence interval; the trace only suggests a share, under the profiler. So, after the
checks:

1. supported findings come first, by the share their check measured (which becomes their
   severity, the trace's share kept in a caveat);
2. then the findings their checks did not decide (not run, not testable, outputs that
   differ, a measurement such as ``dominant-op``'s), by the trace's share, as before
   (those whose time lies off the critical path after the others);
3. refuted findings (the change made no detectable difference, or a slower step) last,
   with severity 0: the trace's share does not stay once a measurement contradicts it.

The memory findings (their severity a share of memory) keep their place after the time
findings, by the same three tiers. ``profiler-distortion`` comes after the other time
findings whatever its check says: it measures the profiler, not a time the user's step
could save (the step already runs without it), and must not push the planted problem down.
"""

from __future__ import annotations

from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.on_path import off_path
from steptrace.units import pct
from steptrace.validate.results import CheckResult, Timed

ABOUT_THE_PROFILER = frozenset({"profiler-distortion"})  # after the step's own findings


def ranked(
    findings: tuple[Finding, ...], checks: tuple[CheckResult, ...]
) -> tuple[tuple[Finding, ...], tuple[CheckResult, ...]]:
    """The findings re-ranked by their checks (``checks[k]`` is ``findings[k]``'s), and the
    checks in the same order."""
    pairs = [(_rescored(f, c), c) for f, c in zip(findings, checks, strict=True)]
    pairs.sort(
        key=lambda pair: (
            pair[0].basis != "step time",
            pair[0].rule in ABOUT_THE_PROFILER,
            _tier(pair[1]),
            _tier(pair[1]) != 0 and off_path(pair[0]),  # unmeasured and off the path: after
            -pair[0].severity,
        )
    )
    return tuple(f for f, _ in pairs), tuple(c for _, c in pairs)


def measured_share(check: CheckResult) -> float | None:
    """The share of A's step the change removed, when its check timed it (1 - B/A)."""
    comparison = check.comparison
    if not isinstance(comparison, Timed) or check.outcome != "supported":
        return None
    return max(0.0, 1 - comparison.ratio)


def _tier(check: CheckResult) -> int:
    if check.outcome == "supported":
        return 0
    return 2 if check.outcome == "not-supported" else 1


def _rescored(found: Finding, check: CheckResult) -> Finding:
    if check.outcome == "not-supported":
        return _with(found, 0.0, f"Refuted by its check, which now decides: {check.sentence}")
    share = measured_share(check)
    if share is None or found.basis != "step time":
        return found
    comparison = check.comparison
    assert isinstance(comparison, Timed)
    low, high = comparison.ci
    said = (
        f"Severity measured by its check, outside the profiler: {pct(share)} of the step "
        f"({pct(1 - high)}–{pct(1 - low)}, the ratio's {100 * comparison.estimate.confidence:g}% "
        f"CI); the trace alone suggested {pct(found.severity)}."
    )
    return _with(found, share, said)


def _with(found: Finding, severity: float, caveat: str) -> Finding:
    return finding(
        found.rule,
        severity,
        observation=found.observation,
        evidence=found.evidence,
        hypothesis=found.hypothesis,
        next_check=found.next_check,
        caveats=(*found.caveats, caveat),
        basis=found.basis,
    )
