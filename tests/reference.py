"""Obviously-correct reference computations, from the raw JSON, in plain Python.

Slow and simple on purpose: loops, sorting and merging, no numpy, no steptrace code. Every
time is an integer number of nanoseconds, read exactly from the JSON text (``Decimal``),
from the trace's origin: the earliest ``ts`` of a usable complete event.
"""

from __future__ import annotations

import gzip
import heapq
import json
import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from itertools import pairwise
from pathlib import Path
from typing import Any

GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
KERNEL_CATEGORIES = {"kernel", "Kernel"}
STEP = re.compile(r"^ProfilerStep#\d+$")
_BACKWARD_NODE = re.compile(r"Backward\d*$")
_LIMIT_NS = 2**62


def read_exact(path: Path) -> Any:
    """The trace with every JSON decimal as a ``Decimal``: nothing rounded."""
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw, parse_float=Decimal)


def ns(value: Any) -> int | None:
    """Microseconds as written -> integer nanoseconds (half up), or None if unusable."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    try:
        exact = Decimal(value) * 1000
    except InvalidOperation:
        return None
    if not exact.is_finite():
        return None
    result = int(exact.to_integral_value(ROUND_HALF_UP))
    return result if abs(result) < _LIMIT_NS else None


def complete_events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and "dur" in e and "ts" in e]


@dataclass(frozen=True)
class Ev:
    """One usable complete event, times in integer ns from the origin."""

    name: str
    cat: str
    thread: tuple[str, str]
    start: int
    end: int
    raw: dict[str, Any]

    @property
    def dur(self) -> int:
        return self.end - self.start


def events(doc: dict[str, Any]) -> list[Ev]:
    """Usable complete events (numeric ts and dur >= 0), sorted by start, longer first."""
    usable = []
    for e in complete_events(doc):
        start, dur = ns(e["ts"]), ns(e["dur"])
        if start is None or dur is None or dur < 0 or abs(start + dur) >= _LIMIT_NS:
            continue
        thread = (str(e.get("pid", "")).strip(), str(e.get("tid", "")).strip())
        usable.append((start, dur, e, thread))
    if not usable:
        return []
    origin = min(start for start, _, _, _ in usable)
    out = [
        Ev(str(e.get("name", "")), str(e.get("cat", "")), th, s - origin, s - origin + d, e)
        for s, d, e, th in usable
    ]
    return sorted(out, key=lambda ev: (ev.start, -ev.dur))


def is_cpu_op(e: Ev) -> bool:
    if e.cat == "cpu_op":
        return True
    if e.cat.lower() != "operator":
        return False
    has_inputs = bool((e.raw.get("args") or {}).get("Input Dims"))
    return "::" in e.name or has_inputs or bool(_BACKWARD_NODE.search(e.name))


def is_label(e: Ev) -> bool:
    """A ``record_function`` label (step markers included)."""
    return e.cat == "user_annotation" or (e.cat.lower() == "operator" and not is_cpu_op(e))


HOST_WORK_CATEGORIES = {
    "cpu_op",
    "python_function",
    "cuda_runtime",
    "cuda_driver",
    "runtime",
    "python",
}


def is_recorded_work(e: Ev) -> bool:
    """Work the trace records: a host operator, Python function, runtime or driver call, a
    gloo collective's label, GPU work (labels alone record none)."""
    return (
        e.cat.lower() in HOST_WORK_CATEGORIES
        or is_cpu_op(e)
        or (is_label(e) and e.name.startswith("gloo:"))
        or e.cat in GPU_CATEGORIES
    )


SILENCE_NS = 100_000
EDGE_NS = 1_000_000  # the loop's turn and the profiler's step call at each step's edge


def is_host_event(e: Ev) -> bool:
    """What the host records: its work, or a label other than a step marker."""
    work = is_recorded_work(e) and e.cat not in GPU_CATEGORIES
    return work or (is_label(e) and not STEP.match(e.name))


def step_edges(evs: list[Ev], windows: list[tuple[str, int, int]]) -> list[tuple[int, int]]:
    """Each window's edges before its first and after its last host event, ``EDGE_NS`` at
    most each."""
    host = [(e.start, e.end) for e in evs if is_host_event(e) and e.end > e.start]
    out = []
    for _, lo, hi in windows:
        inside = [(a, b) for a, b in host if a < hi and b > lo]
        first = max(lo, min(a for a, _ in inside)) if inside else hi
        last = min(hi, max(b for _, b in inside)) if inside else lo
        out += [(lo, min(first, lo + EDGE_NS)), (max(last, hi - EDGE_NS), hi)]
    return out


