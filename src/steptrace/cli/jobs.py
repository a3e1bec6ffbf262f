"""The command line's multi-rank part: rank thresholds from ``NAME=VALUE``, where the rank
traces are, and the job's document from them. Imported only when several traces are given."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from steptrace.across.ranks.rank_thresholds import RankThresholds

if TYPE_CHECKING:
    from steptrace.report.document import Document


_SMALL_RANKS = 32
_SMALL_BYTES = 16 * 1024 * 1024


class JobDocument(NamedTuple):
    document: Document
    warnings: tuple[str, ...]  # every warning of the report, failures included
    failures: tuple[str, ...]  # the warnings of the rank traces not analyzed
    damaged: bool = False  # a rank's loading skipped events: a report from damaged input


def rank_thresholds(assignments: list[str]) -> RankThresholds:
    """``["straggler_floor_ms=2", ...]`` -> the rank thresholds; ``ValueError`` if wrong
    (an unknown name is answered with the rank thresholds' names)."""
    try:
        return RankThresholds().replace(assignments)
    except ValueError as error:
        raise ValueError(f"{error} (several traces: the rank thresholds apply)") from None


def usable_cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else (os.cpu_count() or 1)


def default_jobs(locations: list[str]) -> int:
    """The cores this process may use; 1 for a small local job (fewer than ``_SMALL_RANKS``
    files, under ``_SMALL_BYTES`` on disk), where starting processes costs more than the
    second core saves (about 0.7 s for a pool of two on this project's machine)."""
    from steptrace.trace.read.remote import is_url

    cores = usable_cores()
    if len(locations) >= _SMALL_RANKS or any(is_url(where) for where in locations):
        return cores
    try:
        size = sum(Path(where).stat().st_size for where in locations)
    except OSError:  # reading it says what is wrong, in one line
        return cores
    return 1 if size < _SMALL_BYTES else cores


def job_document(
    locations: list[str],
    limits: RankThresholds,
    findings_only: bool,
    jobs: int | None = None,
    scheduler: str | None = None,
    lanes: bool = False,
    critical_path: bool = False,
) -> JobDocument:
    """The job's report as a document, and its warnings (``TraceError`` for bad input);
    ``lanes``: with some ranks' lanes (the HTML report draws them); ``critical_path``: with
    the job's critical path."""
    from steptrace.pipeline import analyze_job
    from steptrace.report.ranks.sections import ranks_document

    if jobs is None:  # a LocalCluster: one worker per core
        jobs = usable_cores() if scheduler else default_jobs(locations)
    job = analyze_job(
        locations,
        thresholds=limits,
        jobs=jobs,
        scheduler=scheduler,
        lanes=lanes,
        critical_path=critical_path,
    )
    report = job.report
    failed = tuple(w for w in report.warnings if any(f.error in w for f in job.failures))
    document = ranks_document(report, findings_only=findings_only, lanes=job.lanes)
    return JobDocument(document, report.warnings, failed, job.damaged)
