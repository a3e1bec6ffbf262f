"""The DataLoader's workers on the timeline: per step, one lane per worker.

Contract: ``worker_spans(log, events, windows, base_time_ns, name_base) -> WorkerSpans |
None`` (None without worker files or without ``baseTimeNanoseconds``) reads the workers'
files (``analysis.loader.log``) once onto the table's clock: a worker's ``time.time_ns``
minus ``baseTimeNanoseconds`` minus the table's ``origin_ns`` is ns from the table's time
zero, exactly. ``worker_lanes(spans, events, window, resolution_ns, drawn, first_id)``
then gives a step's lanes and waits, pure:

- a lane per worker alive in the step (its first recorded start to its last end overlap
  the window), in worker order: each sample read a bar named by its index, each collate a
  bar, both with the number k of their batch in the iterator (``WorkerLane.batches``). A
  span shows the part of it inside the window ``[start, end)`` (clipped): those that start
  in it or are running at its start. Merged like every lane (``merge``);
- the step's waits: each DataLoader ``__next__`` call starting in the window joined to the
  batch it received, and the bars of that batch name the call's bar as their ``owner``.

The join: the main process's record of a ``next`` whose span holds the trace's call
(within ``TOLERANCE_NS``, the nearest) gives k and its iterator; batch k came from the
iterator's worker k mod n (its ``pids``), that worker's (k // n)-th batch of its epoch
(the iterators before this one that had its process): ``analysis.loader.figure`` joins
them the same way.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.loader.figure import batches_by_number
from steptrace.analysis.loader.log import LoaderLog, MainNext, WorkerLog
from steptrace.analysis.time.steps import StepWindow
from steptrace.analysis.timeline.merge import merge
from steptrace.analysis.timeline.model import (
    COLLATE,
    NAME_CHARS,
    SAMPLE,
    BatchWait,
    Lane,
    Rows,
    WorkerLane,
    WorkerSpans,
)
from steptrace.trace.table import EventTable

TOLERANCE_NS = 1_000_000  # a next's record holds the trace's call within this
LOADER, NEXT = "DataLoader", "__next__"

Index = int | str | list[int | str]


def worker_spans(
    log: LoaderLog | None,
    events: EventTable,
    windows: tuple[StepWindow, ...],
    base_time_ns: int | None,
    name_base: int,
) -> tuple[WorkerSpans, tuple[str, ...]] | None:
    """The workers' spans overlapping the windows, and their names (indexed from
    ``name_base``); None without workers or a clock to put them on."""
    if log is None or base_time_ns is None or not windows:
        return None
    zero = base_time_ns + events.origin_ns
    lo = min(round(w.start_us * 1000) for w in windows)
    hi = max(round(w.end_us * 1000) for w in windows)
    numbers = _numbers(log)
    order = sorted(log.workers, key=lambda w: (w.worker, w.pid))
    names: dict[str, int] = {}
    rows: list[tuple[int, int, int, int, int, int]] = []
    life = np.full((len(order), 2), -1, dtype=np.int64)  # no work: in no step (from 0 on)
    for lane, worker in enumerate(order):
        spans = list(_spans(worker, numbers, zero))
        if spans:
            life[lane] = min(s for s, _, _, _, _ in spans), max(e for _, e, _, _, _ in spans)
        for start, end, kind, k, text in spans:
            if _inside(start, end, lo, hi):
                name = names.setdefault(text[:NAME_CHARS], name_base + len(names))
                rows.append((lane, start, end, kind, k, name))
    table = np.array(rows, dtype=np.int64).reshape(-1, 6)
    calls = _calls(events)
    spans_of = WorkerSpans(
        workers=tuple((w.worker, w.pid) for w in order),
        lane=table[:, 0],
        start_ns=table[:, 1],
        end_ns=table[:, 2],
        kind=table[:, 3],
        batch=table[:, 4],
        name=table[:, 5],
        life_ns=life,
        calls=calls,
        received=_received(log, numbers, events, calls, zero),
    )
    return spans_of, tuple(names)


def worker_lanes(
    spans: WorkerSpans,
    events: EventTable,
    w: StepWindow,
    resolution_ns: int,
    drawn: dict[int, int],
    first_id: int,
) -> tuple[list[Lane], tuple[BatchWait, ...]]:
    """The step's worker lanes (bars numbered from ``first_id``) and its waits (``drawn``:
    CPU event row -> its bar's id)."""
    lo, hi = round(w.start_us * 1000), round(w.end_us * 1000)
    waits = _waits(spans, events, w, lo, drawn)
    owner_of = {wait.batch: wait.bar for wait in waits if wait.bar >= 0}
    lanes = []
    inside = np.flatnonzero(_inside_all(spans.start_ns, spans.end_ns, lo, hi))
    inside = inside[np.argsort(spans.start_ns[inside], kind="stable")]
    for lane, (worker, pid) in enumerate(spans.workers):
        first, last = spans.life_ns[lane].tolist()
        if not _inside(first, last, lo, hi):
            continue
        on = inside[spans.lane[inside] == lane]
        start = np.maximum(spans.start_ns[on], lo) - lo
        end = np.minimum(spans.end_ns[on], hi) - lo
        batch = spans.batch[on]
        owner = np.array([owner_of.get(k, -1) for k in batch.tolist()], dtype=np.int64)
        bars, bands, kept = merge(
            start,
            end - start,
            np.zeros(on.size, dtype=np.int64),
            spans.kind[on],
            spans.name[on],
            resolution_ns,
            first_id=first_id,
            owner=owner,
        )
        first_id += len(bars)
        lanes.append(
            Lane(
                name=f"DataLoader worker {worker} (pid {pid})",
                label=f"worker {worker} (pid {pid})",
                kind="worker",
                stream=None,
                device=None,
                depth=1,
                events=int(on.size),
                bars=bars,
                bands=bands,
                worker=WorkerLane(worker=worker, pid=pid, batches=tuple(batch[kept].tolist())),
            )
        )
    return lanes, waits


