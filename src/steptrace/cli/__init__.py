"""The ``steptrace`` command line: a thin layer over the library.

Built on click, which starts in a few milliseconds: the command line is the whole process
of ``steptrace analyze``, so its start-up counts in every analysis.
"""

from __future__ import annotations

import errno
import io
import json
import os
import sys
import time
from collections.abc import Iterable, MutableMapping, Sequence
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import click

from steptrace import ctrl_c
from steptrace.cli.critical import critical_options, parse_what_if
from steptrace.cli.options import (
    FILE,
    FiniteRange,
    count,
    format_option,
    ranks_options,
    report_options,
    switch,
    window_options,
)
from steptrace.cli.tables import read_kinds, read_peaks, table_options
from steptrace.errors import CaptureError, TraceError, raised_at
from steptrace.safe_text import one_line, visible

if TYPE_CHECKING:
    from steptrace.pipeline import Analyzed, Tables
    from steptrace.report.document import Document
    from steptrace.report.model import Report


Grouping = Literal["said", "job", "each"]  # several traces: one job when said, always, never


class _Commands(click.Group):
    """Usage errors are one line on stderr with exit code 2, like every steptrace error."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            status = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as error:  # the bare command: its help
            error.show()
            sys.exit(error.exit_code)
        except click.ClickException as error:
            context = getattr(error, "ctx", None)
            command = context.command_path if context is not None else self.name
            _fail(f"{error.format_message()} (see {command} --help)", error.exit_code)
        except click.Abort:
            _fail("aborted", 130)  # the shell's code for Ctrl-C, not a failed run's
        except MemoryError:  # what no limit foresaw (an address-space limit met elsewhere)
            _fail("out of memory: the input is too large for the memory available here", 2)
        except OSError as error:  # the output could not be written (a full disk, ...)
            place = f"{error.filename}: " if error.filename else ""
            _fail(f"{place}{error.strerror or error}", 1)
        sys.exit(status if isinstance(status, int) else 0)


@click.group(
    "steptrace",
    cls=_Commands,
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
)
@click.version_option(
    package_name="steptrace", prog_name="steptrace", message="%(prog)s %(version)s"
)
def app() -> None:
    """steptrace: question-first analysis of PyTorch profiler traces, on the timeline."""


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
    from steptrace.pipeline import Tables
    from steptrace.trace.budget import max_bytes_set

    if per_rank and as_job:
        raise click.UsageError("--per-rank and --as-job exclude each other: give one")
    try:
        targets = parse_what_if(what_if)
        tables = Tables(
            read_kinds(kinds_file), read_peaks(peaks_file), critical_path or bool(targets), targets
        )
    except TraceError as error:
        _fail(str(error))
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
    from steptrace.trace.source import BackgroundRead, ReadAhead

    try:
        local, urls = split_urls(traces)
        files, skipped = trace_inputs(local) if local or not urls else ([], [])
        remote, skipped_remote = url_inputs(urls)
    except TraceError as error:
        _fail(str(error))
    for where, why in [*skipped, *skipped_remote]:
        _warn(f"{where}: skipped, {why}")
    locations = [str(f) for f in files] + remote
    one_job = len(locations) > 1 and grouping != "each"
    one_job = one_job and (grouping == "job" or _one_job_said(locations))
    source = click.get_current_context().get_parameter_source("scheduler")
    if scheduler and not one_job and source == click.core.ParameterSource.COMMANDLINE:
        _warn(
            "--scheduler applies to the ranks of one job (several traces that say so, or "
            "--as-job): the traces are measured here"
        )
    if one_job and (tables.peaks or tables.kinds):
        _warn("--peaks and --kernel-kinds apply to one trace's report (--per-rank), not a job's")
    if one_job and tables.what_if:
        _warn("--what-if applies to one trace's report (--per-rank), not a job's")
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
    texts = ReadAhead(files)  # reading starts now, beside the imports
    from steptrace.cli.jobs import usable_cores
    from steptrace.pipeline import analyze_checked

    limits = _thresholds(list(threshold))
    lanes, workers = output_format == "html", jobs or usable_cores()
    reports: list[Analyzed] = []
    failures, damaged = [], False
    given: Iterable[tuple[str | Path, BackgroundRead | None]] = chain(
        texts, ((url, None) for url in remote)
    )  # lazy: two texts held at most
    for where, reading in given:
        try:  # one trace that cannot be analyzed costs only its own report
            text = reading.take() if reading is not None else None
            checked = analyze_checked(
                where,
                thresholds=limits,
                text=text,
                lanes=lanes,
                workers=workers,
                tables=tables,
            )
            reports.append(checked.found)
            damaged = damaged or checked.damaged
        except TraceError as error:
            failures.append(str(error))
    if not reports:
        more = f" (and {len(failures) - 1} more traces failed)" if len(failures) > 1 else ""
        _fail(f"{failures[0]}{more}")
    for failure in failures:
        _warn(f"{failure}; the other traces' reports are written")
    reports.sort(key=lambda r: _order_of(r.report))
    _report(reports, output_format, findings_only=findings_only, totals=totals, top=top)
    if failures or damaged:  # a report written, from damaged input or beside a failure
        raise SystemExit(1)


def _one_job_said(locations: list[str]) -> bool:
    """Whether the traces say they are the ranks of one job (each its own rank, one world
    size and backend); if not, a note says why and what ``--as-job`` does."""
    from steptrace.across.ranks.said import not_one_job, said_by

    why = not_one_job(said_by(locations))
    if why is not None:
        _note(f"{why}: one report per trace; --as-job reads them as the ranks of one job")
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
        _fail(f"--threshold: {error}")
    except TraceError as error:
        hint = "; --per-rank gives one report per trace" if "not one job" in str(error) else ""
        _fail(f"{error}{hint}")
    for warning in found.warnings:
        if output_format != "text" or warning in found.failures:  # text: in its body
            _warn(warning)
    _write([found.document], output_format)
    if found.failures or found.damaged:
        raise SystemExit(1)


def _thresholds(assignments: list[str]) -> Any:
    import msgspec

    from steptrace.hypotheses.thresholds import Thresholds

    try:
        return Thresholds().replace(assignments)
    except (ValueError, msgspec.ValidationError) as error:
        _fail(f"--threshold: {error}")


@app.command(short_help="Capture a labelled window with torch.profiler, then analyze it.")
@click.argument("target")
@click.option("--out", type=FILE, help="New trace file (never overwritten). Default: dated.")
@window_options
@report_options
def profile(
    target: str,
    out: Path | None,
    window: Any,
    output_format: str,
    top: int,
    findings_only: bool,
    totals: bool,
) -> None:
    """Capture a labelled window of a workload with torch.profiler, then analyze it.

    TARGET is MODULE:FUNCTION or FILE.py:FUNCTION returning a steptrace.capturing.Workload.
    """
    import warnings

    from steptrace.pipeline import analyze_source

    try:
        from steptrace.capturing.workload import run_workload
        from steptrace.cli.targets import load_workload
        from steptrace.user_code import running_user_code
    except ImportError as error:
        _fail(f"capture needs torch ({error})")
    path = out or Path(f"steptrace-{time.strftime('%Y%m%d-%H%M%S')}.json")
    try:
        with warnings.catch_warnings(), running_user_code("the capture"):
            warnings.simplefilter("ignore")  # the result carries them; printed below once
            captured = run_workload(load_workload(target), out=path, window=window)
        lanes = output_format == "html"
        reports = [analyze_source(trace, lanes=lanes) for trace in captured.facts.traces]
    except (CaptureError, TraceError) as error:
        _fail(str(error))
    for message in captured.facts.warnings:
        _warn(message)
    _note(f"trace {', '.join(captured.facts.traces)}; scenario {captured.facts.sidecar}")
    _report(reports, output_format, findings_only=findings_only, totals=totals, top=top)


@app.command(short_help="The method end to end: capture, findings, each one's check run.")
@click.argument("target")
@click.option(
    "--out",
    type=FILE,
    help="New trace file (never overwritten; default: dated); the report beside it as "
    "<name>.report.json, .md and .html.",
)
@count("--checks", 3, 0, "Findings whose check runs, most severe first.")
@click.option(
    "--budget",
    type=FiniteRange(min=1),
    default=60.0,
    show_default=True,
    help="Seconds for the whole run, capture included (an upper bound: the checks get "
    "what the capture and the analysis leave).",
)
@switch(
    "--memory",
    "Record allocations: memory per step, its findings and their checks (adds overhead).",
)
@count("--active", 3, 1, "Recorded steps (more: a steadier median, a longer capture).")
@report_options
def investigate(
    target: str,
    out: Path | None,
    checks: int,
    budget: float,
    memory: bool,
    active: int,
    output_format: str,
    top: int,
    findings_only: bool,
    totals: bool,
) -> None:
    """Capture a workload, analyze it, and run each finding's controlled check outside the
    profiler: each hypothesis supported, not supported, outputs differ, or not testable here.

    TARGET is MODULE:FUNCTION or FILE.py:FUNCTION returning a steptrace.capturing.Workload:

    \b
      Workload(scenario=steptrace.Scenario(question=...),
               model=..., optimizer=..., loader=..., loss_fn=...)
    \b
    or, for a step of your own (AMP, clipping, accumulation, a carried hidden state):
      Workload(scenario=..., model=..., optimizer=..., loader=..., step=step)
      def step(model, batch, state) -> loss:  # forward, backward, state["optimizer"].step()
                                              # (state: kept from step to step)
    \b
    or, for inference: Workload(scenario=..., load_model=..., request=..., inputs=...).
    Lightning and Hugging Face: steptrace.integrations.lightning.workload_of(module, loader,
    scenario) and steptrace.integrations.transformers.workload_of(trainer, scenario). The
    capture and every check run the same step, each check on its own copy of the state
    (example: examples/07_own_step.py). With --out, the report is also written beside the
    trace as JSON, Markdown and HTML (steptrace render re-renders a saved one).
    """
    from steptrace.cli.investigating import run
    from steptrace.investigation.run import Interrupted

    path = out or Path(f"steptrace-{time.strftime('%Y%m%d-%H%M%S')}.json")
    stopped: Interrupted | None = None
    try:
        report = run(
            target, path, checks=checks, budget_s=budget, say=_say, memory=memory, active=active
        )
    except ImportError as error:
        _fail(f"investigate needs torch ({error})")
    except (CaptureError, TraceError) as error:
        _fail(str(error))
    except Interrupted as stop:  # Ctrl-C during the checks: what is known, then 130
        ctrl_c.settle()
        stopped, report = stop, stop.report
    from steptrace.pipeline import Analyzed, lanes_of

    lanes = lanes_of(report.analysis.trace.path) if output_format == "html" or out else None
    found = Analyzed(report, lanes)
    _report([found], output_format, findings_only=findings_only, totals=totals, top=top)
    if out is not None:
        _reports_beside(path, found, totals=totals, top=top)
    if stopped is not None:
        _note(
            f"interrupted by Ctrl-C during the checks: the report above holds those done; "
            f"the trace is kept at {stopped.trace}"
        )
        _fail("aborted", 130)


def _reports_beside(trace: Path, found: Analyzed, *, totals: bool, top: int) -> None:
    """investigate --out: the report as JSON, Markdown and HTML beside the trace."""
    from steptrace.cli.rendering import FORMATS, written_beside
    from steptrace.report.trace_sections import View, report_document

    view = View(totals=totals, lanes=found.lanes)  # whole, whatever is shown: render reads it
    document = report_document(found.report.top(top), view)
    try:
        made = written_beside(trace, dict.fromkeys(FORMATS, document))
    except OSError as error:
        _fail(f"the reports could not be written: {error}", 1)
    _note("reports " + ", ".join(str(p) for p in made))


@app.command(short_help="A saved report (--format json) again, in any format.")
@click.argument("saved", type=click.Path(path_type=Path, dir_okay=False))
@report_options
def render(saved: Path, output_format: str, top: int, findings_only: bool, totals: bool) -> None:
    """Render SAVED, a report written by `analyze --format json` or `investigate --out`, in
    another format. The HTML timeline is rebuilt from the report's trace when the trace is
    still there (as recorded, else beside the report); it is said missing otherwise."""
    from steptrace.cli.rendering import saved_report, timeline_of
    from steptrace.pipeline import Analyzed

    try:
        report = saved_report(saved)
        lanes = timeline_of(report, saved.parent, _warn) if output_format == "html" else None
    except TraceError as error:
        _fail(str(error))
    _report(
        [Analyzed(report, lanes)],
        output_format,
        findings_only=findings_only,
        totals=totals,
        top=top,
    )


@app.command(short_help="A/B outside the profiler: correctness first, then timing.")
@click.argument("baseline")
@click.argument("candidate")
@click.option("--state", required=True, help="MODULE:FUNCTION returning {'model': ..., ...}.")
@click.option("--batches", required=True, help="MODULE:FUNCTION returning a list of batches.")
@click.option("--state-b", help="B's own MODULE:FUNCTION state (another optimizer, ...).")
@click.option("--batches-b", help="B's own MODULE:FUNCTION batches (pinned copies, ...).")
@click.option("--device", default="cpu", show_default=True, help="cpu, cuda, cuda:1, ...")
@click.option(
    "--unit", type=click.Choice(["ms/step", "samples/s"]), default="ms/step", show_default=True
)
@click.option(
    "--budget",
    type=FiniteRange(min=0.5),
    default=20.0,
    show_default=True,
    help="Seconds for the whole comparison at most, correctness steps included (a step "
    "still running well past it is stopped).",
)
@count("--check-steps", 3, 1, "Steps before comparing outputs.")
@click.option("--rtol", type=FiniteRange(min=0), help="Relative tolerance (default by dtype).")
@click.option("--atol", type=FiniteRange(min=0), help="Absolute tolerance (default by dtype).")
@switch("--accept-difference", "Give a speed verdict even if the outputs differ.")
@click.option("--json", "json_out", type=FILE, help="Write every raw value to a new JSON file.")
@click.option("--csv", "csv_out", type=FILE, help="Write the raw step times to a new CSV file.")
def compare(
    baseline: str,
    candidate: str,
    json_out: Path | None,
    csv_out: Path | None,
    **options: Any,
) -> None:
    """A/B outside the profiler: same state, correctness first, interleaved timing, verdict.

    BASELINE and CANDIDATE are MODULE:FUNCTION, the steps A and B: step(state, batch).
    """
    from steptrace.cli.comparing import check_outputs, run_compare
    from steptrace.user_code import running_user_code

    targets: dict[str, str | None] = {"baseline": baseline, "candidate": candidate}
    targets |= {k: options.pop(k) for k in ("state", "batches", "state_b", "batches_b")}
    try:
        check_outputs((json_out, csv_out))
        from steptrace.validate import CheckPlan, TimingPlan

        check = CheckPlan(
            steps=options["check_steps"],
            rtol=options["rtol"],
            atol=options["atol"],
            accept_difference=options["accept_difference"],
        )
        plan = TimingPlan(budget_s=options["budget"], unit=options["unit"])
        with running_user_code("the comparison"):
            result = run_compare(targets, options["device"], check=check, plan=plan)
    except ImportError as error:
        _fail(f"compare needs torch and scipy ({error})")
    except CaptureError as error:
        _fail(str(error))
    except Exception as error:  # the user's state, batches or steps failed: one line
        _fail(f"the comparison stopped: {raised_at(error)}")
    from steptrace.report.check_sections import comparison_document

    _write([comparison_document(result, (baseline, candidate))], "text")
    if json_out is not None:
        _note(f"raw values in {result.write_json(json_out)}")
    if csv_out is not None:
        _note(f"raw step times in {result.write_csv(csv_out)}")


@app.command(short_help="Where time moved between two windows (compare decides).")
@click.argument("before", type=FILE)
@click.argument("after", type=FILE)
@format_option
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=15,
    show_default=True,
    help="Changed operators and kernels to list.",
)
def diff(before: Path, after: Path, output_format: str, top: int) -> None:
    """Where time moved between two windows (a diff suggests; compare decides).

    BEFORE and AFTER are traces or reports saved by `steptrace analyze --format json`.
    """
    from steptrace.pipeline import diff_checked
    from steptrace.report.diff_sections import diff_document

    try:
        result, damaged = diff_checked(before, after)
    except TraceError as error:
        _fail(str(error))
    if output_format != "text":  # the text report shows them in its body
        for warning in result.warnings:
            _warn(warning)
    for where, warnings in damaged:
        for warning in warnings:
            _warn(f"{where}: {warning}")
    _write([diff_document(result, top)], output_format)
    if damaged:  # written, from damaged input: as analyze says it
        raise SystemExit(1)


@app.command(short_help="Copy a trace without user and host names, addresses and secrets.")
@click.argument("trace", type=FILE)
@click.option("--output", "-o", type=FILE, help="New file for the copy (never overwritten).")
@switch("--check", "Write nothing: list what still looks sensitive, exit 1 if anything does.")
def scrub(trace: Path, output: Path | None, check: bool) -> None:
    """Write a copy without user and host names, IP addresses, e-mails, tokens, keys and
    passwords; timings and every analysis figure stay the same. With --check, write
    nothing: list what still looks sensitive and exit 1 if anything does (a gate before
    publishing a trace).

    TRACE is the trace to share (.json or .json.gz).
    """
    from steptrace.tools.scrub import check_file, scrub_file

    if check == (output is not None):
        _fail("give --output FILE, or --check (see steptrace scrub --help)")
    try:
        report = scrub_file(trace, output) if output is not None else check_file(trace)
    except TraceError as error:
        _fail(str(error))
    kinds = ", ".join(f"{kind} ×{count}" for kind, count in report.counts.items())
    if output is not None:
        print(f"steptrace: wrote {one_line(str(output))}; replaced {report.total}: {kinds or '-'}")
    elif not report.total:
        print(f"steptrace: {one_line(str(trace))}: nothing looks sensitive")
    else:
        print(f"steptrace: {one_line(str(trace))}: {report.total} still look sensitive: {kinds}")
        for place in report.places:  # the field's name, never the value
            field = json.dumps(place.field, ensure_ascii=False) if place.field else "no field"
            print(f"  {place.kind:<14} ×{place.count:<6} in {one_line(field)}")
        raise SystemExit(1)


@app.command(short_help="The whole method on a small CNN, reports in a new folder.")
@click.option(
    "--out",
    type=FILE,
    default=Path("steptrace-demo"),
    show_default=True,
    help="Folder under which a new dated folder is made.",
)
@click.option(
    "--device", default="auto", show_default=True, help="auto (CUDA when present), cpu or cuda."
)
@switch("--quick", "Shorter A/B checks (for tests).")
@click.option(
    "--ranks/--no-ranks",
    default=True,
    show_default=True,
    help="Also record 4 gloo ranks with a planted straggler and analyze them together.",
)
def demo(out: Path, device: str, quick: bool, ranks: bool) -> None:
    """The whole method on a small CNN: question, capture, findings, A/B checks, reports.

    Then a multi-rank job (--no-ranks leaves it out): ranks.json, ranks.md, ranks.html, and
    report.html shows it after the trace's report."""
    try:
        from steptrace.tools.demo import run_demo
    except ImportError as error:
        _fail(f"the demo needs torch ({error})")

    say = _say
    if out.exists() and not out.is_dir():
        _fail(f"{out} is a file: --out takes a folder")
    try:
        folder = run_demo(out, device=device, quick=quick, say=say, ranks=ranks)
    except (CaptureError, OSError) as error:
        _fail(str(error))
    extra = "ranks.html, ranks.md, ranks.json, ranks/ (the rank traces), " if ranks else ""
    print(
        f"Reports in {one_line(str(folder))}/: report.html, report.md, report.json (every "
        f"check's samples), {extra}trace.json (open it in ui.perfetto.dev)"
    )


