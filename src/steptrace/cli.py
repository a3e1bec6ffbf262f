"""The ``steptrace`` command line: a thin layer over the library."""

from __future__ import annotations

import sys
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from steptrace.errors import TraceError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="steptrace: question-first analysis of PyTorch profiler traces, on the timeline.",
)


class Format(str, Enum):
    text = "text"
    json = "json"
    md = "md"
    html = "html"


ReportFormat = Annotated[
    Format, typer.Option("--format", "-f", help="text (terminal), json, md or html.")
]
Top = Annotated[int, typer.Option(min=1, help="Operators and kernels to list.")]
FindingsOnly = Annotated[bool, typer.Option(help="Only the question and the findings table.")]


@app.callback()
def _main() -> None:
    """steptrace: question-first analysis of PyTorch profiler traces, on the timeline."""


@app.command()
def analyze(
    traces: Annotated[
        list[Path], typer.Argument(help="Trace files (.json, .json.gz) or folders of rank traces.")
    ],
    output_format: ReportFormat = Format.text,
    top: Top = 15,
    findings_only: FindingsOnly = False,
    threshold: Annotated[
        list[str] | None,
        typer.Option(help="Override a finding threshold, NAME=VALUE (repeatable)."),
    ] = None,
) -> None:
    """Measure traces on the timeline and turn what they show into testable hypotheses."""
    from steptrace.analysis.analyze import analyze as analyze_file
    from steptrace.inputs import trace_files

    limits = _thresholds(threshold or [])
    try:
        results = [analyze_file(path, thresholds=limits).top(top) for path in trace_files(traces)]
    except TraceError as error:
        _fail(str(error))
    results.sort(key=lambda r: (r.trace.rank is None, r.trace.rank or 0, r.trace.path))
    _report(results, output_format, findings_only=findings_only)


def _thresholds(assignments: list[str]) -> Any:
    import msgspec

    from steptrace.hypotheses.thresholds import Thresholds

    try:
        return Thresholds().replace(assignments)
    except (ValueError, msgspec.ValidationError) as error:
        _fail(f"--threshold: {error}")


@app.command()
def profile(
    target: Annotated[
        str,
        typer.Argument(help="MODULE:FUNCTION or FILE.py:FUNCTION returning a steptrace.Workload."),
    ],
    out: Annotated[
        Path | None, typer.Option(help="New trace file (never overwritten). Default: dated.")
    ] = None,
    wait: Annotated[int, typer.Option(min=0, help="Steps skipped before warm-up.")] = 1,
    warmup: Annotated[int, typer.Option(min=0, help="Profiler warm-up steps.")] = 1,
    active: Annotated[int, typer.Option(min=1, help="Recorded steps.")] = 2,
    repeat: Annotated[int, typer.Option(min=1, help="Active windows.")] = 1,
    cold_steps: Annotated[
        int, typer.Option(min=0, help="First steps timed apart, before the profiler.")
    ] = 1,
    measure_overhead: Annotated[
        bool, typer.Option(help="Also time the steps without the profiler (training).")
    ] = False,
    flops: Annotated[bool, typer.Option(help="Count FLOPs per step; MFU when known.")] = False,
    record_shapes: Annotated[bool, typer.Option(help="Record input shapes (costly).")] = False,
    profile_memory: Annotated[bool, typer.Option(help="Record allocations (costly).")] = False,
    with_stack: Annotated[bool, typer.Option(help="Record Python stacks (costly).")] = False,
    output_format: ReportFormat = Format.text,
    top: Top = 15,
    findings_only: FindingsOnly = False,
) -> None:
    """Capture a labelled window of a workload with torch.profiler, then analyze it."""
    import time
    import warnings

    from steptrace.analysis.analyze import analyze as analyze_file
    from steptrace.errors import CaptureError

    try:
        from steptrace.harness.workload import load_workload, run_workload
    except ImportError as error:
        _fail(f"capture needs torch ({error})")
    path = out or Path(f"steptrace-{time.strftime('%Y%m%d-%H%M%S')}.json")
    options = {
        "out": path, "wait": wait, "warmup": warmup, "active": active, "repeat": repeat,
        "cold_steps": cold_steps, "measure_overhead": measure_overhead, "count_flops": flops,
        "record_shapes": record_shapes, "profile_memory": profile_memory,
        "with_stack": with_stack,
    }  # fmt: skip
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the result carries them; printed below once
            captured = run_workload(load_workload(target), **options)
        results = [analyze_file(trace).top(top) for trace in captured.traces]
    except (CaptureError, TraceError) as error:
        _fail(str(error))
    for message in captured.warnings:
        print(f"steptrace: warning: {message}", file=sys.stderr)
    print(
        f"steptrace: trace {', '.join(captured.traces)}; scenario {captured.sidecar}",
        file=sys.stderr,
    )
    _report(results, output_format, findings_only=findings_only)


