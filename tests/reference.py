"""Obviously-correct reference computations, from the raw JSON, in plain Python.

Slow and simple on purpose: loops, sorting and merging, no numpy, no steptrace code.
"""

from __future__ import annotations

import re
from typing import Any

GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
STEP = re.compile(r"^ProfilerStep#\d+$")


def complete_events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and "dur" in e and "ts" in e]


def step_windows(doc: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(name, start, end) of the CPU-side ProfilerStep spans, in time order."""
    steps = [
        (e["name"], float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in complete_events(doc)
        if STEP.match(e["name"]) and e.get("cat") in ("user_annotation", "Operator")
    ]
    return sorted(steps, key=lambda s: s[1])


def merged_length(spans: list[tuple[float, float]]) -> float:
    """Length of the union of spans: sort, merge, add."""
    total, current = 0.0, None
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if current is None or start > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = [start, end]
        else:
            current[1] = max(current[1], end)
    if current is not None:
        total += current[1] - current[0]
    return total


def gpu_busy_us(doc: dict[str, Any], lo: float, hi: float) -> float:
    spans = []
    for e in complete_events(doc):
        if e.get("cat") in GPU_CATEGORIES:
            start, end = float(e["ts"]), float(e["ts"]) + float(e["dur"])
            spans.append((max(start, lo), min(end, hi)))
    return merged_length(spans)


def kernel_table(doc: dict[str, Any]) -> dict[str, list[float]]:
    """Kernel name -> list of its durations (µs)."""
    table: dict[str, list[float]] = {}
    for e in complete_events(doc):
        if e.get("cat") in ("kernel", "Kernel"):
            table.setdefault(e["name"], []).append(float(e["dur"]))
    return table