def _report(
    found: list[Analyzed],
    output_format: str,
    *,
    findings_only: bool = False,
    totals: bool = False,
    top: int,
) -> None:
    """Each report, its first ``top`` operators and kernels listed, and its lanes drawn
    (HTML); their warnings on stderr."""
    from steptrace.report.trace_sections import View, report_document

    documents = []
    for report, lanes in found:
        path = report.analysis.trace.path
        for warning in report.analysis.trace.warnings + report.warnings:
            _warn(f"{path}: {warning}")
        view = View(findings_only=findings_only, totals=totals, lanes=lanes)
        documents.append(report_document(report.top(top), view))
    _write(documents, output_format)


def _order_of(report: Report) -> tuple[bool, int, str]:
    """Rank traces by rank, then the others by path."""
    trace = report.analysis.trace
    return (trace.rank is None, trace.rank or 0, trace.path)


def _write(documents: list[Document], output_format: str) -> None:
    from steptrace.report.renderers import renderer

    sys.stdout.write(renderer(output_format, terminal=sys.stdout.isatty()).render(documents))


def _say(line: str) -> None:
    """A line of progress on stderr, timed."""
    print(f"[{time.strftime('%H:%M:%S')}] {visible(line)}", file=sys.stderr, flush=True)


def _fail(message: str, code: int = 2) -> NoReturn:
    if ctrl_c.interrupted():  # what Ctrl-C broke on its way (a half-started profiler)
        message, code = "aborted", 130
    print(f"steptrace: error: {one_line(message)}", file=sys.stderr)
    raise SystemExit(code)