def silences(evs: list[Ev], windows: list[tuple[str, int, int]]) -> list[tuple[int, int]]:
    """The gaps of at least ``SILENCE_NS`` between the recorded work and the steps' edges,
    merged over the whole trace, from the first window's or event's start to the last
    one's end."""
    work = [(e.start, e.end) for e in evs if is_recorded_work(e) and e.end > e.start]
    spans = sorted(work + [(a, b) for a, b in step_edges(evs, windows) if b > a])
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    lo = min([w[1] for w in windows] + [m[0] for m in merged[:1]])
    hi = max([w[2] for w in windows] + [m[1] for m in merged[-1:]])
    edges = [lo] + [x for m in merged for x in m] + [hi]
    gaps = [(edges[k], edges[k + 1]) for k in range(0, len(edges), 2)]
    return [(a, b) for a, b in gaps if b - a >= SILENCE_NS]


def unrecorded_ns(silent: list[tuple[int, int]], lo: int, hi: int) -> int:
    """The time in [lo, hi] inside the ``silences``."""
    return sum(max(0, min(hi, b) - max(lo, a)) for a, b in silent)


def step_windows(evs: list[Ev]) -> list[tuple[str, int, int]]:
    """(name, start, end) of the CPU-side ProfilerStep spans, in time order."""
    return [(e.name, e.start, e.end) for e in evs if STEP.match(e.name) and is_label(e)]


def counted_windows(evs: list[Ev]) -> list[tuple[str, int, int]]:
    """The step windows less a profiler's stop marker: the last of several, shorter than
    every other, that no recorded work and no label other than a step marker overlaps."""
    windows = step_windows(evs)
    if len(windows) < 2:
        return windows
    _, lo, hi = windows[-1]
    shortest = all(hi - lo < b - a for _, a, b in windows[:-1])
    inside = [e for e in evs if e.start < hi and e.end > lo]
    empty = not any(is_recorded_work(e) or (is_label(e) and not STEP.match(e.name)) for e in inside)
    return windows[:-1] if shortest and empty else windows


def merged_length(spans: list[tuple[int, int]]) -> int:
    """Length of the union of spans: sort, merge, add."""
    total, current = 0, None
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


def busy_ns(evs: list[Ev], lo: int, hi: int) -> int:
    """Union of the given events' spans, clipped to [lo, hi]."""
    return merged_length([(max(e.start, lo), min(e.end, hi)) for e in evs])


def gpu_events(evs: list[Ev]) -> list[Ev]:
    return [e for e in evs if e.cat in GPU_CATEGORIES]


def kernel_table(evs: list[Ev]) -> dict[str, list[int]]:
    """Kernel name -> its durations (ns)."""
    table: dict[str, list[int]] = defaultdict(list)
    for e in evs:
        if e.cat in KERNEL_CATEGORIES:
            table[e.name].append(e.dur)
    return dict(table)


def operator_times(
    evs: list[Ev], counted: Callable[[Ev], bool] | None = None
) -> dict[str, tuple[int, int, int]]:
    """Operator name -> (calls, self ns, inclusive ns), swept thread by thread.

    Self time is the time an operator is the innermost open one (the one opened last, by
    start, longer first, then file order); an operator's parent is the innermost one open
    when it starts; inclusive time skips calls with an ancestor of the same name. With
    ``counted``, only the calls it accepts are summed (the nesting still sees every call).
    """
    accept = counted or (lambda _: True)
    by_thread: dict[tuple[str, str], list[Ev]] = defaultdict(list)
    for e in evs:
        if is_cpu_op(e):
            by_thread[e.thread].append(e)  # already in opening order
    calls: dict[str, int] = defaultdict(int)
    own: dict[str, int] = defaultdict(int)
    inclusive: dict[str, int] = defaultdict(int)
    for ops in by_thread.values():
        parent = _parents(ops)
        for k, e in enumerate(ops):
            if not accept(e):
                continue
            calls[e.name] += 1
            ancestor = parent[k]
            while ancestor >= 0 and ops[ancestor].name != e.name:
                ancestor = parent[ancestor]
            if ancestor < 0:
                inclusive[e.name] += e.dur
        for a, b, k in _pieces(ops):
            if accept(ops[k]):
                own[ops[k].name] += b - a
    return {n: (calls[n], own[n], inclusive[n]) for n in calls}


