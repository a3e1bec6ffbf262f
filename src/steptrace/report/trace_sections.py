"""One trace's report as sections, built once for every format.

Reading order: the question, notes on what the trace can and cannot say, step times, the
labels of each step, the GPU, CPU operators, kernels, copies, the findings, any A/B
checks run on them, warnings, and how to open the trace on a timeline. ``findings_only``
keeps the question, the findings and the warnings.
"""

from __future__ import annotations

import msgspec

from steptrace.report.check_sections import ComparisonLike, comparison_section
from steptrace.report.context_sections import notes, question, timeline, title, warnings
from steptrace.report.document import Document
from steptrace.report.figure_sections import copies, gpu, kernels, labels, operators, steps
from steptrace.report.finding_sections import findings
from steptrace.report.model import Report


class View(msgspec.Struct, frozen=True, kw_only=True):
    """What to show beside the report itself."""

    findings_only: bool = False
    comparisons: tuple[tuple[str, ComparisonLike], ...] = ()  # A/B checks, titled
    trace_name: str | None = None  # the trace as the reader will find it (default: its path)


def report_document(report: Report, view: View | None = None) -> Document:
    """The sections of one report, in reading order, and the data its JSON form writes."""
    view = view or View()
    checks = tuple(comparison_section(name, c) for name, c in view.comparisons)
    if view.findings_only:
        sections = (question(report), findings(report), *checks, *warnings(report))
        return Document(title(report), sections, findings_data(report))
    sections = (
        question(report),
        notes(report),
        steps(report),
        labels(report),
        gpu(report),
        operators(report),
        kernels(report),
        copies(report),
        findings(report),
        *checks,
        *warnings(report),
        timeline(view.trace_name or report.analysis.trace.path),
    )
    return Document(title(report), sections, report)


def findings_data(report: Report) -> dict[str, object]:
    """What ``--findings-only --format json`` keeps."""
    return {
        "schema": report.schema,
        "scenario": report.scenario,
        "capture": report.capture,
        "trace": report.analysis.trace,
        "findings": report.findings,
        "thresholds": report.thresholds,
        "warnings": report.warnings,
    }
