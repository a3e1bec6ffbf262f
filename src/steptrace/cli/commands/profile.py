"""``steptrace profile``: a labelled window of a workload captured with torch.profiler, then
analyzed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from steptrace.cli import printing
from steptrace.cli.app import app
from steptrace.cli.options import (
    FILE,
    report_options,
    window_options,
)
from steptrace.errors import CaptureError, TraceError


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
        from steptrace.process.user_code import running_user_code
    except ImportError as error:
        printing.fail(f"capture needs torch ({error})")
    path = out or Path(f"steptrace-{time.strftime('%Y%m%d-%H%M%S')}.json")
    try:
        with warnings.catch_warnings(), running_user_code("the capture"):
            warnings.simplefilter("ignore")  # the result carries them; printed below once
            captured = run_workload(load_workload(target), out=path, window=window)
        lanes = output_format == "html"
        reports = [analyze_source(trace, lanes=lanes) for trace in captured.facts.traces]
    except (CaptureError, TraceError) as error:
        printing.fail(str(error))
    for message in captured.facts.warnings:
        printing.warn(message)
    printing.note(f"trace {', '.join(captured.facts.traces)}; scenario {captured.facts.sidecar}")
    printing.reports(reports, output_format, findings_only=findings_only, totals=totals, top=top)
