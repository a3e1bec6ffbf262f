"""The input pipeline seen from inside: the DataLoader's workers over the window, and per
step the batch it waited for (the files ``capturing.loader_spans`` writes beside a trace).

Contract: ``loader_figure(log, events, windows, base_time_ns) -> LoaderAnalysis | None``
(None without worker files, or a trace without ``baseTimeNanoseconds`` to put them on its
clock). Times are the trace's: a worker's ``time.time_ns`` minus ``baseTimeNanoseconds``
is Kineto's ``ts`` in ns.

- Per step (``steps``): the DataLoader ``__next__`` calls the trace records in it, each
  joined to the main process's record of that ``next`` (its span holds the call's), which
  gives the batch's number k in its iterator; batch k came from worker k mod n, its
  (k // n)-th batch of that iterator (the worker's epoch: the iterators before it that
  shared its process). The step's wait (the call's time) is then that batch's: its worker,
  its fetch (first sample's start to last sample's end) and collate times, the part of the
  call before the batch was ready (``behind_ms``: the worker was behind) and how long it
  was ready before the call returned (``ready_ms``: the rest of the call is receiving it).
- Per worker (``workers``): its busy time in the window (the union of its samples' and
  collates' spans, clipped to the steps' span), its share of that span, its samples and
  batches, and the main process's wait attributed to its batches.
- ``slow_samples``: samples read in the window or in a batch a step waited for that took at
  least ``SLOW`` times the median of those samples, slowest first (at most ``LISTED``),
  each with its worker and batch.
- ``imbalance``: the busiest worker's busy time over the workers' mean (1: even).
- ``collate_share``: the collates' time over the batches' (fetch and collate) in the window.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable

import msgspec
import numpy as np

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.loader.log import LoaderLog, MainNext, WorkerBatch, WorkerLog
from steptrace.analysis.time.steps import StepWindow
from steptrace.trace import intervals as iv
from steptrace.trace.table import EventTable

SLOW = 3.0  # a sample this many times the median one is slow
LISTED = 50  # slow samples listed, the slowest first
TOLERANCE_US = 1000.0  # a next's record holds the trace's call within this (clock, writes)
NEXT = "__next__"
LOADER = "DataLoader"

Index = int | str | list[int | str]
Clock = Callable[[int], float]  # a worker's time_ns -> the table's µs


class WorkerLoad(msgspec.Struct, frozen=True):
    """One worker over the window."""

    worker: int
    pid: int
    busy_ms: float  # the union of its samples' and collates' spans in the window
    share: float  # of the window
    samples: int  # read in the window (started in it)
    batches: int  # collated in the window
    waited_ms: float  # the main process's wait for this worker's batches, in the steps


class SlowSample(msgspec.Struct, frozen=True):
    index: Index
    worker: int
    batch: int  # its batch's number in the iterator (k)
    ms: float
    times_median: float


class StepBatch(msgspec.Struct, frozen=True):
    """The batch a step waited for: which, from which worker, and what it took."""

    step: str
    batch: int  # k, in its iterator
    worker: int
    pid: int
    wait_ms: float  # the step's DataLoader __next__ call, as the trace records it
    behind_ms: float  # of that call, the time before the batch was ready: its worker behind
    fetch_ms: float  # its samples' reads: the first's start to the last's end
    collate_ms: float
    ready_ms: float  # from its collate's end to the call's end: queued, pinned, sent
    samples: int
    slow_samples: int


class LoaderAnalysis(msgspec.Struct, frozen=True):
    folder: str
    num_workers: int
    window_ms: float  # the steps' span the workers' shares are of
    workers: tuple[WorkerLoad, ...]
    sample_ms_median: float
    samples: int  # read in the window
    slow_samples: tuple[SlowSample, ...]
    slow_samples_total: int
    imbalance: float
    collate_share: float
    steps: tuple[StepBatch, ...]  # the steps whose wait was joined to its batch
    skipped_lines: int = 0


class Made(msgspec.Struct, frozen=True):
    """A worker's batch with its worker and its number in the iterator (``batches_by_number``:
    each by (iterator, k))."""

    worker: WorkerLog
    batch: WorkerBatch
    k: int


def loader_figure(
    log: LoaderLog | None,
    events: EventTable,
    windows: tuple[StepWindow, ...],
    base_time_ns: int | None,
) -> LoaderAnalysis | None:
    """The loader's figures (see module)."""
    if log is None or base_time_ns is None or not windows:
        return None
    zero = base_time_ns + events.origin_ns  # a time_ns minus this is µs x 1000 of the table

    def us(ns: int) -> float:
        return (ns - zero) / 1000

    made = batches_by_number(log)
    lo, hi = windows[0].start_us, max(w.end_us for w in windows)
    calls = _next_calls(events)
    steps: list[StepBatch] = []
    waited: dict[int, float] = defaultdict(float)
    for window in windows:
        for start, end in calls:
            if not window.start_us <= start < window.end_us:
                continue
            record = _record_of(log.nexts, start, end, us)
            found = made.get((record.iterator, record.batch)) if record else None
            if found is None:
                continue
            batch, worker = found.batch, found.worker
            fetch = _fetch(batch)
            steps.append(
                StepBatch(
                    step=window.name,
                    batch=found.k,
                    worker=worker.worker,
                    pid=worker.pid,
                    wait_ms=(end - start) / 1000,
                    behind_ms=max(min(end, us(batch.collate[1])) - start, 0.0) / 1000,
                    fetch_ms=(fetch[1] - fetch[0]) / 1e6 if fetch else 0.0,
                    collate_ms=(batch.collate[1] - batch.collate[0]) / 1e6,
                    ready_ms=(end - us(batch.collate[1])) / 1000,
                    samples=len(batch.samples),
                    slow_samples=0,  # set below, once the median is known
                )
            )
            waited[worker.pid] += (end - start) / 1000
    in_window = [m for m in made.values() if _overlaps(m, lo, hi, us)]
    waited_for = {s.batch for s in steps}
    # the samples read in the window, and those of the batches the steps waited for
    counted = [
        (m, x)
        for m in made.values()
        for x in m.batch.samples
        if lo <= us(x.start_ns) < hi or (m.k in waited_for and m in in_window)
    ]
    counted = list({(m.k, x.start_ns): (m, x) for m, x in counted}.values())
    sample_ms = [(x.end_ns - x.start_ns) / 1e6 for _, x in counted]
    median = statistics.median(sample_ms) if sample_ms else 0.0
    slow = sorted(
        (
            SlowSample(x.index, m.worker.worker, m.k, ms, ms / median)
            for m, x in counted
            if median > 0 and (ms := (x.end_ns - x.start_ns) / 1e6) >= SLOW * median
        ),
        key=lambda x: -x.ms,
    )
    steps = [
        msgspec.structs.replace(s, slow_samples=_slow_in(made, s.batch, median)) for s in steps
    ]
    loads = _loads(log, in_window, lo, hi, us, waited)
    busy = [w.busy_ms for w in loads]
    mean = statistics.fmean(busy) if busy else 0.0
    fetched = sum((f[1] - f[0]) for m in in_window if (f := _fetch(m.batch)))
    collated = sum(m.batch.collate[1] - m.batch.collate[0] for m in in_window)
    return LoaderAnalysis(
        folder=log.folder,
        num_workers=max(w.workers for w in log.workers),
        window_ms=(hi - lo) / 1000,
        workers=loads,
        sample_ms_median=median,
        samples=len(sample_ms),
        slow_samples=tuple(slow[:LISTED]),
        slow_samples_total=len(slow),
        imbalance=max(busy) / mean if mean > 0 else 1.0,
        collate_share=collated / (fetched + collated) if fetched + collated > 0 else 0.0,
        steps=tuple(steps),
        skipped_lines=log.skipped_lines,
    )


