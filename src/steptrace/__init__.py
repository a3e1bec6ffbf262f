"""steptrace: question-first performance analysis of PyTorch profiler traces.

>>> import steptrace
>>> report = steptrace.analyze("trace.json.gz")   # doctest: +SKIP
>>> report.analysis.summary.wall_ms.median          # doctest: +SKIP

Analysis needs no torch. Every name is imported on first use only: the capture names
(``profile_training``, ``capture``, ...) with torch, the analysis with numpy; so the
command line starts reading a trace before those imports are done. The errors it raises
are in ``steptrace.errors`` (``TraceError``, ``CaptureError``); a workload for
``investigate`` is a ``steptrace.capturing.Workload``.
"""

from __future__ import annotations

from steptrace.process.ctrl_c import guard_start as _guard_start

_guard_start()  # first: a Ctrl-C during the command line's imports is one line (ctrl_c)

from typing import TYPE_CHECKING  # noqa: E402

from steptrace.lazy import lazy_names  # noqa: E402

if TYPE_CHECKING:
    from steptrace.across.ranks.rank_thresholds import RankThresholds
    from steptrace.capturing import capture, profile_inference, profile_training
    from steptrace.capturing.loader_spans import LoaderSpans
    from steptrace.hypotheses import Finding, Thresholds
    from steptrace.investigation import investigate
    from steptrace.pipeline import analyze, analyze_ranks, analyze_trace, diff
    from steptrace.report.model import RanksReport, Report
    from steptrace.scenario import Scenario
    from steptrace.trace.load import load_trace
    from steptrace.validate import compare
    from steptrace.window import Window

_NEED_TORCH = ("steptrace.capturing", "steptrace.validate", "steptrace.investigation")
_MODULE_OF = {
    **dict.fromkeys(("analyze", "analyze_ranks", "analyze_trace", "diff"), "steptrace.pipeline"),
    **dict.fromkeys(("RanksReport", "Report"), "steptrace.report.model"),
    **dict.fromkeys(("Finding", "Thresholds"), "steptrace.hypotheses"),
    "RankThresholds": "steptrace.across.ranks.rank_thresholds",
    "Scenario": "steptrace.scenario",
    "Window": "steptrace.window",
    "load_trace": "steptrace.trace.load",
    **dict.fromkeys(("capture", "profile_inference", "profile_training"), "steptrace.capturing"),
    "compare": "steptrace.validate",
    "investigate": "steptrace.investigation",
    "LoaderSpans": "steptrace.capturing.loader_spans",
}

__all__ = [
    "Finding",
    "LoaderSpans",
    "RankThresholds",
    "RanksReport",
    "Report",
    "Scenario",
    "Thresholds",
    "Window",
    "analyze",
    "analyze_ranks",
    "analyze_trace",
    "capture",
    "compare",
    "diff",
    "investigate",
    "load_trace",
    "profile_inference",
    "profile_training",
]


if not TYPE_CHECKING:  # so that type checkers still reject names that do not exist
    __getattr__, __dir__ = lazy_names(
        __name__,
        _MODULE_OF,
        unlisted=[n for n, m in _MODULE_OF.items() if m.startswith(_NEED_TORCH)],
    )
