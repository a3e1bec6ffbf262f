"""The findings' checks, run by ``steptrace investigate``, as sections: a summary of each
hypothesis' outcome, then each A/B with its correctness, raw samples and verdict.

Nothing here imports torch: the results are read, not made.
"""

from __future__ import annotations

from steptrace.report.document import Block, Column, Paragraph, Section, Table
from steptrace.report.model import Report
from steptrace.report.sections.checks import comparison_section
from steptrace.report.sections.findings import figure_text
from steptrace.validate.results import CheckResult

OUTCOMES = {
    "supported": "supported",
    "not-supported": "not supported",
    "outputs-differ": "outputs differ",
    "not-testable": "not testable here",
    "measured": "measured (no A/B)",
}
UNSHOWN = ("script",)  # in the JSON, too long for a table cell
INTRO = (
    "Each finding's controlled check, run outside the profiler from the same starting "
    "state (deep copies, same RNG), correctness first. Supported means the change the "
    "hypothesis points to measurably changes the step at this noise; it is never a "
    "confirmation from the trace alone, and a speed-up measured here holds for this "
    "workload, on this machine, at this size."
)


def checks(report: Report) -> tuple[Section, ...]:
    """The summary section, then one section per check that ran an A/B."""
    if not report.checks:
        return ()
    rows = tuple(_row(c) for c in report.checks)
    table = Table(
        (
            Column("finding", "text"),
            Column("check", "text"),
            Column("outcome", "text"),
            Column("what was measured, or why not", "text"),
            Column("time s (allowed)", "text"),
        ),
        rows,
    )
    blocks: list[Block] = [Paragraph(INTRO), table]
    blocks += [
        Paragraph(f"{c.rule}, by hand: {c.instead}")
        for c in report.checks
        if c.outcome == "not-testable" and c.instead
    ]
    detail = tuple(
        comparison_section(f"{c.rule} — {c.change}", c.comparison)
        for c in report.checks
        if c.comparison is not None
    )
    return (Section("checks", "Checks", tuple(blocks)), *detail)


def outcome_text(result: CheckResult) -> str:
    return OUTCOMES[result.outcome]


def _row(result: CheckResult) -> tuple[str, ...]:
    said = result.sentence
    shown = [f for f in result.measured if f.name not in UNSHOWN]
    if shown:
        said += " " + "; ".join(f"{f.name}={figure_text(f)}" for f in shown)
    timing = (
        "—" if result.elapsed_s is None else f"{result.elapsed_s:.1f} ({result.budget_s or 0:.0f})"
    )
    return (result.rule, f"{result.check}: {result.change}", outcome_text(result), said, timing)
