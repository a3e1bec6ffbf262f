"""steptrace: question-first performance analysis of PyTorch profiler traces.

>>> import steptrace
>>> result = steptrace.analyze("trace.json.gz")   # doctest: +SKIP
>>> result.summary.wall_ms.median                  # doctest: +SKIP

Analysis needs no torch. Every name is imported on first use only: the capture names
(``profile_training``, ``capture``, ...) with torch, the analysis with numpy; so the
command line starts reading a trace before those imports are done.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.errors import CaptureError, TraceError
from steptrace.lazy import lazy_names

if TYPE_CHECKING:
    from steptrace.analysis.analyze import TraceAnalysis, analyze, analyze_trace
    from steptrace.harness import (
        Capture,
        CaptureResult,
        Workload,
        capture,
        profile_inference,
        profile_training,
    )
    from steptrace.scenario import Scenario
    from steptrace.trace.load import load_trace
    from steptrace.validate import Comparison, compare

_NEED_TORCH = ("steptrace.harness", "steptrace.validate")
_MODULE_OF = {
    **dict.fromkeys(("TraceAnalysis", "analyze", "analyze_trace"), "steptrace.analysis.analyze"),
    "Scenario": "steptrace.scenario",
    "load_trace": "steptrace.trace.load",
    **dict.fromkeys(
        (
            "Capture",
            "CaptureResult",
            "Workload",
            "capture",
            "profile_inference",
            "profile_training",
        ),
        "steptrace.harness",
    ),
    **dict.fromkeys(("Comparison", "compare"), "steptrace.validate"),
}

__all__ = [
    "Capture",
    "CaptureError",
    "CaptureResult",
    "Comparison",
    "Scenario",
    "TraceAnalysis",
    "TraceError",
    "Workload",
    "analyze",
    "analyze_trace",
    "capture",
    "compare",
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
