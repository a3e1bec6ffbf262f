"""``steptrace scrub``: a copy of a trace without user and host names, addresses and secrets."""

from __future__ import annotations

import json
from pathlib import Path

import click

from steptrace.cli import printing
from steptrace.cli.app import app
from steptrace.cli.options import (
    FILE,
    switch,
)
from steptrace.errors import TraceError
from steptrace.safe_text import one_line


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
        printing.fail("give --output FILE, or --check (see steptrace scrub --help)")
    try:
        report = scrub_file(trace, output) if output is not None else check_file(trace)
    except TraceError as error:
        printing.fail(str(error))
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
