"""``steptrace investigate``: the method end to end: capture, findings, each finding's check
run outside the profiler; Ctrl-C during the checks keeps what is known."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from steptrace.cli import printing
from steptrace.cli.app import app
from steptrace.cli.options import (
    FILE,
    FiniteRange,
    count,
    report_options,
    switch,
)
from steptrace.errors import CaptureError, TraceError
from steptrace.process import ctrl_c

if TYPE_CHECKING:
    from steptrace.pipeline import Analyzed


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
            target,
            path,
            checks=checks,
            budget_s=budget,
            say=printing.say,
            memory=memory,
            active=active,
        )
    except ImportError as error:
        printing.fail(f"investigate needs torch ({error})")
    except (CaptureError, TraceError) as error:
        printing.fail(str(error))
    except Interrupted as stop:  # Ctrl-C during the checks: what is known, then 130
        ctrl_c.settle()
        stopped, report = stop, stop.report
    from steptrace.pipeline import Analyzed, lanes_of

    lanes = lanes_of(report.analysis.trace.path) if output_format == "html" or out else None
    found = Analyzed(report, lanes)
    printing.reports([found], output_format, findings_only=findings_only, totals=totals, top=top)
    if out is not None:
        _reports_beside(path, found, totals=totals, top=top)
    if stopped is not None:
        printing.note(
            f"interrupted by Ctrl-C during the checks: the report above holds those done; "
            f"the trace is kept at {stopped.trace}"
        )
        printing.fail("aborted", 130)


def _reports_beside(trace: Path, found: Analyzed, *, totals: bool, top: int) -> None:
    """investigate --out: the report as JSON, Markdown and HTML beside the trace."""
    from steptrace.cli.rendering import FORMATS, written_beside
    from steptrace.report.sections.trace import View, report_document

    view = View(totals=totals, lanes=found.lanes)  # whole, whatever is shown: render reads it
    document = report_document(found.report.top(top), view)
    try:
        made = written_beside(trace, dict.fromkeys(FORMATS, document))
    except OSError as error:
        printing.fail(f"the reports could not be written: {error}", 1)
    printing.note("reports " + ", ".join(str(p) for p in made))
