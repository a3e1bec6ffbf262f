"""The command line's multi-rank part: rank thresholds from ``NAME=VALUE``, and the job's
document from its rank traces. Imported only when several traces are given."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from steptrace.across.ranks.thresholds import RankThresholds

if TYPE_CHECKING:
    from steptrace.report.document import Document


def rank_thresholds(assignments: list[str]) -> RankThresholds:
    """``["straggler_floor_ms=2", ...]`` -> the rank thresholds; ``ValueError`` if wrong
    (an unknown name is answered with the rank thresholds' names)."""
    try:
        return RankThresholds().replace(assignments)
    except ValueError as error:
        raise ValueError(f"{error} (several traces: the rank thresholds apply)") from None


def job_document(
    files: list[Path], limits: RankThresholds, findings_only: bool
) -> tuple[Document, tuple[str, ...]]:
    """The job's report as a document, and its warnings (``TraceError`` for bad input)."""
    from steptrace.pipeline import analyze_ranks
    from steptrace.report.ranks_sections import ranks_document

    report = analyze_ranks(files, thresholds=limits)
    return ranks_document(report, findings_only=findings_only), report.warnings