def waiting_thread(spans: WorkerSpans, events: EventTable, w: StepWindow) -> int:
    """The thread whose DataLoader calls start in the step (the first's), else the step's:
    the worker lanes go under its lane."""
    starts = events.start_us[spans.calls]
    rows = spans.calls[(starts >= w.start_us) & (starts < w.end_us)]
    return int(events.thread_id[rows.min()]) if rows.size else w.thread


def _waits(
    spans: WorkerSpans, events: EventTable, w: StepWindow, lo: int, drawn: dict[int, int]
) -> tuple[BatchWait, ...]:
    """The step's ``__next__`` calls (starting in it) joined to the batch each received."""
    starts = events.start_us[spans.calls]
    rows = spans.calls[(starts >= w.start_us) & (starts < w.end_us)]
    return tuple(
        BatchWait(
            batch=k,
            worker=worker,
            pid=pid,
            start_ns=round(float(events.start_us[row]) * 1000) - lo,
            dur_ns=round(float(events.dur_us[row]) * 1000),
            bar=drawn.get(row, -1),
        )
        for row in rows.tolist()
        if (found := spans.received.get(row)) is not None
        for k, worker, pid in (found,)
    )


def _inside(start: int, end: int, lo: int, hi: int) -> bool:
    """A span to draw in ``[lo, hi)``: started in it, or running at its start."""
    return lo <= start < hi or start < lo < end


def _inside_all(start: Rows, end: Rows, lo: int, hi: int) -> NDArray[np.bool_]:
    """``_inside`` of each span."""
    return ((start >= lo) & (start < hi)) | ((start < lo) & (end > lo))


class _Numbers(NamedTuple):
    of_batch: dict[tuple[int, int, int], int]  # (pid, epoch, batch) -> k
    made_by: dict[tuple[int, int], tuple[int, int]]  # (iterator, k) -> (worker id, pid)


def _numbers(log: LoaderLog) -> _Numbers:
    """Each worker batch's number k in its iterator, joined as the loader's figure joins
    them (``loader.figure.batches_by_number``)."""
    found = _Numbers({}, {})
    for (iterator, k), made in batches_by_number(log).items():
        pid = made.worker.pid
        found.of_batch[(pid, made.batch.epoch, made.batch.batch)] = k
        found.made_by[(iterator, k)] = (made.worker.worker, pid)
    return found


def _spans(worker: WorkerLog, numbers: _Numbers, zero: int) -> list[tuple[int, int, int, int, str]]:
    """The worker's samples and collates: (start, end, kind, k, name), ns from ``zero``."""
    out = []
    for batch in worker.batches:
        k = numbers.of_batch.get((worker.pid, batch.epoch, batch.batch), -1)
        whose = f"batch {k} from worker {worker.worker}" if k >= 0 else f"worker {worker.worker}"
        for sample in batch.samples:
            text = f"{_index_text(sample.index)} ({whose})"
            out.append((sample.start_ns - zero, sample.end_ns - zero, SAMPLE, k, text))
        start, end = batch.collate
        text = whose if k >= 0 else f"a batch of {whose}"
        out.append((start - zero, end - zero, COLLATE, k, text))
    return out


def _index_text(index: Index) -> str:
    """A sample's index as written (a ``__getitems__`` read: its list)."""
    if isinstance(index, list):
        return "[" + ", ".join(str(i) for i in index) + "]"
    return str(index)


def _calls(events: EventTable) -> Rows:
    """The table rows of the DataLoader ``__next__`` calls."""
    ids = [i for i, n in enumerate(events.names) if LOADER in n and NEXT in n]
    if not ids:
        return np.zeros(0, dtype=np.int64)
    found: Rows = np.flatnonzero(np.isin(events.name_id, np.array(ids, dtype=np.int64)))
    return found.astype(np.int64)


def _received(
    log: LoaderLog, numbers: _Numbers, events: EventTable, calls: Rows, zero: int
) -> dict[int, tuple[int, int, int]]:
    """Per call row: (k, worker id, pid) of the batch it received, when joined."""
    out = {}
    for row in calls.tolist():
        start = round(float(events.start_us[row]) * 1000)
        end = start + round(float(events.dur_us[row]) * 1000)
        record = _record_of(log.nexts, start, end, zero)
        made = numbers.made_by.get((record.iterator, record.batch)) if record else None
        if record is not None and made is not None:
            out[row] = (record.batch, *made)
    return out


def _record_of(nexts: tuple[MainNext, ...], start: int, end: int, zero: int) -> MainNext | None:
    """The main process's record of the call ``[start, end]`` (ns from the table's zero):
    of those whose span holds it (within ``TOLERANCE_NS``), the one whose ends are nearest."""
    held = [
        (abs(r.start - zero - start) + abs(r.end - zero - end), k)
        for k, r in enumerate(nexts)
        if r.start - zero - TOLERANCE_NS <= start and end <= r.end - zero + TOLERANCE_NS
    ]
    return nexts[min(held)[1]] if held else None
