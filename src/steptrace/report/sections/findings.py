"""The findings as a section: each one's level, observation with its evidence and where to
look, hypothesis, next controlled check and caveats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from steptrace import units
from steptrace.hypotheses.finding import NOISE_FLOOR, Figure, Finding
from steptrace.report.document import Block, Column, Paragraph, Section, Table
from steptrace.report.formats.cells import number
from steptrace.report.model import Report
from steptrace.safe_text import one_line

TRACE_CLOCK = "from the trace start"
RANKS_CLOCK = "on the aligned clock, from the clocks' origin"
RANKS_TITLE = (
    "Possible readings of these rank traces, each with the controlled check that can "
    "confirm or refute it. No duration or speed-up is promised."
)
FINDINGS_TITLE = (
    "Possible readings of this trace, each with the controlled check that can confirm or "
    "refute it. No duration or speed-up is promised."
)


def findings(report: Report) -> Section:
    checked = {c.rule: c.outcome.replace("-", " ") for c in report.checks}
    return findings_section(report.findings, report.thresholds.to_dict(), checked=checked)


def findings_section(
    found: Sequence[Finding],
    thresholds: Mapping[str, Any],
    *,
    ranks: bool = False,
    checked: Mapping[str, str] | None = None,
) -> Section:
    """The findings table (one trace's, or a job's cross-rank ones), or the thresholds that
    none passed; ``ranks``: a job's findings (their times are on the aligned clock);
    ``checked``: each rule's check outcome, when ``investigate`` ran them."""
    title, clock = (RANKS_TITLE, RANKS_CLOCK) if ranks else (FINDINGS_TITLE, TRACE_CLOCK)
    heading = "Findings"
    if not found:
        limits = ", ".join(f"{k}={v}" for k, v in thresholds.items())
        return Section(
            "findings",
            heading,
            (Paragraph(title), Paragraph(f"No finding above thresholds ({limits}).")),
        )
    major = [f for f in found if not f.minor]
    minor = [f for f in found if f.minor]
    blocks: list[Block] = [Paragraph(title)]
    if major:
        table = Table(
            (
                Column("finding", "text"),
                Column("observation and evidence", "text"),
                Column("hypothesis", "text"),
                Column("next controlled check", "text"),
                Column("caveats", "text"),
            ),
            tuple(_finding_row(f, clock, (checked or {}).get(f.rule)) for f in major),
        )
        blocks.append(table)
    else:
        blocks.append(Paragraph("No finding explains 0.5% of the step or more."))
    if minor:
        blocks.append(_minor(minor))
    return Section("findings", heading, tuple(blocks))


def _minor(found: Sequence[Finding]) -> Table:
    """The findings under the noise floor, one short row each."""
    return Table(
        (Column("minor finding", "text"), Column("observation", "text")),
        tuple(
            (f"{f.rule}\n{100 * f.severity:.2g}% of step", one_line(f.observation)) for f in found
        ),
        caption=(
            f"Minor: each explains under {100 * NOISE_FLOOR:.1f}% of the step, below what "
            "the trace can tell from noise; listed for completeness, out of the verdict."
        ),
    )


# what a severity is a share of, in the findings table
_BASIS = {
    "step time": "step",
    "memory peak": "memory peak",
    "reserved memory": "reserved memory",
    "allocated bytes": "allocated bytes",
}


def _finding_row(found: Finding, clock: str, outcome: str | None) -> tuple[str, ...]:
    """Each part on its own line; a part's own text (names from the trace in it) on one."""
    check = one_line(found.next_check) + (f"\nChecked: {outcome} (see Checks)" if outcome else "")
    return (
        f"{found.level} · {100 * found.severity:.0f}% of {_BASIS[found.basis]}\n{found.rule}",
        f"{one_line(found.observation)}\n{one_line(evidence_line(found, clock))}",
        one_line(found.hypothesis),
        check,
        one_line(" ".join(found.caveats)),
    )


def evidence_line(found: Finding, clock: str = TRACE_CLOCK) -> str:
    """The evidence in one line; where to look comes last."""
    parts = [f"{f.name}={figure_text(f)}" for f in found.evidence.figures if _shown(f)]
    place = found.evidence.where
    names = place.steps
    span = f"{names[0]}–{names[-1]}" if len(names) > 1 else (names[0] if names else "")
    look = f"look at {span} ({place.time_us[0]:.0f}–{place.time_us[1]:.0f} µs {clock}"
    if place.thread:
        look += f", {place.thread}"
    if place.streams:
        look += f", streams {', '.join(map(str, place.streams))}"
    return "; ".join([*parts, look + ")"])


def _shown(figure: Figure) -> bool:
    return figure.value is not None and figure.value != ()


def figure_text(figure: Figure) -> str:
    """One figure's value in its unit; lists of names shortened to the first."""
    value = figure.value
    if isinstance(value, tuple):
        if figure.unit == "names":
            first = units.short(str(value[0]), 60)
            return first if len(value) == 1 else f"{first} (+{len(value) - 1} more)"
        return ", ".join(str(v) for v in value)
    if isinstance(value, str) or value is None:
        return units.short(str(value), 80)
    return number(value, figure.unit)
