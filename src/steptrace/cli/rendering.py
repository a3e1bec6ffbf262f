"""One run, every format: a saved report rendered again (``steptrace render``) and
``investigate --out``'s reports written beside its trace.

A saved report keeps its trace's path (``analysis.trace.path``): the HTML timeline is
rebuilt from that trace when it is still there (as given, else beside the report), and
said missing otherwise. Files are written whole or not at all, never over one that exists
(``outputs.write_new``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from steptrace.analysis.timeline.model import Lanes
    from steptrace.report.document import Document
    from steptrace.report.model import Report

FORMATS = ("json", "md", "html")  # what investigate --out writes, in this order
Say = Callable[[str], None]


def saved_report(path: Path) -> Report:
    """The report saved at ``path`` (``--format json``), or a one-line ``TraceError``."""
    from steptrace.errors import TraceError
    from steptrace.pipeline import is_saved_report, read_report

    if not is_saved_report(path):
        raise TraceError(
            f"{path}: not a saved steptrace report (write one with `steptrace analyze "
            "--format json` or `steptrace investigate --out`); to analyze a trace: "
            "`steptrace analyze`"
        )
    return read_report(path)


def timeline_of(report: Report, beside: Path | None, say: Say) -> Lanes | None:
    """The lanes of the report's trace, rebuilt from the file when it is there; else None,
    said in one line."""
    from steptrace.pipeline import lanes_of

    given = Path(report.analysis.trace.path)
    for candidate in (given, *([beside / given.name] if beside is not None else [])):
        if candidate.is_file():
            return lanes_of(candidate)
    say(f"the trace {given} is not there: the timeline is left out of the HTML")
    return None


def written_beside(trace: Path, documents: dict[str, Document]) -> list[Path]:
    """Each format's rendering of the documents in a new file ``<trace stem>.report.<ext>``
    beside the trace: JSON, Markdown and HTML from one run."""
    from steptrace.process.outputs import write_new
    from steptrace.report.formats.renderers import renderer

    stem = trace.name.removesuffix(".gz").removesuffix(".json")
    made = []
    for name in FORMATS:
        text = renderer(name).render([documents[name]])
        made.append(write_new(trace.with_name(f"{stem}.report.{name}"), text.encode("utf-8")))
    return made
