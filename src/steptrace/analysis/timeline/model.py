"""The timeline's data: its lanes, steps and bounds (``Lane``, ``StepLanes``, ``Lanes``),
and what drawing one trace's steps holds (``Drawing``: the tables, the rows drawn, the
names interned once)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.memory.lane import MemoryCurve
from steptrace.analysis.time.links import CpuTree, GpuLinks
from steptrace.analysis.timeline.gaps import Gap
from steptrace.analysis.timeline.merge import Band, Bar
from steptrace.analysis.timeline.queue import QueueCurve
from steptrace.trace.arrays import distinct
from steptrace.trace.table import EventTable, Trace

Rows = NDArray[np.int64]
DETAIL = 4000  # resolution: the step's wall time / DETAIL (4x zoom on a 1000-pixel figure)
BUDGET = 24_000  # bars, bands and gaps of all steps together
STEP_MAX = 6_000  # at most this many for one step
STEP_MIN = 300  # at least this many for one step, however many steps there are
QUEUE_DETAIL = 1000  # the launch queue's buckets: the step's wall time / QUEUE_DETAIL at most
TOGETHER = 3  # consecutive steps drawn at once: the median step and its neighbours
NAME_CHARS = 300  # names are cut to this many characters (the tables hold them whole)
KINDS = ("label", "operator", "kernel", "communication", "memset", "HtoD", "DtoH", "DtoD", "copy")
WORKER_KINDS = ("sample", "collate")  # after KINDS, when DataLoader workers are drawn
SAMPLE, COLLATE = len(KINDS), len(KINDS) + 1


class WorkerLane(msgspec.Struct, frozen=True, kw_only=True):
    """What a DataLoader worker's lane adds: the worker, and each bar's batch."""

    worker: int  # its id in the DataLoader (0 to n - 1)
    pid: int
    batches: tuple[int, ...]  # per bar: the number k of its batch in the iterator; -1: unknown


class BatchWait(msgspec.Struct, frozen=True, kw_only=True):
    """A DataLoader ``__next__`` call of the main thread in the step, and the batch it
    received: batch ``batch`` of its iterator, made by worker ``worker``."""

    batch: int
    worker: int
    pid: int
    start_ns: int  # the call, from the step's start
    dur_ns: int
    bar: int  # the call's bar id in the step (the batch's bars name it as owner); -1: merged


class Lane(msgspec.Struct, frozen=True, kw_only=True):
    """One CPU thread or one GPU stream in one step."""

    name: str  # "pid 1 tid 7 (name)" (the step's ``thread`` form), "GPU 0 stream 7" or
    # "DataLoader worker 0 (pid 9)"
    label: str  # short, for the figure: the thread's name when known, "stream 7",
    # "worker 0 (pid 9)"
    kind: Literal["cpu", "gpu", "worker"]
    stream: int | None  # GPU lanes: the stream (``Where.streams`` names them)
    device: int | None
    depth: int  # rows of nesting on the lane (1 on a GPU stream, usually)
    events: int  # events of the lane starting in the step: drawn or counted in a band
    bars: tuple[Bar, ...]
    bands: tuple[Band, ...]
    queue: QueueCurve | None = None  # GPU lanes: launched, not yet started; None: no launch
    worker: WorkerLane | None = None  # DataLoader worker lanes: the worker, its bars' batches


class StepLanes(msgspec.Struct, frozen=True, kw_only=True):
    """One step's lanes, its GPU idle gaps, and the resolution below which events merge."""

    name: str
    number: int | None
    start_us: float  # the step's start, as in ``StepResult.start_us`` (from origin_ns)
    wall_ns: int
    resolution_ns: int
    lanes: tuple[Lane, ...]
    gaps: tuple[Gap, ...]  # GPU idle gaps of at least resolution_ns; empty: GPU not observed
    small_gaps: int  # idle gaps shorter than resolution_ns, not drawn
    small_gaps_ns: int
    memory: MemoryCurve | None = None  # allocated and reserved bytes; None: not recorded
    boundaries: tuple[tuple[int, str], ...] = ()  # steps drawn together: (ns, name) of each
    # step's start after the first
    reading: tuple[tuple[int, int], ...] = ()  # (start, end) ns: the batch read (data_read)
    waits: tuple[BatchWait, ...] = ()  # the DataLoader waits joined to their batch (workers)


class Lanes(msgspec.Struct, frozen=True, kw_only=True):
    """Every step's lanes; ``shown`` is the step drawn first (the median by wall time)."""

    kinds: tuple[str, ...]  # Bar.kind and Band.kind index this
    names: tuple[str, ...]  # Bar.name indexes this
    steps: tuple[StepLanes, ...]
    shown: int
    gpu_observed: bool
    together: StepLanes | None = None  # consecutive steps as one window; None: one step


class Names:
    """The names the figure uses, interned once: ``of`` maps the table's name ids to them."""

    def __init__(self, events: EventTable, rows: Rows) -> None:
        used = distinct(events.name_id[rows])
        self.lookup = np.full(len(events.names), -1, dtype=np.int64)
        self.lookup[used] = np.arange(used.size)
        self.names = tuple(events.names[i][:NAME_CHARS] for i in used.tolist())

    def of(self, name_ids: NDArray[np.int32]) -> NDArray[np.int64]:
        out: NDArray[np.int64] = self.lookup[name_ids]
        return out


@dataclass(frozen=True)
class WorkerSpans:
    """Every DataLoader worker's recorded work on the table's clock (``workers``), once per
    timeline: one row per sample read and per collate, and the main thread's waits."""

    workers: tuple[tuple[int, int], ...]  # (worker id, pid), in drawing order
    lane: Rows  # per span: its worker, an index into ``workers``
    start_ns: Rows  # from the table's ``origin_ns``
    end_ns: Rows
    kind: Rows  # SAMPLE or COLLATE
    batch: Rows  # the number k of its batch in the iterator; -1: not joined
    name: Rows  # an index into the timeline's names
    life_ns: Rows  # per worker: (its first start, its last end), shape (workers, 2)
    calls: Rows  # the table rows of the DataLoader ``__next__`` calls
    received: dict[int, tuple[int, int, int]]  # call row -> (batch k, worker id, pid)


@dataclass(frozen=True)
class Drawing:
    events: EventTable
    tree: CpuTree
    links: GpuLinks
    cpu_rows: Rows
    depth: Rows
    names: Names
    trace: Trace
    gpu_kinds: NDArray[np.int64]  # per ``links.rows``: its index in KINDS
    gpu_depth: Rows  # per ``links.rows``: its nesting depth on its (device, stream)
    work: WorkerSpans | None = None  # the DataLoader workers' files; None: none beside it


def ns(values: NDArray[np.float64], lo_ns: int) -> NDArray[np.int64]:
    """Times in µs as integer ns from ``lo_ns``."""
    return np.rint(values * 1000).astype(np.int64) - lo_ns
