"""``steptrace analyze``: traces measured on the timeline, their findings as hypotheses; several
traces that say they are one job's ranks, one report across them."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

from steptrace.cli import printing
from steptrace.cli.app import app, one_blas_thread
from steptrace.cli.critical import critical_options, parse_what_if
from steptrace.cli.options import (
    ranks_options,
    report_options,
    switch,
)
from steptrace.cli.tables import read_kinds, read_peaks, table_options
from steptrace.errors import TraceError

if TYPE_CHECKING:
    from steptrace.pipeline import Analyzed
    from steptrace.tables import Tables
    from steptrace.trace.read.parallel import WorkerPool


Grouping = Literal["said", "job", "each"]  # several traces: one job when said, always, never


@app.command(short_help="Measure traces on the timeline; findings as hypotheses.")
@click.argument("traces", nargs=-1, required=True)
@report_options
@click.option(
    "--threshold",
    multiple=True,
    metavar="NAME=VALUE",
    help="Override a finding threshold (repeatable; one job's traces: a rank threshold).",
)
@switch("--per-rank", "Several traces: one report per trace, even of one job's ranks.")
@switch(
    "--as-job",
    "Several traces: read them as the ranks of one job, even without rank information.",
)
@ranks_options
@table_options
@critical_options
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    envvar="STEPTRACE_MAX_BYTES",
    help="Refuse a trace whose text passes this many bytes (default: the memory available; "
    "a text read whole: a quarter of it). Env STEPTRACE_MAX_BYTES.",
)
def analyze(
    traces: tuple[str, ...],
    output_format: str,
    top: int,
    findings_only: bool,
    totals: bool,
    threshold: tuple[str, ...],
    per_rank: bool,
    as_job: bool,
    jobs: int | None,
    scheduler: str | None,
    peaks_file: Path | None,
    kinds_file: Path | None,
    critical_path: bool,
    what_if: tuple[str, ...],
    max_bytes: int | None,
) -> None:
    """Measure traces on the timeline and turn what they show into testable hypotheses.

    TRACES are trace files (.json, .json.gz) or folders of them. Several traces that say
    they are the ranks of one job (each a distinct rank in its distributedInfo, one world
    size and backend) get one report across the ranks (stragglers, clocks, collectives),
    unless --per-rank; other traces one report each, unless --as-job. A job's ranks are
    measured in --jobs processes, or on a Dask cluster (--scheduler). Traces and folders
    may be fsspec URLs (s3://..., gs://..., file://...). In a folder, files that are not
    traces are skipped.
    """
    from steptrace.tables import Tables
    from steptrace.trace.read.budget import max_bytes_set

    if per_rank and as_job:
        raise click.UsageError("--per-rank and --as-job exclude each other: give one")
    with one_blas_thread(os.environ):  # before numpy is imported
        try:
            targets = parse_what_if(what_if)
            tables = Tables(
                read_kinds(kinds_file),
                read_peaks(peaks_file),
                critical_path or bool(targets),
                targets,
            )
        except TraceError as error:
            printing.fail(str(error))
        with max_bytes_set(max_bytes):  # read where each trace loads, worker processes too
            _analyze(
                traces,
                output_format,
                top,
                findings_only,
                totals,
                threshold,
                "each" if per_rank else "job" if as_job else "said",
                jobs,
                scheduler,
                tables,
            )


def _analyze(
    traces: tuple[str, ...],
    output_format: str,
    top: int,
    findings_only: bool,
    totals: bool,
    threshold: tuple[str, ...],
    grouping: Grouping,
    jobs: int | None,
    scheduler: str | None,
    tables: Tables,
) -> None:
    """``analyze``'s work (see its docstring); ``grouping``: several traces as one job when
    they say so, as one job (--as-job) or each on its own (--per-rank); ``tables``: the
    user's kinds and peaks."""
    from steptrace.cli.trace_args import split_urls, trace_inputs, url_inputs
    from steptrace.trace.read.source import BackgroundRead, ReadAhead

    try:
        local, urls = split_urls(traces)
        files, skipped = trace_inputs(local) if local or not urls else ([], [])
        remote, skipped_remote = url_inputs(urls)
    except TraceError as error:
        printing.fail(str(error))
    for where, why in [*skipped, *skipped_remote]:
        printing.warn(f"{where}: skipped, {why}")
    locations = [str(f) for f in files] + remote
    one_job = len(locations) > 1 and grouping != "each"
    one_job = one_job and (grouping == "job" or _one_job_said(locations))
    source = click.get_current_context().get_parameter_source("scheduler")
    if scheduler and not one_job and source == click.core.ParameterSource.COMMANDLINE:
        printing.warn(
            "--scheduler applies to the ranks of one job (several traces that say so, or "
            "--as-job): the traces are measured here"
        )
    if one_job and (tables.peaks or tables.kinds):
        printing.warn(
            "--peaks and --kernel-kinds apply to one trace's report (--per-rank), not a job's"
        )
    if one_job and tables.what_if:
        printing.warn("--what-if applies to one trace's report (--per-rank), not a job's")
    if one_job:
        _analyze_ranks(
            locations,
            output_format,
            findings_only,
            list(threshold),
            jobs,
            scheduler,
            tables.critical_path,
        )
        return
    from steptrace.cli.jobs import usable_cores

    workers = jobs or usable_cores()
    with _first_pool(files, workers) as pool:  # forked before any reading thread starts
        texts = ReadAhead(files)  # reading starts now, beside the imports
        from steptrace.pipeline import analyze_checked

        limits = _thresholds(list(threshold))
        reports: list[Analyzed] = []
        failures, damaged = [], False
        given: Iterable[tuple[str | Path, BackgroundRead | None]] = chain(
            texts, ((url, None) for url in remote)
        )  # lazy: two texts held at most
        for index, (where, reading) in enumerate(given):
            try:  # one trace that cannot be analyzed costs only its own report
                text = reading.take() if reading is not None else None
                checked = analyze_checked(
                    where,
                    thresholds=limits,
                    text=text,
                    lanes=output_format == "html",
                    workers=workers,
                    tables=tables,
                    pool=pool if index == 0 else None,
                )
                reports.append(checked.found)
                damaged = damaged or checked.damaged
            except TraceError as error:
                failures.append(str(error))
            finally:
                if index == 0 and pool is not None:
                    pool.close()  # its processes end: the next files start their own
    if not reports:
        more = f" (and {len(failures) - 1} more traces failed)" if len(failures) > 1 else ""
        printing.fail(f"{failures[0]}{more}")
    for failure in failures:
        printing.warn(f"{failure}; the other traces' reports are written")
    reports.sort(key=lambda r: printing.order_of(r.report))
    printing.reports(reports, output_format, findings_only=findings_only, totals=totals, top=top)
    if failures or damaged:  # a report written, from damaged input or beside a failure
        raise SystemExit(1)


@contextmanager
def _first_pool(files: list[Path], workers: int) -> Iterator[WorkerPool | None]:
    """The worker processes that decode the first file's events, when its text is large
    enough (``source.decodes_in_parallel``): forked now, before its reading thread starts
    and the analysis is imported, from a process that holds only what decoding needs,
    they are ready when its text is. None otherwise."""
    from steptrace.trace.read.source import decodes_in_parallel

    if workers < 2 or not files or not decodes_in_parallel(files[0]):
        yield None
        return
    from steptrace.trace.read.parallel import worker_pool

    with worker_pool(workers) as pool:
        yield pool


def _one_job_said(locations: list[str]) -> bool:
    """Whether the traces say they are the ranks of one job (each its own rank, one world
    size and backend); if not, a note says why and what ``--as-job`` does."""
    from steptrace.across.ranks.reading.said import not_one_job, said_by

    why = not_one_job(said_by(locations))
    if why is not None:
        printing.note(f"{why}: one report per trace; --as-job reads them as the ranks of one job")
    return why is None


def _analyze_ranks(
    locations: list[str],
    output_format: str,
    findings_only: bool,
    assignments: list[str],
    jobs: int | None,
    scheduler: str | None,
    critical_path: bool = False,
) -> None:
    """One report of the job's rank traces (the ranks code is imported only here);
    ``critical_path``: with the job's critical path per step.

    Rank traces that could not be analyzed are each one warning line, always on stderr;
    the report of the others is written and the exit code is 1 (2 when too few remain)."""
    from steptrace.cli.jobs import job_document, rank_thresholds

    try:
        found = job_document(
            locations,
            rank_thresholds(assignments),
            findings_only,
            jobs,
            scheduler,
            lanes=output_format == "html",
            critical_path=critical_path,
        )
    except ValueError as error:
        printing.fail(f"--threshold: {error}")
    except TraceError as error:
        hint = "; --per-rank gives one report per trace" if "not one job" in str(error) else ""
        printing.fail(f"{error}{hint}")
    for warning in found.warnings:
        if output_format != "text" or warning in found.failures:  # text: in its body
            printing.warn(warning)
    printing.write([found.document], output_format)
    if found.failures or found.damaged:
        raise SystemExit(1)


def _thresholds(assignments: list[str]) -> Any:
    import msgspec

    from steptrace.hypotheses.thresholds import Thresholds

    try:
        return Thresholds().replace(assignments)
    except (ValueError, msgspec.ValidationError) as error:
        printing.fail(f"--threshold: {error}")
