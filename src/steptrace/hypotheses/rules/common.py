"""Helpers the rules share: medians over steps, evidence figures, where to look."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence

from steptrace.analysis.measure import StepResult, TraceAnalysis
from steptrace.analysis.phases import DATA_READ as INPUT_LABEL
from steptrace.hypotheses.finding import Evidence, Figure, Unit, Value, Where

__all__ = ["INPUT_LABEL", "TRANSFER_LABEL", "evidence", "median", "where"]

TRANSFER_LABEL = re.compile(r"transfer|to_device|h2d|copy_batch", re.I)


def median(values: Iterable[float]) -> float:
    data = list(values)
    return float(statistics.median(data)) if data else 0.0


def where(analysis: TraceAnalysis, steps: Sequence[StepResult] | None = None) -> Where:
    """Which steps, and their time range as written in the trace (µs), for a viewer."""
    chosen = list(steps) if steps is not None else list(analysis.steps)
    first, last = chosen[0], chosen[-1]
    streams = sorted({x for s in chosen if s.gpu for x in s.gpu.streams})
    return Where(
        steps=tuple(s.name for s in chosen),
        time_us=(first.start_us, last.start_us + last.wall_ms * 1000),
        thread=first.thread,
        streams=tuple(streams) or None,
    )


def evidence(place: Where, *figures: tuple[str, Value, Unit]) -> Evidence:
    """Evidence from ``(name, value, unit)`` triples, in the order given."""
    return Evidence(tuple(Figure(name, value, unit) for name, value, unit in figures), place)