@app.command()
def compare(
    baseline: Annotated[
        str, typer.Argument(help="MODULE:FUNCTION, the step A: step(state, batch).")
    ],
    candidate: Annotated[str, typer.Argument(help="MODULE:FUNCTION, the step B.")],
    state: Annotated[str, typer.Option(help="MODULE:FUNCTION returning {'model': ..., ...}.")],
    batches: Annotated[str, typer.Option(help="MODULE:FUNCTION returning a list of batches.")],
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:1, ...")] = "cpu",
    unit: Annotated[str, typer.Option(help="ms/step or samples/s.")] = "ms/step",
    budget: Annotated[float, typer.Option(min=0.5, help="Seconds of timing at most.")] = 20.0,
    check_steps: Annotated[int, typer.Option(min=1, help="Steps before comparing outputs.")] = 3,
    rtol: Annotated[
        float | None, typer.Option(help="Relative tolerance (default by dtype).")
    ] = None,
    atol: Annotated[
        float | None, typer.Option(help="Absolute tolerance (default by dtype).")
    ] = None,
    accept_difference: Annotated[
        bool, typer.Option(help="Give a speed verdict even if the outputs differ.")
    ] = False,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write every raw value to a new JSON file.")
    ] = None,
    csv_out: Annotated[
        Path | None, typer.Option("--csv", help="Write the raw step times to a new CSV file.")
    ] = None,
) -> None:
    """A/B outside the profiler: same state, correctness first, interleaved timing, verdict."""
    from steptrace.errors import CaptureError
    from steptrace.targets import load_callable

    if unit not in ("ms/step", "samples/s"):
        _fail(f"--unit must be ms/step or samples/s, not {unit!r}")
    outputs = [p for p in (json_out, csv_out) if p is not None]
    if len(outputs) == 2 and outputs[0].resolve() == outputs[1].resolve():
        _fail("--json and --csv must name two different files")
    for path in outputs:
        if path.exists():
            _fail(f"{path} exists already: choose a new file name")
        if not path.parent.is_dir():
            _fail(f"{path.parent}: no such folder for {path.name}")
    try:
        from steptrace.harness.devices import activities, resolve
        from steptrace.validate import TimingPlan
        from steptrace.validate import compare as run_compare

        activities(resolve(device))  # a GPU that is not there is refused, before any work
        batch_list = list(load_callable(batches)())
        result = run_compare(
            load_callable(baseline), load_callable(candidate),
            make_state=load_callable(state), batches=batch_list, device=device,
            unit=unit,  # type: ignore[arg-type]
            check_steps=check_steps, rtol=rtol, atol=atol, accept_difference=accept_difference,
            plan=TimingPlan(budget_s=budget),
        )  # fmt: skip
    except ImportError as error:
        _fail(f"compare needs torch and scipy ({error})")
    except CaptureError as error:
        _fail(str(error))
    from rich.console import Console

    from steptrace.report.comparison import render_comparison

    console = Console() if sys.stdout.isatty() else Console(width=140, color_system=None)
    render_comparison(result, console, (baseline, candidate))
    if json_out is not None:
        print(f"steptrace: raw values in {result.write_json(json_out)}", file=sys.stderr)
    if csv_out is not None:
        print(f"steptrace: raw step times in {result.write_csv(csv_out)}", file=sys.stderr)


