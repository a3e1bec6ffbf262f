"""The DataLoader workers' files read back (``capturing.loader_spans`` writes them).

Contract: ``loader_log_of(info, said)``: the log of a trace (``TraceInfo``): the folder its
capture named (``said``, relative to the trace's), else the one named after the trace
beside it (``folder_for``: where the recipe writes); None for neither, or a remote trace.
``read_loader_log(folder) -> LoaderLog | None``: every worker's batches and the
main process's ``next`` calls, times in integer nanoseconds of the wall clock
(``time.time_ns``, the clock of Kineto's ``baseTimeNanoseconds`` + µs); None when the
folder holds no worker file. A line that does not decode (a worker killed mid-write) is
skipped and counted. Reading is the one piece of I/O: the figure (``analysis.loader``)
only computes.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from steptrace.trace.table import TraceInfo

WORKER_GLOB = "worker-*.jsonl"
MAIN_GLOB = "main-*.jsonl"
FOLDER_SUFFIX = ".workers"


def folder_for(trace: Path) -> Path:
    """Where a trace's worker files are: ``run/trace.json.gz`` -> ``run/trace.workers``."""
    name = trace.name
    stem = next((name[: -len(s)] for s in (".json.gz", ".json") if name.endswith(s)), name)
    return trace.with_name(stem + FOLDER_SUFFIX)


class Sample(msgspec.Struct, frozen=True, array_like=True):
    """One read of the dataset in a worker: its index (a list of them for a
    ``__getitems__`` read) and when it ran."""

    index: int | str | list[int | str]
    start_ns: int
    end_ns: int


class WorkerBatch(msgspec.Struct, frozen=True):
    """One batch a worker made: the ``batch``-th of its ``epoch`` (one iterator)."""

    epoch: int
    batch: int
    samples: list[Sample]
    collate: tuple[int, int]


class WorkerHead(msgspec.Struct, frozen=True):
    worker: int
    pid: int
    workers: int


class WorkerLog(msgspec.Struct, frozen=True):
    """One worker process: its id, pid, the loader's number of workers, its batches."""

    worker: int
    pid: int
    workers: int
    batches: tuple[WorkerBatch, ...]


class MainNext(msgspec.Struct, frozen=True):
    """One ``next`` on an iterator in the main process: batch ``batch`` of iterator
    ``iterator``; ``pids``: the iterator's workers (written with its first batch)."""

    iterator: int
    batch: int
    start: int
    end: int
    pids: list[int] | None = None


class LoaderLog(msgspec.Struct, frozen=True):
    folder: str
    workers: tuple[WorkerLog, ...]
    nexts: tuple[MainNext, ...]
    skipped_lines: int = 0


_HEAD = msgspec.json.Decoder(WorkerHead)
_BATCH = msgspec.json.Decoder(WorkerBatch)
_NEXT = msgspec.json.Decoder(MainNext)


def read_loader_log(folder: str | Path) -> LoaderLog | None:
    """The files in ``folder`` (see module); None without any worker file."""
    root = Path(folder)
    if not root.is_dir():
        return None
    skipped = 0
    workers = []
    for path in sorted(root.glob(WORKER_GLOB)):
        lines = path.read_bytes().splitlines()
        try:
            head = _HEAD.decode(lines[0])
        except (IndexError, msgspec.DecodeError, msgspec.ValidationError):
            skipped += len(lines)
            continue
        batches = []
        for line in lines[1:]:
            try:
                batches.append(_BATCH.decode(line))
            except (msgspec.DecodeError, msgspec.ValidationError):
                skipped += 1
        workers.append(WorkerLog(head.worker, head.pid, head.workers, tuple(batches)))
    if not workers:
        return None
    nexts = []
    for path in sorted(root.glob(MAIN_GLOB)):
        for line in path.read_bytes().splitlines():
            try:
                nexts.append(_NEXT.decode(line))
            except (msgspec.DecodeError, msgspec.ValidationError):
                skipped += 1
    return LoaderLog(str(root), tuple(workers), tuple(nexts), skipped)


def loader_log_of(info: TraceInfo, said: str | None) -> LoaderLog | None:
    """The workers' files of the trace ``info`` describes (see module)."""
    if info.url is not None:
        return None  # a remote trace: no folder is read beside it
    folders = []
    if said:
        folder = Path(said)
        folders.append(folder if folder.is_absolute() else info.path.parent / folder)
    folders.append(folder_for(info.path))
    for folder in folders:
        try:
            log = read_loader_log(folder)
        except OSError:
            continue
        if log is not None:
            return log
    return None
