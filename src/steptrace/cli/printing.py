"""What the command prints: the reports on stdout; errors, warnings, notes and progress on
stderr, each one line (text from a trace made visible)."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, NoReturn

from steptrace.process import ctrl_c
from steptrace.safe_text import one_line, visible

if TYPE_CHECKING:
    from steptrace.pipeline import Analyzed
    from steptrace.report.document import Document
    from steptrace.report.model import Report


def reports(
    found: list[Analyzed],
    output_format: str,
    *,
    findings_only: bool = False,
    totals: bool = False,
    top: int,
) -> None:
    """Each report, its first ``top`` operators and kernels listed, and its lanes drawn
    (HTML); their warnings on stderr."""
    from steptrace.report.sections.trace import View, report_document

    documents = []
    for report, lanes in found:
        path = report.analysis.trace.path
        for warning in report.analysis.trace.warnings + report.warnings:
            warn(f"{path}: {warning}")
        view = View(findings_only=findings_only, totals=totals, lanes=lanes)
        documents.append(report_document(report.top(top), view))
    write(documents, output_format)


def order_of(report: Report) -> tuple[bool, int, str]:
    """Rank traces by rank, then the others by path."""
    trace = report.analysis.trace
    return (trace.rank is None, trace.rank or 0, trace.path)


def write(documents: list[Document], output_format: str) -> None:
    from steptrace.report.formats.renderers import renderer

    sys.stdout.write(renderer(output_format, terminal=sys.stdout.isatty()).render(documents))


def say(line: str) -> None:
    """A line of progress on stderr, timed."""
    print(f"[{time.strftime('%H:%M:%S')}] {visible(line)}", file=sys.stderr, flush=True)


def fail(message: str, code: int = 2) -> NoReturn:
    if ctrl_c.interrupted():  # what Ctrl-C broke on its way (a half-started profiler)
        message, code = "aborted", 130
    print(f"steptrace: error: {one_line(message)}", file=sys.stderr)
    raise SystemExit(code)


def warn(message: str) -> None:
    print(f"steptrace: warning: {one_line(message)}", file=sys.stderr)


def note(message: str) -> None:
    print(f"steptrace: {one_line(message)}", file=sys.stderr)
