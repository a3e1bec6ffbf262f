"""The ``steptrace`` command line: a thin layer over the library."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

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


@app.callback()
def _main() -> None:
    """steptrace: question-first analysis of PyTorch profiler traces, on the timeline."""


@app.command()
def analyze(
    traces: Annotated[
        list[Path], typer.Argument(help="Trace files (.json, .json.gz) or folders of rank traces.")
    ],
    output_format: Annotated[
        Format, typer.Option("--format", "-f", help="text (terminal), json or md.")
    ] = Format.text,
    top: Annotated[int, typer.Option(min=1, help="Operators and kernels to list.")] = 15,
) -> None:
    """Measure traces on the timeline: step time, labels, GPU busy/idle, operators, kernels."""
    from steptrace.analysis.analyze import analyze as analyze_file
    from steptrace.inputs import trace_files

    try:
        results = [analyze_file(path).top(top) for path in trace_files(traces)]
    except TraceError as error:
        _fail(str(error))
    results.sort(key=lambda r: (r.trace.rank is None, r.trace.rank or 0, r.trace.path))
    for result in results:
        for warning in result.trace.warnings:
            print(f"steptrace: warning: {result.trace.path}: {warning}", file=sys.stderr)
    _emit(results, output_format)


def _emit(results: list, output_format: Format) -> None:  # type: ignore[type-arg]
    if output_format is Format.json:
        from steptrace.report.json import render_json

        sys.stdout.write(render_json(results))
    elif output_format is Format.md:
        from steptrace.report.markdown import render_markdown

        sys.stdout.write(render_markdown(results))
    else:
        from rich.console import Console

        from steptrace.report.text import render_text

        console = Console() if sys.stdout.isatty() else Console(width=160, color_system=None)
        render_text(results, console)


def _fail(message: str) -> typer.Exit:
    print(f"steptrace: error: {message}", file=sys.stderr)
    raise typer.Exit(code=2)


def main() -> None:
    """Console-script entry point."""
    app()
