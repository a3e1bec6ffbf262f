"""``steptrace diff``: where time moved between two windows (a diff suggests; compare decides)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from steptrace.cli import printing
from steptrace.cli.app import app, one_blas_thread
from steptrace.cli.options import (
    FILE,
    format_option,
)
from steptrace.errors import TraceError


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
    with one_blas_thread(os.environ):  # numpy is imported here, read with one BLAS thread
        from steptrace.pipeline import diff_checked
        from steptrace.report.sections.diff import diff_document

    try:
        result, damaged = diff_checked(before, after)
    except TraceError as error:
        printing.fail(str(error))
    if output_format != "text":  # the text report shows them in its body
        for warning in result.warnings:
            printing.warn(warning)
    for where, warnings in damaged:
        for warning in warnings:
            printing.warn(f"{where}: {warning}")
    printing.write([diff_document(result, top)], output_format)
    if damaged:  # written, from damaged input: as analyze says it
        raise SystemExit(1)
