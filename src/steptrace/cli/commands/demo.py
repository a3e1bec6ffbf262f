"""``steptrace demo``: the whole method on a small CNN, reports in a new folder."""

from __future__ import annotations

from pathlib import Path

import click

from steptrace.cli import printing
from steptrace.cli.app import app
from steptrace.cli.options import (
    FILE,
    switch,
)
from steptrace.errors import CaptureError
from steptrace.safe_text import one_line


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
        printing.fail(f"the demo needs torch ({error})")

    say = printing.say
    if out.exists() and not out.is_dir():
        printing.fail(f"{out} is a file: --out takes a folder")
    try:
        folder = run_demo(out, device=device, quick=quick, say=say, ranks=ranks)
    except (CaptureError, OSError) as error:
        printing.fail(str(error))
    extra = "ranks.html, ranks.md, ranks.json, ranks/ (the rank traces), " if ranks else ""
    print(
        f"Reports in {one_line(str(folder))}/: report.html, report.md, report.json (every "
        f"check's samples), {extra}trace.json (open it in ui.perfetto.dev)"
    )
