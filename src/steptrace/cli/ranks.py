"""The command line's multi-rank part: rank thresholds from ``NAME=VALUE``, and the job's
document from its rank traces. Imported only when several traces are given."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from steptrace.across.ranks.thresholds import RankThresholds

if TYPE_CHECKING:
    from steptrace.report.document import Document


def rank_thresholds(assignments: list[str]) -> RankThresholds:
    """``["straggler_floor_ms=2", ...]`` -> the rank thresholds; ``ValueError`` if wrong."""
    changes: dict[str, str] = {}
    for assignment in assignments:
        name, sep, value = assignment.partition("=")
        if not sep:
            raise ValueError(f"{assignment!r}: expected NAME=VALUE")
        changes[name.strip()] = value.strip()
    defaults = RankThresholds().to_dict()
    try:
        chosen = msgspec.convert(defaults | changes, RankThresholds, strict=False)
    except msgspec.ValidationError as error:
        raise ValueError(f"{error} (rank thresholds: {', '.join(defaults)})") from None
    for name, value in chosen.to_dict().items():
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name}={value}: must be a finite, non-negative number")
    return chosen


def job_document(
    files: list[Path], limits: RankThresholds, findings_only: bool
) -> tuple[Document, tuple[str, ...]]:
    """The job's report as a document, and its warnings (``TraceError`` for bad input)."""
    from steptrace.pipeline import analyze_ranks
    from steptrace.report.ranks_sections import ranks_document

    report = analyze_ranks(files, thresholds=limits)
    return ranks_document(report, findings_only=findings_only), report.warnings
