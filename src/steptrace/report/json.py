"""JSON renderer: the analysis as written by ``msgspec`` (schema ``steptrace.analysis/1``)."""

from __future__ import annotations

import msgspec

from steptrace.analysis.analyze import TraceAnalysis

FINDINGS_ONLY = ("schema", "trace", "scenario", "capture", "findings", "thresholds")


def render_json(results: list[TraceAnalysis], *, findings_only: bool = False) -> str:
    """One object for one trace, a list of objects for several."""
    chosen: list[object] = list(results)
    if findings_only:
        chosen = [{k: getattr(r, k) for k in FINDINGS_ONLY} for r in results]
    payload: object = chosen[0] if len(chosen) == 1 else chosen
    return msgspec.json.format(msgspec.json.encode(payload).decode(), indent=2) + "\n"
