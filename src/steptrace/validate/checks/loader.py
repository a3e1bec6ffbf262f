"""The input pipeline's causes checked outside the profiler, on the user's DataLoader.

- ``samples_alone(dataset, named, others)``: the named samples (the slow ones, or one
  worker's) read alone in this process, each ``READS`` times, against other samples of the
  same batches: their median times. Slow alone, the cost is in the data; not slow alone,
  it was the worker (its process, its share of the machine).
- ``collate_alone(dataset, collate_fn, indices)``: one batch's samples read once, then the
  collate function alone on that prepared list, each ``READS`` times: its share of the
  batch's making.
- ``more_workers(loader, n)``: the same loader (dataset, batch sampler, collate, pinning,
  worker start) with ``n`` workers; ``paced(step, a, b, ...)`` times steps that each read
  their next batch from A's or B's loader, in rounds side by side: each round a side runs
  ``block`` steps (several of its full queues of prefetched batches, which it refills
  while the other side runs, so that the round measures the pace at which batches come and
  not the queue), its time per step the round's total over its steps (batches arrive in
  bursts, a worker's each: a step's median or minimum would read the burst, not the
  pace); the paired rounds' ratio B/A with its signed-rank CI (``steptrace.paired``).

Reading samples runs the user's dataset in this process: a dataset that cannot be read
outside its workers (it opens a handle per worker in ``worker_init_fn``) is
``NotTestable``, said in one line.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import numpy as np

from steptrace.errors import NotTestable
from steptrace.paired import MIN_PAIRS, paired_ratio
from steptrace.validate.checks.factory import one_line

READS = 3  # each sample read this many times: the median is its time
BY_HAND = "read the named samples alone (dataset[i], timed) against others, outside the loader"


class SamplesAlone(msgspec.Struct, frozen=True):
    named: tuple[object, ...]
    named_ms: tuple[float, ...]  # each named sample's median read, alone
    others: tuple[object, ...]
    others_ms: tuple[float, ...]

    @property
    def ratio(self) -> float:
        """The named samples' median read over the others' (inf when those take 0)."""
        mine, theirs = statistics.median(self.named_ms), statistics.median(self.others_ms)
        return mine / theirs if theirs > 0 else float("inf")


class CollateAlone(msgspec.Struct, frozen=True):
    samples: int
    read_ms: float  # reading the batch's samples, one after the other (median of READS)
    collate_ms: float  # the collate function on them, prepared (median of READS)

    @property
    def share(self) -> float:
        made = self.read_ms + self.collate_ms
        return self.collate_ms / made if made > 0 else 0.0


def samples_alone(dataset: Any, named: Sequence[object], others: Sequence[object]) -> SamplesAlone:
    """Each sample's median read time alone (see module)."""
    if not named or not others:
        raise NotTestable("no samples to compare: the workers' files name none", BY_HAND)
    return SamplesAlone(
        tuple(named),
        tuple(_read_ms(dataset, i) for i in named),
        tuple(others),
        tuple(_read_ms(dataset, i) for i in others),
    )


def collate_alone(
    dataset: Any, collate_fn: Callable[[list[Any]], Any], indices: Sequence[object]
) -> CollateAlone:
    """The batch's reads and its collate, each timed alone (see module)."""
    if not indices:
        raise NotTestable("no batch to collate", BY_HAND)
    reads, collates = [], []
    for _ in range(READS):
        began = time.perf_counter()
        samples = [_read(dataset, i) for i in indices]
        reads.append(time.perf_counter() - began)
        began = time.perf_counter()
        try:
            collate_fn(samples)
        except Exception as error:  # the user's collate: one line
            raise NotTestable(f"the collate function failed: {one_line(error)}", BY_HAND) from None
        collates.append(time.perf_counter() - began)
    return CollateAlone(
        len(indices), 1000 * statistics.median(reads), 1000 * statistics.median(collates)
    )


def more_workers(loader: Any, workers: int) -> Any:
    """``loader`` rebuilt with ``workers`` worker processes, everything else as built."""
    from torch.utils.data import DataLoader, IterableDataset

    if isinstance(loader.dataset, IterableDataset):
        raise NotTestable(
            "an IterableDataset splits its stream by worker in its own code: more workers "
            "change what each reads",
            f"run the job with num_workers={workers} and compare ms/step (steptrace compare)",
        )
    return DataLoader(
        loader.dataset,
        batch_sampler=loader.batch_sampler,
        num_workers=workers,
        collate_fn=loader.collate_fn,
        pin_memory=loader.pin_memory,
        timeout=loader.timeout,
        worker_init_fn=loader.worker_init_fn,
        multiprocessing_context=loader.multiprocessing_context,
        prefetch_factor=loader.prefetch_factor,
        persistent_workers=loader.persistent_workers,
    )


class Paced(msgspec.Struct, frozen=True):
    rounds: int
    block: int  # steps a side runs in a round
    a_ms: tuple[float, ...]  # per round: ms per step
    b_ms: tuple[float, ...]
    ratio: float  # B/A, Hodges-Lehmann of the rounds' log-ratios
    ci: tuple[float, float]
    confidence: float


def paced(
    step: Callable[[Any], object],
    a: Any,
    b: Any,
    *,
    block: int,
    budget_s: float,
    min_rounds: int = MIN_PAIRS,
    max_rounds: int = 40,
) -> Paced:
    """B's pace against A's (see module): ``step(batch)`` runs one step on a batch."""
    sources = {"a": iter(a), "b": iter(b)}
    loaders = {"a": a, "b": b}

    def run(side: str) -> float:
        began = time.perf_counter()
        for _ in range(block):
            try:
                batch = next(sources[side])
            except StopIteration:
                sources[side] = iter(loaders[side])
                batch = next(sources[side])
            step(batch)
        return 1000 * (time.perf_counter() - began) / block

    run("a"), run("b")  # the workers' start, and their first queue, left out
    a_ms: list[float] = []
    b_ms: list[float] = []
    started = time.perf_counter()
    while len(a_ms) < max_rounds and (
        len(a_ms) < min_rounds or time.perf_counter() - started < budget_s
    ):
        for side in ("b", "a") if len(a_ms) % 2 else ("a", "b"):
            (a_ms if side == "a" else b_ms).append(run(side))
    sources.clear()  # the iterators' workers end with them
    found = paired_ratio(np.log(np.array(b_ms) / np.array(a_ms)))
    return Paced(
        len(a_ms), block, tuple(a_ms), tuple(b_ms), found.ratio, found.ci, found.confidence
    )


def _read_ms(dataset: Any, index: object) -> float:
    times = []
    for _ in range(READS):
        began = time.perf_counter()
        _read(dataset, index)
        times.append(time.perf_counter() - began)
    return 1000 * statistics.median(times)


def _read(dataset: Any, index: object) -> Any:
    try:
        return dataset[index]
    except Exception as error:  # the user's dataset, outside its workers: one line
        raise NotTestable(
            f"reading dataset[{index!r}] in this process failed: {one_line(error)}", BY_HAND
        ) from None
