"""``steptrace compare``: an A/B outside the profiler, correctness first, then timing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from steptrace.cli import printing
from steptrace.cli.app import app
from steptrace.cli.options import (
    FILE,
    FiniteRange,
    count,
    switch,
)
from steptrace.errors import CaptureError, raised_at


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
    from steptrace.process.user_code import running_user_code

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
        printing.fail(f"compare needs torch and scipy ({error})")
    except CaptureError as error:
        printing.fail(str(error))
    except Exception as error:  # the user's state, batches or steps failed: one line
        printing.fail(f"the comparison stopped: {raised_at(error)}")
    from steptrace.report.sections.checks import comparison_document

    printing.write([comparison_document(result, (baseline, candidate))], "text")
    if json_out is not None:
        printing.note(f"raw values in {result.write_json(json_out)}")
    if csv_out is not None:
        printing.note(f"raw step times in {result.write_csv(csv_out)}")
