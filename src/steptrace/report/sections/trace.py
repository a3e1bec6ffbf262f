"""One trace's report as sections, built once for every format.

Reading order: the verdict (what bounds the step, and what to check next), the question,
notes on what the trace can and cannot say, step times, the
steps on the timeline (HTML draws it; the findings link to their places on it), the labels
of each step, the GPU, memory, the GPU's time by kind of work, CPU operators, kernels, the
roofline per operator, copies, the findings, the checks run on them, warnings, and how to
open the trace on a timeline.
``findings_only`` keeps the verdict, the question, the findings and the warnings.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from steptrace.report.document import Document, Paragraph, Section
from steptrace.report.model import FindingsReport, Report

if TYPE_CHECKING:
    from steptrace.analysis.timeline.model import Lanes
    from steptrace.validate.results import Comparison


@dataclass(frozen=True)
class View:
    """What to show beside the report itself."""

    findings_only: bool = False
    comparisons: tuple[tuple[str, Comparison], ...] = ()  # A/B checks, titled
    trace_name: str | None = None  # the trace as the reader will find it (default: its path)
    notes: tuple[str, ...] = ()  # about this run, from whoever made it (the demo: its plants)
    totals: bool = False  # operator and kernel tables: totals over the trace, not per step
    lanes: Lanes | None = None  # the steps' lanes, drawn by HTML (``analysis.lanes``)


def report_document(report: Report, view: View | None = None) -> Document:
    """One report's document: its title, the data JSON writes, and its sections on demand."""
    view = view or View()
    data = FindingsReport.of(report) if view.findings_only else report
    return Document(title(report), data, functools.partial(sections, report, view))


def title(report: Report) -> str:
    trace = report.analysis.trace
    if trace.rank is None:
        return trace.path
    of = f" of {trace.world_size}" if trace.world_size is not None else ""
    return f"{trace.path} (rank {trace.rank}{of})"


def about(notes: tuple[str, ...]) -> tuple[Section, ...]:
    """What whoever made this report says about the run (the demo: its planted problems)."""
    if not notes:
        return ()
    return (Section("about", "About this run", tuple(Paragraph(n) for n in notes)),)


def sections(report: Report, view: View) -> tuple[Section, ...]:
    """The sections of one report, in reading order (imported here: JSON needs none)."""
    from steptrace.report.sections.categories import categories
    from steptrace.report.sections.checks import comparison_section
    from steptrace.report.sections.context import notes, question, timeline, warnings
    from steptrace.report.sections.critical import critical_path
    from steptrace.report.sections.figures import copies, gpu, kernels, labels, operators, steps
    from steptrace.report.sections.findings import findings
    from steptrace.report.sections.memory import memory
    from steptrace.report.sections.outcomes import checks as outcomes
    from steptrace.report.sections.roofline import roofline
    from steptrace.report.sections.timeline import finding_jumps, timeline_section
    from steptrace.report.sections.verdict import verdict_section

    checks = (
        *outcomes(report),
        *(comparison_section(n, c) for n, c in view.comparisons),
        *about(view.notes),
    )
    first = verdict_section(report.verdict)
    if view.findings_only:
        return (first, question(report), findings(report), *checks, *warnings(report))
    drawn = timeline_section(report, view.lanes)
    jumps = finding_jumps(report, view.lanes) if drawn else None
    found = findings(report)
    if jumps is not None:
        found = msgspec.structs.replace(found, blocks=(*found.blocks, jumps))
    return (
        first,
        question(report),
        notes(report),
        steps(report),
        *((drawn,) if drawn else ()),
        labels(report),
        gpu(report),
        memory(report),
        categories(report),
        *critical_path(report),
        operators(report, view.totals),
        kernels(report, view.totals),
        roofline(report),
        copies(report),
        found,
        *checks,
        *warnings(report),
        timeline(view.trace_name or report.analysis.trace.path),
    )
