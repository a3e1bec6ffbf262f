"""The DataLoader's workers on the trace's clock: what each worker did for each batch,
written beside the trace (the main trace shows only the main process's wait).

``LoaderSpans(folder)`` records a ``torch.utils.data.DataLoader`` with workers:

- ``installed(loader)``: a context in which the loader's ``worker_init_fn`` is wrapped (the
  user's runs first, then the recorder is set up in the worker; it is put back on exit).
  In each worker the ``DataLoader``'s fetcher is built on a timed view of the dataset and
  of ``collate_fn``, so every sample's read (index, start, end) and
  every batch's collate are timed with ``time.time_ns`` (the clock Kineto's timestamps are
  on: ``baseTimeNanoseconds`` + µs) and written, one line a batch, to
  ``worker-<id>-<pid>.jsonl``. It works with fork and spawn (the wrapper pickles), with
  ``persistent_workers`` (each new iterator is an ``epoch`` of the worker's) and with an
  iterator made inside the profiled window.
- ``iterate(iterable)``: the batches, each ``next`` timed in this process and, once the
  iteration ends (exhausted, closed or collected), written to ``main-<pid>.jsonl`` with its
  number in the iterator: batch k of an iterator comes from
  worker k mod n, its (k // n)-th batch (the order ``_MultiProcessingDataLoaderIter``
  sends indices in), which is how the analysis joins a wait to the batch it waited for.
- ``recorded(loader)``: ``installed`` and ``iterate`` at once, for a loop that iterates
  the loader itself (Lightning's, the Hugging Face Trainer's): within it, each iterator
  the loader makes is a ``TimedIterator``, whose lines are written at the exit.

Formats (JSON lines; ``analysis.loader.files`` reads them):

- worker: a first line ``{"worker": id, "pid": pid, "workers": n}``, then one line a batch
  ``{"epoch": e, "batch": j, "samples": [[index, start_ns, end_ns], ...],
  "collate": [start_ns, end_ns]}`` (a dataset read by ``__getitems__`` is one sample
  span whose index is the batch's list of indices);
- main: ``{"iterator": i, "batch": k, "start": ns, "end": ns, "pids": [...]}`` (``pids``:
  the iterator's worker processes, on its first batch).

The cost is two ``time.time_ns`` calls a sample and one written line a batch in a worker,
two ``time.time_ns`` a batch in the main process (``benchmarks/loader_spans_cost.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from steptrace.analysis.loader.log import folder_for

__all__ = ["LoaderSpans", "folder_for", "has_workers"]

WORKER_FILE = "worker-{worker}-{pid}.jsonl"
MAIN_FILE = "main-{pid}.jsonl"


def has_workers(loader: object) -> bool:
    """A DataLoader whose batches are made by worker processes."""
    return bool(getattr(loader, "num_workers", 0)) and hasattr(loader, "worker_init_fn")


class LoaderSpans:
    """Records a DataLoader's workers and its batches' arrival into ``folder``."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._iterators = 0
        self._created = False

    def discard(self) -> None:
        """Remove the folder and its files, if this recorder created it."""
        if self._created:
            shutil.rmtree(self.folder, ignore_errors=True)
            self._created = False

    @contextlib.contextmanager
    def installed(self, loader: Any) -> Iterator[bool]:
        """Within: ``loader``'s workers record their samples (``True``); ``False`` and
        nothing changed for a loader without workers, whose persistent workers are already
        running (they would never call the new ``worker_init_fn``), or when ``folder``
        exists already (nothing of the user's is written into)."""
        running = getattr(loader, "_iterator", None) is not None
        if not has_workers(loader) or running:
            yield False
            return
        try:
            self.folder.mkdir(parents=True)
        except OSError:  # there already, or not writable: no worker lanes, nothing lost
            yield False
            return
        self._created = True
        user = loader.worker_init_fn
        loader.worker_init_fn = WorkerInit(str(self.folder), user)
        try:
            yield True
        finally:
            loader.worker_init_fn = user

    @contextlib.contextmanager
    def recorded(self, loader: Any) -> Iterator[bool]:
        """``installed``, and within it every iterator the loader makes times each ``next``
        as ``iterate`` does (``TimedIterator``), its lines written at the exit: for a loop
        steptrace does not own (Lightning's, the Hugging Face Trainer's), which calls
        ``iter(loader)`` itself. A loader wrapped by Accelerate is recorded through the
        ``DataLoader`` it holds (``base_dataloader``)."""
        base = _underlying(loader)
        with self.installed(base) as recording:
            if not recording:
                yield False
                return
            made: list[TimedIterator] = []
            build = type(base)._get_iterator  # what DataLoader.__iter__ calls

            def get_iterator() -> TimedIterator:
                timed = TimedIterator(build(base), self._number)
                made.append(timed)
                return timed

            base._get_iterator = get_iterator  # this loader only: an instance attribute
            try:
                yield True
            finally:
                del base._get_iterator
                path = self.folder / MAIN_FILE.format(pid=os.getpid())
                for timed in made:
                    timed.write(path)

    def _number(self) -> int:
        """The next iterator's number (in the main process's lines)."""
        number, self._iterators = self._iterators, self._iterators + 1
        return number

    def iterate(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """``iterable``'s items, each ``next`` timed and written (see module)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        number = self._number()
        source = iter(iterable)
        path = self.folder / MAIN_FILE.format(pid=os.getpid())
        times: list[int] = []  # start, end of each next: written once the iteration ends
        pids: list[int] = []
        try:
            for item, start, end in _timed(source):
                times += (start, end)
                if not pids:
                    pids = _worker_pids(source)
                yield item
        finally:  # exhausted, closed, or collected: the lines are written
            _write_main(path, number, times, pids)


class TimedIterator:
    """A DataLoader's iterator whose every ``next`` is timed (``LoaderSpans.recorded``);
    everything else is the iterator's. Persistent workers' ``_reset`` (a new ``iter`` of
    the loader) starts a new numbered iterator, as in ``iterate``. ``write`` writes the
    lines and ends the timing: the iterator goes on as itself."""

    def __init__(self, inner: Iterator[object], number: Callable[[], int]) -> None:
        self._inner = inner
        self._number: Callable[[], int] | None = number
        self._runs: list[tuple[int, list[int], list[int]]] = []  # (iterator, times, pids)
        self._begin()

    def _begin(self) -> None:
        if self._number is not None:
            self._runs.append((self._number(), [], []))

    def __iter__(self) -> TimedIterator:
        return self

    def __next__(self) -> object:
        start = time.time_ns()
        item = next(self._inner)
        end = time.time_ns()
        if self._number is not None:
            _, times, pids = self._runs[-1]
            times += (start, end)
            if not pids:
                pids += _worker_pids(self._inner)
        return item

    def __len__(self) -> int:
        return len(self._inner)  # type: ignore[arg-type]

    def _reset(self, *args: object, **kwargs: object) -> None:
        self._inner._reset(*args, **kwargs)  # type: ignore[attr-defined]
        self._begin()

    def write(self, path: Path) -> None:
        """Append the lines of every run so far to ``path``; no timing after."""
        self._number = None
        runs, self._runs = self._runs, []
        for number, times, pids in runs:
            _write_main(path, number, times, pids)

    def __getattr__(self, name: str) -> Any:
        if name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)


def _underlying(loader: Any) -> Any:
    """The DataLoader an Accelerate ``DataLoaderShard`` (or ``DataLoaderDispatcher``) holds,
    else ``loader`` itself (their attributes are read from it, but set on the wrapper)."""
    inner = getattr(loader, "__dict__", {}).get("base_dataloader")
    return loader if inner is None else _underlying(inner)


def _timed(source: Iterator[Any]) -> Iterator[tuple[Any, int, int]]:
    """Each item of ``source`` with the ``time.time_ns`` before and after its ``next``."""
    while True:
        start = time.time_ns()
        try:
            item = next(source)
        except StopIteration:
            return
        yield item, start, time.time_ns()


def _write_main(path: Path, iterator: int, times: list[int], pids: list[int]) -> None:
    lines = []
    for k in range(len(times) // 2):
        line: dict[str, Any] = {"iterator": iterator, "batch": k}
        line |= {"start": times[2 * k], "end": times[2 * k + 1]}
        if k == 0:
            line["pids"] = pids
        lines.append(json.dumps(line) + "\n")
    with path.open("a", encoding="utf-8") as out:
        out.writelines(lines)


def _worker_pids(iterator: Any) -> list[int]:
    """The worker processes of a multi-process DataLoader iterator (none otherwise)."""
    return [w.pid for w in getattr(iterator, "_workers", ()) if getattr(w, "pid", None)]


class WorkerInit:
    """The ``worker_init_fn`` that runs the user's, then records the worker (picklable:
    spawn sends it to each worker)."""

    def __init__(self, folder: str, user: Callable[[int], Any] | None) -> None:
        self.folder = folder
        self.user = user

    def __call__(self, worker_id: int) -> None:
        if self.user is not None:
            self.user(worker_id)
        _record_worker(self.folder, worker_id)


def _record_worker(folder: str, worker_id: int) -> None:
    """In a worker: open its file, and build every fetcher on timed views (see module)."""
    from torch.utils.data import _DatasetKind, get_worker_info

    info = get_worker_info()
    workers = info.num_workers if info is not None else 0
    pid = os.getpid()
    path = Path(folder) / WORKER_FILE.format(worker=worker_id, pid=pid)
    out = path.open("a", encoding="utf-8")
    out.write(json.dumps({"worker": worker_id, "pid": pid, "workers": workers}) + "\n")
    out.flush()
    build = _DatasetKind.create_fetcher  # replaced below, in this worker process only
    epochs = [0]

    def create_fetcher(
        kind: int, dataset: Any, auto_collation: bool, collate_fn: Any, drop_last: bool
    ) -> Any:
        log = _BatchLog(out, epochs[0])
        epochs[0] += 1
        timed = _TimedDataset(dataset, log)
        return build(kind, timed, auto_collation, log.collate(collate_fn), drop_last)

    _DatasetKind.create_fetcher = staticmethod(create_fetcher)  # type: ignore[method-assign]


class _BatchLog:
    """One epoch's batches in one worker: the samples read since the last collate, then
    the collate; one line a batch."""

    def __init__(self, out: Any, epoch: int) -> None:
        self._out = out
        self._epoch = epoch
        self._batch = 0
        self.samples: list[list[Any]] = []

    def collate(self, collate_fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def timed(data: Any) -> Any:
            start = time.time_ns()
            batch = collate_fn(data)
            end = time.time_ns()
            line = {"epoch": self._epoch, "batch": self._batch, "samples": self.samples}
            line["collate"] = [start, end]
            self._out.write(json.dumps(line) + "\n")
            self._out.flush()
            self._batch += 1
            self.samples = []
            return batch

        return timed


class _TimedDataset:
    """A dataset whose reads are timed into ``log``; everything else is the dataset's."""

    def __init__(self, dataset: Any, log: _BatchLog) -> None:
        self._dataset = dataset
        self._log = log

    def __getitem__(self, index: Any) -> Any:
        start = time.time_ns()
        item = self._dataset[index]
        self._log.samples.append([_plain(index), start, time.time_ns()])
        return item

    def __len__(self) -> int:
        return len(self._dataset)

    def __iter__(self) -> Iterator[Any]:  # an IterableDataset: each item as it comes
        for k, (item, start, end) in enumerate(_timed(iter(self._dataset))):
            self._log.samples.append([k, start, end])
            yield item

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._dataset, name)  # AttributeError: the dataset has none
        if name == "__getitems__" and value:
            return self._getitems(value)
        return value

    def _getitems(self, read: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def timed(indices: Any) -> Any:
            start = time.time_ns()
            items = read(indices)
            self._log.samples.append([_plain(indices), start, time.time_ns()])
            return items

        return timed


def _plain(index: Any) -> Any:
    """An index as JSON can write it (an int, a list of them, else its text)."""
    if isinstance(index, int | str):
        return index
    if isinstance(index, list | tuple):
        return [_plain(i) for i in index]
    try:
        return int(index)
    except (TypeError, ValueError):
        return str(index)
