"""The pipeline: load -> measure -> find -> ``Report``, one stage after the other.

    report = steptrace.analyze("trace.json.gz")      # load, measure, find
    report.analysis.summary.wall_ms.median            # ms per step
    report.findings[0].next_check                     # what to test next

Every stage is pure except loading: ``load_trace`` reads the file, ``read_sidecar`` the
scenario beside it; ``measure`` (analysis) and ``find`` (hypotheses) only compute. Saved
reports are read back for ``diff``, which compares two sides however they were given.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import msgspec

from steptrace.across.ranks.rank_thresholds import RankThresholds
from steptrace.analysis.compose import compute
from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.efficiency.hardware import DevicePeaks, measured_peaks
from steptrace.analysis.efficiency.kernel_kinds import DEFAULT, KernelKinds
from steptrace.analysis.loader.log import loader_log_of
from steptrace.analysis.measure import analysis_of
from steptrace.analysis.registry import fields_for, figures
from steptrace.analysis.time.steps import too_many_steps
from steptrace.analysis.timeline.model import Lanes
from steptrace.errors import TraceError
from steptrace.hypotheses import Case, complete_steps, find
from steptrace.hypotheses.answers import answered_first
from steptrace.hypotheses.thresholds import Thresholds
from steptrace.hypotheses.variation import step_variation
from steptrace.hypotheses.verdict import verdict_of
from steptrace.report.model import FINDINGS_SCHEMA, SCHEMA, RanksReport, Report
from steptrace.scenario import decode_record, read_sidecar, sidecar_path, throughput
from steptrace.tables import Tables
from steptrace.trace.load import read_trace
from steptrace.trace.nesting import NestedTooDeepError
from steptrace.trace.read.parallel import WorkerPool
from steptrace.trace.read.remote import is_url, read_sidecar_url
from steptrace.trace.read.source import GZIP_MAGIC, FileText, decompress, file_size, read_file
from steptrace.trace.table import Trace

if TYPE_CHECKING:
    from steptrace.across.diff import TraceDiff
    from steptrace.across.ranks.figures import RankLanes
    from steptrace.across.ranks.reading.work import RankFailure

_PEEK_BYTES = 64 * 1024
# A saved report opens with its schema (msgspec writes struct fields in order); a list of
# them is what ``analyze --format json`` writes for several traces.
_SCHEMA_FIRST = re.compile(rb'\A\s*(\[\s*)?\{\s*"schema"\s*:\s*"([^"\\]*)"')
_Saved = TypeVar("_Saved")


def analyze(
    path: str | Path,
    *,
    thresholds: Thresholds | None = None,
    workers: int = 1,
    kinds: KernelKinds | None = None,
    peaks: DevicePeaks | None = None,
    critical_path: bool = False,
) -> Report:
    """Load a trace file and its scenario, measure it, find what its figures suggest.

    ``path`` may be an fsspec URL (``s3://...``, ``file://...``: ``trace.read.remote``);
    ``workers`` > 1 decodes a large file in that many processes. ``kinds``: the table of
    kernel kinds (``analysis.kernel_kinds``, with a user's patterns); ``peaks``: the
    device's measured peaks for the roofline (``analysis.hardware``; else those measured
    at capture, else the datasheet's of a known device); ``critical_path``: also what bounds
    each step (``analysis.critical_path``)."""
    checked = analyze_checked(
        path,
        thresholds=thresholds,
        workers=workers,
        tables=Tables(kinds, peaks, critical_path),
    )
    return checked.found.report


class Analyzed(NamedTuple):
    """A report, and the steps' lanes when they were asked for (HTML draws them)."""

    report: Report
    lanes: Lanes | None = None


class Checked(NamedTuple):
    """``Analyzed``, and whether loading skipped damaged input (events it could not use,
    bytes after the gzip data: the report's warnings say which): the command line's exit
    code 1."""

    found: Analyzed
    damaged: bool


def analyze_source(
    path: str | Path,
    *,
    thresholds: Thresholds | None = None,
    workers: int = 1,
    progress: bool | None = None,
    text: FileText | None = None,
    lanes: bool = False,
    kinds: KernelKinds | None = None,
    peaks: DevicePeaks | None = None,
) -> Analyzed:
    """``analyze`` for the command line: ``text`` is the file's content when it was read
    already (``trace.source.ReadAhead``), ``progress`` shows the loading, ``lanes`` also
    computes the steps' lanes (``analysis.lanes``) for the HTML report."""
    checked = analyze_checked(
        path,
        thresholds=thresholds,
        workers=workers,
        progress=progress,
        text=text,
        lanes=lanes,
        tables=Tables(kinds, peaks),
    )
    return checked.found


def analyze_checked(
    path: str | Path,
    *,
    thresholds: Thresholds | None = None,
    workers: int = 1,
    progress: bool | None = None,
    text: FileText | None = None,
    lanes: bool = False,
    tables: Tables | None = None,
    pool: WorkerPool | None = None,
) -> Checked:
    """``analyze_source``, and whether its input was damaged (``Checked``); ``tables``: the
    user's kernel kinds and peaks; ``pool``: worker processes started already, which
    decode the file's events (``trace.load.read_trace``)."""
    tables = tables or Tables()
    chosen = figures() + (figures(["lanes"]) if lanes else ())
    chosen += figures(["critical_path"]) if tables.critical_path else ()
    trace = read_trace(
        path, fields_for(chosen), progress=progress, text=text, workers=workers, pool=pool
    )
    del text  # the analysis needs the columns, not the file's text: let it go
    if isinstance(path, str) and is_url(path):
        sidecar, unreadable = read_sidecar_url(path)
    else:
        sidecar, unreadable = read_sidecar(trace.info.path)
    try:
        found = _analyzed(trace, sidecar, unreadable, thresholds, chosen, tables)
    except NestedTooDeepError as error:
        raise TraceError(f"{trace.info.url or trace.info.path}: {error}") from None
    return Checked(found, bool(trace.info.events_skipped or trace.info.bytes_ignored))


def lanes_of(path: str | Path) -> Lanes:
    """The steps' lanes of a trace file (what the HTML report draws), alone."""
    chosen = figures(["lanes"])
    trace = read_trace(path, fields_for(chosen), progress=False)
    lanes: Lanes = compute(TraceContext(trace), chosen)["lanes"]
    return lanes


def analyze_trace(trace: Trace, *, thresholds: Thresholds | None = None) -> Report:
    """The report of a loaded trace, with the scenario the trace itself carries. No I/O."""
    return _analyzed(trace, None, [], thresholds, figures(), Tables()).report


def _analyzed(
    trace: Trace,
    sidecar: object | None,
    unreadable: list[str],
    thresholds: Thresholds | None,
    chosen: tuple[FigureSpec[Any], ...],
    tables: Tables,
) -> Analyzed:
    name = sidecar_path(trace.info.path).name
    record, warnings = decode_record(sidecar, trace.info.scenario_block, name)
    scenario = record.scenario if record else None
    capture = record.capture if record else None
    measured = measured_peaks(capture.peaks if capture else None)
    context = TraceContext(
        trace,
        partial_step=capture.partial_step if capture else None,
        kinds=tables.kinds or DEFAULT,
        peaks=tables.peaks.over(measured) if tables.peaks else measured,
        inventory=capture.inventory if capture else None,
        what_if=tables.what_if,
        loader=loader_log_of(trace.info, capture.loader_spans if capture else None),
    )
    if refused := too_many_steps(context.steps.windows, str(trace.info.url or trace.info.path)):
        raise TraceError(refused)
    computed = compute(context, chosen)
    analysis = analysis_of(context, computed)
    limits = thresholds or Thresholds()
    varied = step_variation(analysis, limits)
    case = Case(analysis, scenario, capture)
    found = find(case, limits)
    verdict = verdict_of(complete_steps(case), found, limits)
    found = answered_first(found, verdict.answered_by)
    report = Report(
        verdict=verdict,
        scenario=scenario,
        capture=msgspec.structs.replace(capture, inventory=None) if capture else None,
        analysis=analysis,
        throughput=throughput(scenario, analysis.summary.wall_ms.median),
        findings=found,
        thresholds=limits,
        warnings=tuple(unreadable + warnings + ([varied] if varied else [])),
    )
    return Analyzed(report, computed.get("lanes"))


def diff(before: str | Path, after: str | Path) -> TraceDiff:
    """Where time moved between two traces or saved reports, named by the paths given."""
    return diff_checked(before, after).found


class DiffChecked(NamedTuple):
    """A diff, and the sides whose trace was damaged (loading skipped input: the command
    line's exit code 1), each with the warnings that say how."""

    found: TraceDiff
    damaged: tuple[tuple[str, tuple[str, ...]], ...]


def diff_checked(before: str | Path, after: str | Path) -> DiffChecked:
    """``diff``, and which side's trace was damaged."""
    from steptrace.across.diff import diff_analyses  # only here: analyze starts sooner

    (old, old_damaged), (new, new_damaged) = _read_checked(before), _read_checked(after)
    result = diff_analyses(old.analysis, new.analysis, scenarios=(old.scenario, new.scenario))
    damaged = tuple(
        (str(path), report.analysis.trace.warnings)
        for path, report, hurt in ((before, old, old_damaged), (after, new, new_damaged))
        if hurt
    )
    return DiffChecked(
        msgspec.structs.replace(result, before=str(before), after=str(after)), damaged
    )


def read_report(path: str | Path) -> Report:
    """A trace analyzed, or a report saved by ``analyze --format json`` read back."""
    return _read_checked(path)[0]


def _read_checked(path: str | Path) -> tuple[Report, bool]:
    """``read_report``, and whether the trace read was damaged (a saved report: never)."""
    path = Path(path)
    schema = _schema_of(path)
    if schema is None:
        checked = analyze_checked(path)
        return checked.found.report, checked.damaged
    if schema == SCHEMA:
        return _decode(path, Report), False
    if schema == FINDINGS_SCHEMA:
        raise TraceError(
            f"{path}: holds only findings (--findings-only): a diff needs the whole report"
        )
    raise TraceError(
        f"{path}: schema {schema!r} is not {SCHEMA!r}: steptrace reads traces and reports "
        "written by `steptrace analyze --format json`"
    )


def is_saved_report(path: str | Path) -> bool:
    """Does ``path`` hold something steptrace saved (a report, findings), not a trace?"""
    return _schema_of(Path(path)) is not None


def _schema_of(path: Path) -> str | None:
    """The top-level ``schema`` of a saved report; None for anything else (a trace)."""
    found = _SCHEMA_FIRST.match(_head(path))
    if found is None:
        return None
    if found.group(1):
        raise TraceError(
            f"{path}: holds a list of reports; diff compares one with one "
            "(analyze each trace on its own)"
        )
    return found.group(2).decode("utf-8", errors="replace")


def _head(path: Path) -> bytes:
    """The first bytes of the file, gunzipped; empty when unreadable (load_trace says why)."""
    file_size(path)  # a named pipe or a device is refused here, before it is opened
    try:
        with path.open("rb") as handle:
            head = handle.read(_PEEK_BYTES)
            if not head.startswith(GZIP_MAGIC):
                return head
            handle.seek(0)
            with gzip.GzipFile(fileobj=handle) as unzipped:
                return unzipped.read(_PEEK_BYTES)
    except (OSError, EOFError, zlib.error):
        return b""


def _decode(path: Path, kind: type[_Saved]) -> _Saved:
    raw = read_file(path)
    try:
        return msgspec.json.decode(decompress(raw, str(path)), type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        problem = " ".join(str(exc).split())
        raise TraceError(f"{path}: not a complete steptrace report ({problem})") from None


def analyze_ranks(
    paths: Sequence[str | Path],
    *,
    thresholds: RankThresholds | None = None,
    progress: bool | None = None,
    jobs: int = 1,
    scheduler: str | None = None,
) -> RanksReport:
    """The rank traces of one job, analyzed together: each loaded and measured once, then
    collectives matched, clocks aligned, wait split from transfer, stragglers found.

    ``paths``: files, or fsspec URLs (``s3://...``) as strings. ``jobs`` > 1 measures the
    ranks in that many local processes; ``scheduler`` on a Dask cluster (``"local"``: a
    ``LocalCluster`` of ``jobs`` workers; else a scheduler's address). The report is the
    same on every one. A rank trace that cannot be analyzed is a warning in the report
    when at least two ranks remain, else a ``TraceError``.
    """
    return analyze_job(
        paths, thresholds=thresholds, progress=progress, jobs=jobs, scheduler=scheduler
    ).report


class Job(NamedTuple):
    """A job's report, the rank traces that could not be analyzed (also warned of in the
    report), and some ranks' lanes when they were asked for (HTML draws them)."""

    report: RanksReport
    failures: tuple[RankFailure, ...]
    lanes: tuple[RankLanes, ...] = ()
    damaged: bool = False  # a rank's loading skipped events (its warnings say which)


def analyze_job(
    paths: Sequence[str | Path],
    *,
    thresholds: RankThresholds | None = None,
    progress: bool | None = None,
    jobs: int = 1,
    scheduler: str | None = None,
    lanes: bool = False,
    critical_path: bool = False,
) -> Job:
    """``analyze_ranks`` for the command line: also the ranks that failed, and with
    ``lanes`` the lanes of some ranks' first steps (the stragglers' first);
    ``critical_path``: the job's path per step (``across.ranks.job_path``)."""
    from steptrace.across.ranks.analyze import analyze_ranks_data
    from steptrace.across.ranks.matrix import DEFAULT_PARTS, Part
    from steptrace.across.ranks.reading.discover import identify
    from steptrace.across.ranks.reading.executors import executor
    from steptrace.across.ranks.reading.gather import failure_warnings, gather, kept
    from steptrace.across.ranks.reading.progress_bar import ranks_progress
    from steptrace.hypotheses.rules.job import rank_findings

    limits = thresholds or RankThresholds()
    locations = [p if isinstance(p, str) else str(p) for p in paths]
    parts: tuple[Part, ...] = (*DEFAULT_PARTS, "lanes") if lanes else DEFAULT_PARTS
    parts += ("critical",) if critical_path else ()
    with ranks_progress(len(locations), progress) as done:
        gathered = gather(locations, executor(jobs, scheduler), done, parts)
    measured = kept(gathered)
    identified = identify([m.origin for m in measured])
    identified = msgspec.structs.replace(
        identified, warnings=(*failure_warnings(gathered), *identified.warnings)
    )
    analysis = analyze_ranks_data(measured, identified, limits)
    report = RanksReport.of(analysis, rank_findings(analysis, limits), limits)
    damaged = any(m.damaged for m in measured)
    return Job(report, gathered.failures, analysis.lanes, damaged)
