"""steptrace: question-first performance analysis of PyTorch profiler traces.

>>> import steptrace
>>> result = steptrace.analyze("trace.json.gz")   # doctest: +SKIP
>>> result.summary.wall_ms.median                  # doctest: +SKIP

Analysis needs no torch. The capture names (``profile_training``, ``capture``, ...) are
imported from ``steptrace.harness``, and torch with them, on first use only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from steptrace.analysis.analyze import TraceAnalysis, analyze, analyze_trace
from steptrace.errors import CaptureError, TraceError
from steptrace.scenario import Scenario
from steptrace.trace.load import load_trace

if TYPE_CHECKING:
    from steptrace.harness import (
        Capture,
        CaptureResult,
        Workload,
        capture,
        profile_inference,
        profile_training,
    )
    from steptrace.validate import Comparison, compare

_HARNESS = frozenset(
    {"Capture", "CaptureResult", "Workload", "capture", "profile_inference", "profile_training"}
)
_VALIDATE = frozenset({"Comparison", "compare"})

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


def __getattr__(name: str) -> Any:
    """Import the capture side (and torch) only when one of its names is used."""
    if name in _HARNESS:
        return getattr(importlib.import_module("steptrace.harness"), name)
    if name in _VALIDATE:
        return getattr(importlib.import_module("steptrace.validate"), name)
    raise AttributeError(f"module 'steptrace' has no attribute {name!r}")
