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


class Lane(msgspec.Struct, frozen=True, kw_only=True):
    """One CPU thread or one GPU stream in one step."""

    name: str  # "pid 1 tid 7 (name)" (the step's ``thread`` form) or "GPU 0 stream 7"
    label: str  # short, for the figure: the thread's name when known, "stream 7"
    kind: Literal["cpu", "gpu"]
    stream: int | None  # GPU lanes: the stream (``Where.streams`` names them)
    device: int | None
    depth: int  # rows of nesting on the lane (1 on a GPU stream, usually)
    events: int  # events of the lane starting in the step: drawn or counted in a band
    bars: tuple[Bar, ...]
    bands: tuple[Band, ...]
    queue: QueueCurve | None = None  # GPU lanes: launched, not yet started; None: no launch


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


def ns(values: NDArray[np.float64], lo_ns: int) -> NDArray[np.int64]:
    """Times in µs as integer ns from ``lo_ns``."""
    return np.rint(values * 1000).astype(np.int64) - lo_ns
