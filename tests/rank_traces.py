"""Plain-Python readings of rank traces, independent of steptrace: the tests' reference.

Reads the raw Chrome-trace JSON with the standard library (``json``, numbers as
``Decimal``, times as integer nanoseconds) and answers what the rank fixtures promise:
which steps, which threads, how long each label lasted in each step, when the gloo
collectives ended.
"""

from __future__ import annotations

import gzip
import json
import statistics
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

GLOO_THREAD = "pt_gloo_runloop"


class Span(NamedTuple):
    name: str
    tid: int
    start_ns: int
    end_ns: int
    cat: str


def load(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    document: dict[str, Any] = json.loads(raw, parse_float=Decimal)
    return document


def ns(value: Decimal | int) -> int:
    """µs as written -> integer ns (Kineto writes at most three decimals)."""
    return int(Decimal(value) * 1000)


def spans(document: dict[str, Any]) -> list[Span]:
    """Every complete (``X``) event, times in integer ns."""
    return [
        Span(e["name"], e["tid"], ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e.get("cat", ""))
        for e in document["traceEvents"]
        if e.get("ph") == "X"
    ]


def thread_names(document: dict[str, Any]) -> dict[int, set[str]]:
    """Every name given to each thread: torch 2.13 names a gloo thread twice, once
    ``thread N (python)`` and once ``thread N (pt_gloo_runloop)``, in either order."""
    names: dict[int, set[str]] = {}
    for e in document["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names.setdefault(e["tid"], set()).add(e["args"]["name"])
    return names


def gloo_threads(document: dict[str, Any]) -> set[int]:
    return {
        tid for tid, names in thread_names(document).items() if any(GLOO_THREAD in n for n in names)
    }


def steps(document: dict[str, Any]) -> list[Span]:
    found = [s for s in spans(document) if s.name.startswith("ProfilerStep#")]
    return sorted(found, key=lambda s: s.start_ns)


def label_ms(document: dict[str, Any], label: str) -> list[float]:
    """Per ProfilerStep, the ms spent in ``label`` (its spans starting in that step)."""
    labelled = [s for s in spans(document) if s.name == label and s.cat == "user_annotation"]
    return [
        sum(s.end_ns - s.start_ns for s in labelled if step.start_ns <= s.start_ns < step.end_ns)
        / 1e6
        for step in steps(document)
    ]


def gloo_spans(document: dict[str, Any]) -> list[Span]:
    """``gloo:*`` events on the gloo threads, by start."""
    threads = gloo_threads(document)
    found = [s for s in spans(document) if s.name.startswith("gloo:") and s.tid in threads]
    return sorted(found, key=lambda s: s.start_ns)


def absolute_ns(document: dict[str, Any], value_ns: int) -> int:
    """A trace time -> host wall-clock ns (``baseTimeNanoseconds`` + ts)."""
    return int(document["baseTimeNanoseconds"]) + value_ns


def gloo_ends_ns(document: dict[str, Any]) -> list[int]:
    """Host wall-clock ends of the gloo collectives, in order."""
    return [absolute_ns(document, s.end_ns) for s in gloo_spans(document)]


def excess_over_others_ms(values: list[list[float]], rank: int) -> list[float]:
    """Per step: ``rank``'s value minus the median of the other ranks' values."""
    return [
        values[rank][k] - statistics.median(v[k] for r, v in enumerate(values) if r != rank)
        for k in range(len(values[rank]))
    ]
