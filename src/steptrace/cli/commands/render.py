"""``steptrace render``: a report saved as JSON, again in any format."""

from __future__ import annotations

from pathlib import Path

import click

from steptrace.cli import printing
from steptrace.cli.app import app
from steptrace.cli.options import report_options
from steptrace.errors import TraceError


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
        lanes = (
            timeline_of(report, saved.parent, printing.warn) if output_format == "html" else None
        )
    except TraceError as error:
        printing.fail(str(error))
    printing.reports(
        [Analyzed(report, lanes)],
        output_format,
        findings_only=findings_only,
        totals=totals,
        top=top,
    )
