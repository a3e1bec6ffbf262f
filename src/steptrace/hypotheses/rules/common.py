"""Helpers the rules share: medians over steps and where to look in the timeline."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from steptrace.analysis.phases import DATA_READ as INPUT_LABEL

if TYPE_CHECKING:
    from steptrace.analysis.analyze import StepResult, TraceAnalysis

__all__ = ["INPUT_LABEL", "TRANSFER_LABEL", "median", "where"]

TRANSFER_LABEL = re.compile(r"transfer|to_device|h2d|copy_batch", re.I)


def median(values: Iterable[float]) -> float:
    data = list(values)
    return float(statistics.median(data)) if data else 0.0


def where(
    analysis: TraceAnalysis, steps: Iterable[StepResult] | None = None, **extra: Any
) -> dict[str, Any]:
    """Which steps, and their time range as written in the trace (µs), for a viewer."""
    chosen = list(steps) if steps is not None else list(analysis.steps)
    first, last = chosen[0], chosen[-1]
    streams = sorted({x for s in chosen if s.gpu for x in s.gpu.streams})
    return {
        "steps": [s.name for s in chosen],
        "time_us": [first.start_us, last.start_us + last.wall_ms * 1000],
        "thread": first.thread,
        "streams": streams or None,
        **extra,
    }


def step_span(analysis: TraceAnalysis) -> str:
    count = len(analysis.steps)
    return "the window" if count == 1 else f"{count} steps"
