"""GPU time by kind of work (GEMM, convolution, attention, ...) as a section.

The table lists every category with its busy ms per step (median [min–max]) and its share
of the steps' GPU busy time; the chart splits each step's busy time the same way. The
numbers are ``summary.gpu_categories`` and ``steps[].gpu.categories``
(``steptrace.analysis.time.categories``); nothing is computed here.
"""

from __future__ import annotations

from steptrace.report.document import Column, Paragraph, Section, Series, Stacked, Table
from steptrace.report.formats.cells import NOT_OBSERVED
from steptrace.report.model import Report

HEADING = "GPU time by kind of work (per step; concurrent work counted once)"
CAPTION = (
    "Kernels are sorted by name into GEMM, convolution, attention, elementwise, reduction, "
    "communication and other (the table of patterns: docs/analyze.md; add yours with "
    "--kernel-kinds FILE); copies and sets are copy. Where work overlaps, each instant "
    "counts once, for the first of: GEMM, convolution, attention, reduction, elementwise, "
    "other, communication, copy (so communication is its part not hidden by compute). The "
    "categories add up to GPU busy time; the share is of the steps' busy time together."
)


def categories(report: Report) -> Section:
    analysis = report.analysis
    summary = analysis.summary.gpu_categories
    if summary is None:
        return Section("categories", HEADING, (Paragraph(f"GPU: {NOT_OBSERVED}."),))
    observed = [s for s in analysis.steps if s.gpu is not None]
    names = [c.category for c in summary]
    chart = Stacked(
        tuple(s.name for s in observed),
        tuple(
            Series(name, tuple(s.gpu.categories[k].busy_ms for s in observed if s.gpu))
            for k, name in enumerate(names)
        ),
        tuple(s.wall_ms for s in observed),
        "ms",
        caption="Each bar is one step's wall time; the light grey rest is GPU idle time.",
    )
    table = Table(
        (
            Column("kind of work", "text"),
            Column("GPU busy ms per step", "ms"),
            Column("share of GPU busy", "share"),
        ),
        tuple((c.category, c.busy_ms, c.share_of_busy) for c in summary),
        caption=CAPTION,
    )
    return Section("categories", HEADING, (chart, table))