def _warn(message: str) -> None:
    print(f"steptrace: warning: {one_line(message)}", file=sys.stderr)


def _note(message: str) -> None:
    print(f"steptrace: {one_line(message)}", file=sys.stderr)


def without_huge_pages(environ: MutableMapping[str, str]) -> None:
    """numpy not to ask for transparent huge pages, unless ``environ`` says otherwise (see
    ``main``); read by numpy when it is first imported."""
    environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")


def main() -> NoReturn:
    """Console-script entry point.

    Without torch loaded, the process ends without tearing the interpreter's objects down
    one by one (as mypy does): after a large trace that took 20 ms, a twentieth of the
    analysis. Commands that ran torch exit normally, so that its exit handlers run.

    numpy is told not to ask for transparent huge pages (``NUMPY_MADVISE_HUGEPAGE=0``,
    unless the caller set it), before anything imports it: where the kernel compacts
    memory to serve such requests (``defrag`` set to ``madvise``, the usual default),
    first touches of large arrays stall: on this project's 2-core machine the 1.7 GB
    replica took 7.0 s with them and 6.5 s without (``benchmarks/scale_one_trace.py``).
    """
    ctrl_c.take_over()  # from here a Ctrl-C unwinds, and click says it in one line
    without_huge_pages(os.environ)  # inherited by the worker processes
    _replace_closed_streams()
    try:
        app(prog_name="steptrace")
        status: object = 0
    except SystemExit as done:
        status = done.code
    ctrl_c.settle()
    code = ctrl_c.exit_code(_exit_code(status))
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the reader went away (``| head``), a full disk
            code = code or 1
    ctrl_c.leave(code)  # torch's exit handlers run, if it was loaded


def _replace_closed_streams() -> None:
    """stdout closed before the start: writing the report fails in one line (exit 1);
    stderr closed: its lines go nowhere."""
    if sys.stdout is None:
        sys.stdout = _ClosedOutput()
    if sys.stderr is None:
        sys.stderr = Path(os.devnull).open("w")  # noqa: SIM115 (open until the exit)


class _ClosedOutput(io.TextIOBase):
    """stdout closed by the caller (``>&-``): nothing written there can arrive."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "stdout is closed: the report could not be written")


def _exit_code(status: object) -> int:
    """As Python's own exit: None is 0, an int itself, anything else printed and 1."""
    if status is None or isinstance(status, int):
        return status or 0
    print(visible(str(status)), file=sys.stderr)
    return 1
