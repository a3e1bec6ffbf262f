"""JSON renderer: the analysis as written by ``msgspec`` (schema ``steptrace.analysis/1``)."""

from __future__ import annotations

import msgspec

from steptrace.analysis.analyze import TraceAnalysis


def render_json(results: list[TraceAnalysis]) -> str:
    """One object for one trace, a list of objects for several."""
    payload: object = results[0] if len(results) == 1 else results
    return msgspec.json.format(msgspec.json.encode(payload).decode(), indent=2) + "\n"
