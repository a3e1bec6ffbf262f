"""The trace's tables: complete events, instants and flows, one numpy column per field.

Only complete events (``ph == "X"``) become rows; rows are sorted by start time, longer
first on ties, so that a parent precedes the events it contains. No Python object is kept
per event. Times are float microseconds from the trace's origin, its first usable event
(``origin_ns``, exact integer nanoseconds of the trace's own clock): rebased exactly in
integers before any float, they keep every nanosecond the trace wrote for spans up to
104 days (2**53 ns). ``dur_us`` is the trace's ``dur``; ``end_us`` is ``start + dur``.
Instants and flows, when loaded, are on the same clock and threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.errors import TraceError
from steptrace.trace.kinds import Kind

Floats = NDArray[np.float64]
Ints = NDArray[np.int64]
Integers = NDArray[np.signedinteger[Any]]  # an INT field's column: int32 or int64
Bools = NDArray[np.bool_]

Texts = NDArray[np.int32]  # ids into a table's ``texts``; MISSING where absent


class Sparse(msgspec.Struct, frozen=True, eq=False):
    """A field only a few rows carry (``Field.sparse``): those rows, increasing, and its
    value at each."""

    rows: Ints
    values: NDArray[Any]


class EventTable(msgspec.Struct, frozen=True, eq=False):
    """Complete events as parallel columns (row ``i`` is one event).

    ``columns`` holds the loaded fields (``fields.FIELDS``) by column name, ``sparse`` the
    sparse ones; TEXT and JSON fields hold ids into ``texts``. The core fields are also
    attributes (``correlation``, ``device``, ...).
    """

    kind: NDArray[np.int8]
    name_id: NDArray[np.int32]
    names: tuple[str, ...]
    thread_id: NDArray[np.int32]
    threads: tuple[tuple[int | str, int | str], ...]  # every thread of the trace's tables
    start_us: Floats  # from ``origin_ns``
    dur_us: Floats
    end_us: Floats  # start + dur, added in integer nanoseconds
    columns: dict[str, NDArray[Any]]
    sparse: dict[str, Sparse] = msgspec.field(default_factory=dict)
    texts: tuple[str, ...] = ()
    origin_ns: int = 0  # the first event's ``ts`` in integer nanoseconds: time zero

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

    def column(self, name: str) -> NDArray[Any]:
        """A loaded field's column (see ``fields``); a ``TraceError`` if it was not loaded."""
        found = self.columns.get(name)
        if found is None:
            raise TraceError(_not_loaded(name, self.sparse))
        return found

    def sparse_column(self, name: str) -> Sparse:
        """A loaded sparse field (``Field.sparse``); a ``TraceError`` if it was not loaded."""
        found = self.sparse.get(name)
        if found is None:
            raise TraceError(_not_loaded(name, self.columns))
        return found

    def text(self, text_id: int) -> str | None:
        """The text of an id of a TEXT or JSON column; None for MISSING."""
        return None if text_id < 0 else self.texts[text_id]

    @property
    def correlation(self) -> Integers:  # int32 where the trace's values fit (``assemble``)
        return self.columns["correlation"]

    @property
    def device(self) -> Integers:
        return self.columns["device"]

    @property
    def stream(self) -> Integers:
        return self.columns["stream"]

    @property
    def bytes(self) -> Floats:  # NaN where the trace gave no byte count
        return self.columns["bytes"]

    @property
    def records_grad(self) -> Bools:  # operators recorded by autograd (grad mode on)
        return self.columns["records_grad"]

    @property
    def input_dims(self) -> Texts:  # recorded "Input Dims" (record_shapes), as JSON text
        return self.columns["input_dims"]

    @property
    def input_types(self) -> Texts:  # the matching "Input type"
        return self.columns["input_types"]


def _not_loaded(name: str, other: Mapping[str, object]) -> str:
    if name in other:
        return f"field {name!r} is read with the other accessor (column or sparse_column)"
    return f"field {name!r} was not loaded: load the trace with its group (trace.fields)"


class InstantTable(msgspec.Struct, frozen=True, eq=False):
    """Instant events (``ph == "i"``: ``[memory]`` ones and the profiler's marks), in time
    order (ties as written), on the event table's clock and threads."""

    name: Texts  # ids into ``texts``
    thread_id: NDArray[np.int32]  # into ``EventTable.threads``
    at_us: Floats  # from the event table's ``origin_ns``
    columns: dict[str, NDArray[Any]]  # the instants' fields: addr, bytes, total_allocated...
    texts: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(self.at_us.shape[0])

    def named(self, name: str) -> Bools:
        """Rows of that name (``"[memory]"``)."""
        found: Bools = self.name == _text_id(self.texts, name)
        return found

    def column(self, name: str) -> NDArray[Any]:
        found = self.columns.get(name)
        if found is None:
            raise TraceError(_not_loaded(name, {}))
        return found


class FlowTable(msgspec.Struct, frozen=True, eq=False):
    """Flows (``ph`` ``s`` -> ``f``): one row per category and id, its start and finish on
    the event table's clock and threads; NaN and MISSING where an end is not in the trace.
    ``ac2g`` (``async`` in 2021) links a launch to its GPU work, ``fwdbwd`` an operator to
    its backward. Sorted by start (finish for those without one)."""

    category: Texts
    flow_id: Ints
    start_us: Floats
    start_thread: NDArray[np.int32]
    finish_us: Floats
    finish_thread: NDArray[np.int32]
    finish_encloses: Bools  # bound to the slice around the finish (``bp: "e"``)
    texts: tuple[str, ...] = ()

    def __len__(self) -> int:
        return int(self.flow_id.shape[0])

    def of_category(self, name: str) -> Bools:
        found: Bools = self.category == _text_id(self.texts, name)
        return found


def _text_id(texts: tuple[str, ...], text: str) -> int:
    try:
        return texts.index(text)
    except ValueError:
        return -2  # matches no id, not even MISSING


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
    groups: tuple[str, ...] = ("core",)  # the field groups loaded (``fields.GROUPS``)
    thread_names: dict[tuple[int | str, int | str], str] = msgspec.field(default_factory=dict)
    scenario_block: Any = None  # the trace's own ``steptrace`` metadata, undecoded
    warnings: tuple[str, ...] = ()
    url: str | None = None  # where it was read, when an fsspec URL (``path`` is then mangled)
    events_skipped: int = 0  # events loading could not use (malformed, no usable time)
    bytes_ignored: int = 0  # bytes after the gzip data that were not zero padding
    host: str | None = None  # the host it was recorded on (``host_name``), when written


class Trace(msgspec.Struct, frozen=True):
    """A loaded trace: its metadata and its tables (``None``: that group was not loaded)."""

    info: TraceInfo
    events: EventTable
    instants: InstantTable | None = None
    flows: FlowTable | None = None