def _slow_in(made: dict[tuple[int, int], Made], k: int, median: float) -> int:
    """The slow samples of batch ``k`` (of any iterator: the steps read one)."""
    if median <= 0:
        return 0
    return max(
        (
            sum(1 for s in m.batch.samples if (s.end_ns - s.start_ns) / 1e6 >= SLOW * median)
            for (_, key), m in made.items()
            if key == k
        ),
        default=0,
    )


def batches_by_number(log: LoaderLog) -> dict[tuple[int, int], Made]:
    """Each worker batch by (iterator, k): the iterator's workers from its first ``next``
    record, a worker's epoch the iterators before this one that had its process."""
    by_pid = {w.pid: w for w in log.workers}
    pids_of = {n.iterator: n.pids for n in log.nexts if n.pids}
    epochs: dict[int, int] = defaultdict(int)
    found: dict[tuple[int, int], Made] = {}
    for iterator in sorted(pids_of):
        pids = pids_of[iterator] or []
        n = len(pids)
        for worker_id, pid in enumerate(pids):
            worker = by_pid.get(pid)
            if worker is None:
                continue
            epoch = epochs[pid]
            epochs[pid] += 1
            for batch in worker.batches:
                if batch.epoch == epoch:
                    k = batch.batch * n + worker_id
                    found[(iterator, k)] = Made(worker, batch, k)
    return found


