"""The columnar event table: one numpy column per field, names interned.

Only complete events (``ph == "X"``) become rows; rows are sorted by start time, longer
first on ties, so that a parent precedes the events it contains. No Python object is kept
per event. Times are float microseconds from the trace's origin, its first usable event
(``origin_ns``, exact integer nanoseconds of the trace's own clock): rebased exactly in
integers before any float, they keep every nanosecond the trace wrote for spans up to
104 days (2**53 ns). ``dur_us`` is the trace's ``dur``; ``end_us`` is ``start + dur``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.trace.kinds import Kind

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]
Bools = NDArray[np.bool_]

MISSING = -1  # integer columns: the trace did not say


class CommArgs(msgspec.Struct, frozen=True, eq=False):
    """The collective ``args`` of the rows that carry them (``record_param_comms`` operators
    and NCCL/RCCL kernels), sorted by row; ``None`` / ``MISSING`` where the trace did not say."""

    rows: Ints = msgspec.field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    collective: tuple[str | None, ...] = ()  # "allreduce", "broadcast", ...
    process_group: tuple[str | None, ...] = ()  # the group's name ("0", a hash)
    group_ranks: tuple[str | None, ...] = ()  # "[0, 1]", as written
    dtype: tuple[str | None, ...] = ()  # "Float", ...
    seq: Ints = msgspec.field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    in_nelems: Ints = msgspec.field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    out_nelems: Ints = msgspec.field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    group_size: Ints = msgspec.field(default_factory=lambda: np.zeros(0, dtype=np.int64))


class EventTable(msgspec.Struct, frozen=True, eq=False):
    """Complete events as parallel columns (row ``i`` is one event)."""

    kind: NDArray[np.int8]
    name_id: NDArray[np.int32]
    names: tuple[str, ...]
    thread_id: NDArray[np.int32]
    threads: tuple[tuple[int | str, int | str], ...]
    start_us: Floats  # from ``origin_ns``
    dur_us: Floats
    end_us: Floats  # start + dur, added in integer nanoseconds
    correlation: Ints
    device: Ints
    stream: Ints
    bytes: Floats  # NaN where the trace gave no byte count
    shape_id: NDArray[np.int32]  # MISSING where no input shapes were recorded
    records_grad: NDArray[np.bool_]  # operators recorded by autograd (grad mode on)
    shapes: tuple[str, ...]  # recorded "Input Dims", as JSON text
    shape_types: tuple[str, ...]  # the matching "Input type", as JSON text ("" if absent)
    origin_ns: int = 0  # the first event's ``ts`` in integer nanoseconds: time zero
    comm: CommArgs = msgspec.field(default_factory=CommArgs)  # collectives' args, sparse

    def __len__(self) -> int:
        return int(self.kind.shape[0])

    def mask(self, *kinds: Kind) -> Bools:
        """Rows whose kind is one of ``kinds``: a lookup in a table of the 256 int8 values,
        several times faster than ``np.isin`` on a large table."""
        member = np.zeros(256, dtype=bool)
        member[np.array([int(k) for k in kinds], dtype=np.int8).view(np.uint8)] = True
        return member[self.kind.astype(np.int8, copy=False).view(np.uint8)]

    def name_of(self, row: int) -> str:
        return self.names[int(self.name_id[row])]


class Device(msgspec.Struct, frozen=True):
    """A GPU as described in ``deviceProperties``."""

    id: int
    name: str
    compute_capability: str | None
    memory_bytes: int | None


class Distributed(msgspec.Struct, frozen=True):
    """The ``distributedInfo`` block of a rank's trace."""

    rank: int | None
    world_size: int | None
    backend: str | None


class TraceInfo(msgspec.Struct, frozen=True):
    """What the trace says about itself, and what loading it had to skip."""

    path: Path
    size_bytes: int
    events_total: int
    devices: tuple[Device, ...] | None  # None: the trace has no deviceProperties at all
    distributed: Distributed | None
    base_time_ns: int | None
    time_unit: str | None
    options: dict[str, str]  # profiler options the trace records (record_shapes, ...)
    memory_events: int
    fwdbwd_flows: int  # forward-to-backward links: autograd ran a backward pass
    thread_names: dict[tuple[int | str, int | str], str] = msgspec.field(default_factory=dict)
    scenario_block: Any = None  # the trace's own ``steptrace`` metadata, undecoded
    warnings: tuple[str, ...] = ()
    url: str | None = None  # where it was read, when an fsspec URL (``path`` is then mangled)


class Trace(msgspec.Struct, frozen=True):
    """A loaded trace: its metadata and its event table."""

    info: TraceInfo
    events: EventTable