def _parents(ops: list[Ev]) -> list[int]:
    """Per event (in opening order): the last-opened earlier event still open, or -1."""
    heap: list[tuple[int, int]] = []  # (-index, end): the top is the last opened
    parent = []
    for k, e in enumerate(ops):
        while heap and heap[0][1] <= e.start:
            heapq.heappop(heap)  # closed; anything under it that closed goes when it surfaces
        parent.append(-heap[0][0] if heap else -1)
        heapq.heappush(heap, (-k, e.end))
    return parent


def _pieces(ops: list[Ev]) -> list[tuple[int, int, int]]:
    """(a, b, k): between consecutive boundaries, the last-opened open event ``k``."""
    cuts = sorted({t for e in ops for t in (e.start, e.end)})
    heap: list[tuple[int, int]] = []
    pieces = []
    k = 0
    for a, b in pairwise(cuts):
        while k < len(ops) and ops[k].start <= a:
            heapq.heappush(heap, (-k, ops[k].end))
            k += 1
        while heap and heap[0][1] <= a:
            heapq.heappop(heap)
        if heap:
            pieces.append((a, b, -heap[0][0]))
    return pieces


def label_exclusive(evs: list[Ev], lo: int, hi: int) -> dict[str, int]:
    """Label name -> ns inside [lo, hi] during which it is the innermost open label.

    Each thread's time is cut at every label boundary; a piece belongs to the open label
    opened last. A name's pieces on several threads are merged, not added: concurrent time
    counts once. Step markers are not labels here.
    """
    by_thread: dict[tuple[str, str], list[Ev]] = defaultdict(list)
    for e in evs:
        if is_label(e) and not STEP.match(e.name):
            by_thread[e.thread].append(e)
    owned: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for labels in by_thread.values():
        for a, b, k in _pieces(labels):
            owned[labels[k].name].append((max(a, lo), min(b, hi)))
    return {name: merged_length(pieces) for name, pieces in owned.items()}


def label_inclusive(evs: list[Ev], lo: int, hi: int) -> dict[str, int]:
    """Label name -> the union of its spans clipped to [lo, hi] (markers excluded)."""
    spans: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for e in evs:
        if is_label(e) and not STEP.match(e.name):
            spans[e.name].append((max(e.start, lo), min(e.end, hi)))
    return {name: merged_length(s) for name, s in spans.items()}


def median(values: list[int]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def launched_gpu_ns(
    evs: list[Ev], counted: Callable[[Ev], bool] | None = None
) -> dict[str, tuple[int, int]]:
    """Operator name -> (count, summed ns) of the GPU work it launched.

    A GPU activity's launch is the runtime or driver call with its ``correlation``; the
    operator is the innermost one open around that call on the call's thread. With
    ``counted``, only the work of the operator calls it accepts.
    """
    calls = {}
    for e in evs:
        if e.cat in ("cuda_runtime", "cuda_driver", "Runtime", "runtime"):
            correlation = (e.raw.get("args") or {}).get("correlation")
            if correlation is not None:
                calls.setdefault(correlation, e)
    ops_by_thread: dict[tuple[str, str], list[Ev]] = defaultdict(list)
    for e in evs:
        if is_cpu_op(e):
            ops_by_thread[e.thread].append(e)  # in opening order
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for g in gpu_events(evs):
        call = calls.get((g.raw.get("args") or {}).get("correlation"))
        if call is None:
            continue
        inner = innermost(ops_by_thread[call.thread], call.start)
        if inner is None or (counted is not None and not counted(inner)):
            continue
        out[inner.name][0] += 1
        out[inner.name][1] += g.dur
    return {name: (c, d) for name, (c, d) in out.items()}


def innermost(ops: list[Ev], t: int) -> Ev | None:
    """The last event in ``ops`` (opening order) open at ``t``: ``start <= t < end``.

    The same event as ``[o for o in ops if o.start <= t < o.end][-1]`` (on equal spans, the
    later in the file), found by walking back from the last event that started by ``t``
    instead of scanning every event.
    """
    for k in range(bisect_right(ops, t, key=lambda o: o.start) - 1, -1, -1):
        if ops[k].end > t:
            return ops[k]
    return None