def _next_calls(events: EventTable) -> list[tuple[float, float]]:
    """(start, end) µs of the trace's DataLoader ``__next__`` calls, in time order."""
    ids = [i for i, n in enumerate(events.names) if LOADER in n and NEXT in n]
    if not ids:
        return []
    rows = np.flatnonzero(np.isin(events.name_id, np.array(ids, dtype=events.name_id.dtype)))
    rows = rows[np.argsort(events.start_us[rows], kind="stable")]
    return list(zip(events.start_us[rows].tolist(), events.end_us[rows].tolist(), strict=True))


def _record_of(nexts: tuple[MainNext, ...], start: float, end: float, us: Clock) -> MainNext | None:
    """The main process's record of the call [start, end] µs: of those whose span holds it
    (within ``TOLERANCE_US``), the one whose ends are nearest its own."""
    held = [
        (abs(us(r.start) - start) + abs(us(r.end) - end), k)
        for k, r in enumerate(nexts)
        if us(r.start) - TOLERANCE_US <= start and end <= us(r.end) + TOLERANCE_US
    ]
    return nexts[min(held)[1]] if held else None


def _fetch(batch: WorkerBatch) -> tuple[int, int] | None:
    if not batch.samples:
        return None
    return min(s.start_ns for s in batch.samples), max(s.end_ns for s in batch.samples)


def _overlaps(m: Made, lo: float, hi: float, us: Clock) -> bool:
    """The batch's work (its reads and collate) overlaps the window [lo, hi) µs."""
    fetch = _fetch(m.batch)
    start = us(fetch[0] if fetch else m.batch.collate[0])
    return bool(start < hi and us(m.batch.collate[1]) > lo)


def _loads(
    log: LoaderLog,
    made: list[Made],
    lo: float,
    hi: float,
    us: Clock,
    waited: dict[int, float],
) -> tuple[WorkerLoad, ...]:
    loads = []
    window = hi - lo
    for worker in sorted(log.workers, key=lambda w: (w.worker, w.pid)):
        mine = [m for m in made if m.worker.pid == worker.pid]
        if not mine and worker.pid not in waited:
            continue
        spans = [(us(s.start_ns), us(s.end_ns)) for m in mine for s in m.batch.samples]
        spans += [(us(m.batch.collate[0]), us(m.batch.collate[1])) for m in mine]
        starts = np.array([a for a, _ in spans], dtype=np.float64)
        ends = np.array([b for _, b in spans], dtype=np.float64)
        busy = iv.total(iv.clip(iv.union(starts, ends), lo, hi)) if spans else 0.0
        loads.append(
            WorkerLoad(
                worker=worker.worker,
                pid=worker.pid,
                busy_ms=busy / 1000,
                share=busy / window if window > 0 else 0.0,
                samples=sum(1 for m in mine for s in m.batch.samples if lo <= us(s.start_ns) < hi),
                batches=sum(1 for m in mine if lo <= us(m.batch.collate[1]) < hi),
                waited_ms=waited.get(worker.pid, 0.0),
            )
        )
    return tuple(loads)


def _figure(context: TraceContext) -> LoaderAnalysis | None:
    return loader_figure(
        context.loader, context.events, context.windows, context.trace.info.base_time_ns
    )


FIGURE = FigureSpec("loader", _figure, frozenset({"steps"}))
