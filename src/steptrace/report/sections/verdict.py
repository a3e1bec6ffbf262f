"""The verdict as the report's first section: what bounds the step, and what to do next.

One sentence with its figure (``hypotheses.verdict``), then the top findings, each with its
share and its next check, or the check's outcome once ``investigate`` ran it. Every
format shows it first; HTML gives it the id ``verdict``.
"""

from __future__ import annotations

from steptrace.hypotheses.verdict import Verdict
from steptrace.report.document import Block, Column, Paragraph, Section, Table
from steptrace.safe_text import one_line

KEY = "verdict"
_BASIS = {
    "step time": "step",
    "memory peak": "memory peak",
    "reserved memory": "reserved memory",
    "allocated bytes": "allocated bytes",
}


def verdict_section(verdict: Verdict) -> Section:
    """The sentence, then the top findings (or that none passed the thresholds)."""
    blocks: list[Block] = [Paragraph(verdict.sentence, "verdict")]
    if verdict.top:
        blocks.append(
            Table(
                (Column("top finding", "text"), Column("next check, or what it showed", "text")),
                tuple(
                    (
                        f"{t.rule}\n{t.level} · {100 * t.share:.0f}% of {_BASIS[t.basis]}",
                        one_line(f"Checked: {t.outcome}" if t.outcome else t.next_check),
                    )
                    for t in verdict.top
                ),
                caption="Each finding, with its evidence and caveats, is under Findings below.",
            )
        )
    else:
        blocks.append(Paragraph("No finding explains 0.5% of the step or more."))
    return Section(KEY, "Verdict", tuple(blocks))