@app.command()
def diff(
    before: Annotated[Path, typer.Argument(help="Trace or analysis JSON, before the change.")],
    after: Annotated[Path, typer.Argument(help="Trace or analysis JSON, after the change.")],
    output_format: Annotated[
        Format, typer.Option("--format", "-f", help="text (terminal), json or md.")
    ] = Format.text,
    top: Annotated[int, typer.Option(min=1, help="Changed operators and kernels to list.")] = 15,
) -> None:
    """Where time moved between two windows (a diff suggests; compare decides)."""
    from steptrace.diff import diff_paths
    from steptrace.report.diff import render_diff_json, render_diff_markdown, render_diff_text

    try:
        result = diff_paths(before, after)
    except TraceError as error:
        _fail(str(error))
    if output_format is not Format.text:  # the text report shows them in its body
        for warning in result.warnings:
            print(f"steptrace: warning: {warning}", file=sys.stderr)
    if output_format is Format.json:
        sys.stdout.write(render_diff_json(result))
    elif output_format is Format.md:
        sys.stdout.write(render_diff_markdown(result, top))
    elif output_format is Format.html:
        _fail("diff has no html format; use text, json or md")
    else:
        from rich.console import Console

        console = Console() if sys.stdout.isatty() else Console(width=160, color_system=None)
        render_diff_text(result, console, top)


@app.command()
def scrub(
    trace: Annotated[Path, typer.Argument(help="The trace to share (.json or .json.gz).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="New file for the copy.")],
) -> None:
    """Write a copy without e-mails, tokens, keys, user and host names (never overwrites)."""
    from steptrace.scrub import scrub_file

    try:
        report = scrub_file(trace, output)
    except TraceError as error:
        _fail(str(error))
    kinds = ", ".join(f"{kind} ×{count}" for kind, count in report.counts.items()) or "nothing"
    print(f"steptrace: wrote {output}; replaced {report.total}: {kinds}")


@app.command()
def demo(
    out: Annotated[
        Path, typer.Option(help="Folder under which a new dated folder is made.")
    ] = Path("steptrace-demo"),
    device: Annotated[str, typer.Option(help="auto (CUDA when present), cpu or cuda.")] = "auto",
    quick: Annotated[bool, typer.Option(help="Shorter A/B checks (for tests).")] = False,
) -> None:
    """The whole method on a small CNN: question, capture, findings, A/B checks, reports."""
    try:
        from steptrace.demo import run_demo
    except ImportError as error:
        _fail(f"the demo needs torch ({error})")
    from steptrace.errors import CaptureError

    def say(line: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)

    if out.exists() and not out.is_dir():
        _fail(f"{out} is a file: --out takes a folder")
    try:
        folder = run_demo(out, device=device, quick=quick, say=say)
    except (CaptureError, OSError) as error:
        _fail(str(error))
    print(f"Reports in {folder}/: report.html, report.md, analysis.json, comparisons.json, "
          "trace.json (open it in ui.perfetto.dev)")  # fmt: skip


def _report(
    results: list,  # type: ignore[type-arg]
    output_format: Format,
    *,
    findings_only: bool = False,
) -> None:
    for result in results:
        for warning in result.trace.warnings:
            print(f"steptrace: warning: {result.trace.path}: {warning}", file=sys.stderr)
    _emit(results, output_format, findings_only)


def _emit(results: list, output_format: Format, findings_only: bool) -> None:  # type: ignore[type-arg]
    if output_format is Format.html:
        from steptrace.report.html import render_html

        if len(results) != 1:
            _fail("--format html takes one trace; run it once per trace")
        sys.stdout.write(render_html(results[0]))
    elif output_format is Format.json:
        from steptrace.report.json import render_json

        sys.stdout.write(render_json(results, findings_only=findings_only))
    elif output_format is Format.md:
        from steptrace.report.markdown import render_markdown

        sys.stdout.write(render_markdown(results, findings_only=findings_only))
    else:
        from rich.console import Console

        from steptrace.report.text import render_text

        console = Console() if sys.stdout.isatty() else Console(width=160, color_system=None)
        render_text(results, console, findings_only=findings_only)


def _fail(message: str) -> NoReturn:
    print(f"steptrace: error: {message}", file=sys.stderr)
    raise typer.Exit(code=2)


def main() -> None:
    """Console-script entry point."""
    app()
