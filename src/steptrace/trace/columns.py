"""Decoded events -> numpy columns, one batch at a time, names interned across batches.

Only complete events (``ph == "X"``) become rows. Integer fields are accepted as written
by every Kineto vintage (``7``, ``"7"``, ``"stream 7"``, ``"0x0"``); what cannot be read
is ``MISSING``. The builder also keeps what the metadata and instant events say.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from itertools import compress, repeat
from operator import attrgetter, is_, is_not, itemgetter
from typing import Any, NamedTuple, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from steptrace.trace import memory
from steptrace.trace.arrays import by_start_longer_first
from steptrace.trace.decode import (
    METADATA_FIELDS,
    AnyEvent,
    Document,
    Event,
    EventArgs,
    FlowStart,
    Instant,
    Metadata,
    TolerantEvent,
)
from steptrace.trace.kinds import GPU_WORK, LAUNCHES, Kind, kind_of, legacy_operator_kind
from steptrace.trace.table import MISSING, CommArgs, EventTable
from steptrace.trace.threads import helper_for
from steptrace.trace.timestamps import (
    LIMIT_NS,
    NOT_A_NUMBER,
    OK,
    OUT_OF_RANGE,
    durations,
    nanoseconds,
)

ThreadKey = tuple[int | str, int | str]
Ints = NDArray[np.int64]
_Phase = TypeVar("_Phase", Event, Instant, Metadata, FlowStart)

_DIGITS = re.compile(r"-?\d+")
_NO_ARGS = EventArgs()
_CORRELATED = np.array([*GPU_WORK, *LAUNCHES, Kind.CUDA_SYNC], dtype=np.int8)
_GPU_WORK = np.array([*GPU_WORK, Kind.CUDA_SYNC], dtype=np.int8)
_COPIES = np.array([Kind.MEMCPY, Kind.MEMSET], dtype=np.int8)
# Rows whose collective args are read: record_param_comms operators and NCCL/RCCL kernels.
_COMM_NAME = re.compile(r"^record_param_comms$|nccl|rccl", re.IGNORECASE)
_COMM_KINDS = np.array([Kind.CPU_OP, Kind.KERNEL], dtype=np.int8)
# The collective args a row keeps, as a tuple (EventArgs itself would also carry the shapes).
_COMM_FIELD_NAMES = ("collective", "process_group", "group_ranks", "dtype", "seq",
                     "in_nelems", "out_nelems", "group_size")  # fmt: skip
_comm_fields_of = attrgetter(*_COMM_FIELD_NAMES)
CommFields = tuple[Any, ...]
_TEXT_OR_NONE = {str, type(None)}
_NONE = {type(None)}


class _Interner(dict[Any, int]):
    """Key -> dense id; a hit is one C-level lookup, a miss assigns the next id."""

    def __missing__(self, key: Any) -> int:
        self[key] = value = len(self)
        return value


class ColumnBuilder:
    """Accumulates batches of decoded events into the columns of an ``EventTable``."""

    def __init__(self) -> None:
        self.names = _Interner()
        self.categories = _Interner()
        self.category_kinds: list[Kind | None] = []
        self.raw_threads = _Interner()
        self.shapes = _Interner()
        self.thread_names: dict[ThreadKey, str] = {}
        self.memory_events = 0
        self.fwdbwd_flows = 0
        self.events_seen = 0
        self._batches: list[dict[str, NDArray[np.generic]]] = []
        self._comm_names: list[bool] = []  # per interned name: may carry collective args
        self._comm: list[tuple[NDArray[np.int64], list[CommFields]]] = []  # (rows, fields)
        self._rows = 0  # complete events taken so far

    def add(self, events: list[AnyEvent]) -> None:
        """Take one batch of decoded events (see ``piece`` and ``merge`` for another process's)."""
        self.events_seen += len(events)
        types = list(map(type, events))
        present = set(types)  # a batch seldom holds every phase: no pass for those it lacks

        def of_phase(phase: type[_Phase]) -> Iterator[_Phase]:  # a C-level filter
            if phase not in present:
                return iter(())
            return cast(Iterator[_Phase], compress(events, map(is_, types, repeat(phase))))

        complete = list(of_phase(Event)) or list(of_phase(TolerantEvent))
        self.memory_events += list(map(attrgetter("name"), of_phase(Instant))).count("[memory]")
        self.fwdbwd_flows += list(map(attrgetter("cat"), of_phase(FlowStart))).count("fwdbwd")
        for e in of_phase(Metadata):
            if e.name == "thread_name" and e.args and e.args.name:
                self.thread_names[(_id(e.pid), _id(e.tid))] = str(e.args.name)
        if complete:
            self._batches.append(self._columns(complete))
            self._rows += len(complete)

    def take(self, documents: Iterable[Document[AnyEvent]]) -> Document[AnyEvent]:
        """Take the events of every (partial) document; their metadata together."""
        metadata: dict[str, Any] = {}
        for part in documents:
            if part.traceEvents:
                self.add(part.traceEvents)
            metadata |= {k: v for k in METADATA_FIELDS if (v := getattr(part, k)) is not None}
        return Document(**metadata)

    def piece(self) -> Piece:
        """What this builder took, with its own ids, for another builder to ``merge``."""
        return Piece(
            names=list(self.names),
            categories=list(self.categories),
            raw_threads=list(self.raw_threads),
            shapes=list(self.shapes),
            batches=self._batches,
            comm=self._comm,
            rows=self._rows,
            thread_names=self.thread_names,
            counts=(self.events_seen, self.memory_events, self.fwdbwd_flows),
        )

    def merge(self, piece: Piece) -> None:
        """Take the batches of a ``piece`` (built in another process), its ids made ours."""
        events_seen, memory_events, fwdbwd_flows = piece.counts
        self.events_seen += events_seen
        self.memory_events += memory_events
        self.fwdbwd_flows += fwdbwd_flows
        self.thread_names |= piece.thread_names
        if not piece.batches:
            return
        names = _remap(self.names, piece.names)
        categories = _remap(self.categories, piece.categories)
        self.category_kinds += [
            kind_of(c) for c in list(self.categories)[len(self.category_kinds) :]
        ]
        threads = _remap(self.raw_threads, piece.raw_threads)
        shapes = np.append(_remap(self.shapes, piece.shapes), np.int32(MISSING))  # [-1]: none
        for batch in piece.batches:
            batch["name_id"] = names[batch["name_id"]]
            batch["category"] = categories[batch["category"]]
            batch["raw_thread"] = threads[batch["raw_thread"]]
            batch["shape_id"] = shapes[batch["shape_id"]]
            self._batches.append(batch)
        self._comm += [(rows + self._rows, args) for rows, args in piece.comm]
        self._rows += piece.rows

    def _columns(self, complete: list[Event]) -> dict[str, NDArray[np.generic]]:
        """Columns of one batch; ``map`` with ``attrgetter`` keeps the loops in C."""
        n = len(complete)
        category = _ids(self.categories, map(attrgetter("cat"), complete), n)
        self.category_kinds += [
            kind_of(c) for c in list(self.categories)[len(self.category_kinds) :]
        ]
        by_category = np.array([Kind.OTHER if k is None else k for k in self.category_kinds])
        kind = by_category[category].astype(np.int8)
        legacy = np.flatnonzero(kind == Kind.LEGACY_OPERATOR)
        kind[legacy] = [_legacy_kind(complete[i]) for i in legacy.tolist()]
        name_id = _ids(self.names, map(attrgetter("name"), complete), n)
        self._comm_args(complete, kind, name_id)
        return {
            **_times("start", nanoseconds(list(map(attrgetter("ts"), complete)))),
            **_times("dur", durations(list(map(attrgetter("dur"), complete)))),
            "name_id": name_id,
            "category": category,
            "raw_thread": _ids(self.raw_threads, map(attrgetter("pid", "tid"), complete), n),
            "kind": kind,
            **self._args(complete, kind),
        }  # fmt: skip

    def _args(
        self, complete: list[Event], kind: NDArray[np.int8]
    ) -> dict[str, NDArray[np.generic]]:
        """The ``args`` columns, filled only for the rows whose analyses read them."""
        n = len(complete)
        columns: dict[str, NDArray[np.generic]] = {
            "correlation": np.full(n, MISSING, np.int64),
            "device": np.full(n, MISSING, np.int64),
            "stream": np.full(n, MISSING, np.int64),
            "bytes": np.full(n, math.nan, np.float64),
            "shape_id": np.full(n, MISSING, np.int32),
            "records_grad": np.zeros(n, dtype=bool),
        }
        launched = np.flatnonzero(np.isin(kind, _CORRELATED))
        columns["correlation"][launched] = _ints(_args_of(complete, launched), "correlation")
        work = np.flatnonzero(np.isin(kind, _GPU_WORK))
        events, args = _pick(complete, work), _args_of(complete, work)
        columns["device"][work] = _ints(args, "device", fallback=map(attrgetter("pid"), events))
        columns["stream"][work] = _ints(args, "stream", fallback=map(attrgetter("tid"), events))
        copies = np.flatnonzero(np.isin(kind, _COPIES))
        columns["bytes"][copies] = [
            b if isinstance(b, int | float) else math.nan
            for b in map(attrgetter("bytes"), _args_of(complete, copies))
        ]
        ops = np.flatnonzero(kind == Kind.CPU_OP)
        op_args = _args_of(complete, ops)
        columns["records_grad"][ops] = np.fromiter(
            map(is_not, map(attrgetter("sequence"), op_args), repeat(None)), bool, ops.size
        )
        self._shapes(columns["shape_id"], ops, op_args)
        labels = np.flatnonzero(kind == Kind.USER_ANNOTATION)  # gloo:all_reduce records its input
        self._shapes(columns["shape_id"], labels, _args_of(complete, labels))
        return columns  # fmt: skip

    def _shapes(
        self, shape_id: NDArray[np.generic], rows: NDArray[np.intp], args: list[EventArgs]
    ) -> None:
        """The ids of the ``rows``' input shapes, where they have some (``record_shapes``)."""
        has_dims = np.fromiter(map(len, map(attrgetter("input_dims"), args)), np.int64, rows.size)
        for k in np.flatnonzero(has_dims).tolist():
            a = args[k]
            shape_id[rows[k]] = self.shapes[bytes(a.input_dims), bytes(a.input_types)]

    def _comm_args(
        self, complete: list[Event], kind: NDArray[np.int8], name_id: NDArray[np.int32]
    ) -> None:
        """Keep the args of the few rows that may be collectives (by name, then kind)."""
        names = list(self.names)
        self._comm_names += [bool(_COMM_NAME.search(n)) for n in names[len(self._comm_names) :]]
        flagged = np.flatnonzero(np.array(self._comm_names, dtype=bool))
        if not flagged.size:
            return
        hits = np.isin(name_id, flagged) & np.isin(kind, _COMM_KINDS)
        rows = np.flatnonzero(hits)
        if rows.size:
            fields = list(map(_comm_fields_of, _args_of(complete, rows)))  # a few, compact to send
            self._comm.append((rows + self._rows, fields))

    def _comm_table(self, order: NDArray[np.intp]) -> CommArgs:
        """The collective args of the kept rows, indexed by their row in the sorted table."""
        if not self._comm:
            return CommArgs()
        written = np.concatenate([r for r, _ in self._comm])  # rows as read: increasing
        args = [a for _, batch in self._comm for a in batch]
        is_written = np.zeros(self._rows, dtype=bool)
        is_written[written] = True
        rows = np.flatnonzero(is_written[order])  # where the usable ones are in the table
        keep = np.searchsorted(written, order[rows])
        kept = [args[i] for i in keep.tolist()]

        def text(field: str) -> tuple[str | None, ...]:
            values = tuple(map(itemgetter(_COMM_FIELD_NAMES.index(field)), kept))
            if set(map(type, values)) <= _TEXT_OR_NONE:  # as written, the usual case
                return values
            return tuple(None if v is None else str(v) for v in values)

        def ints(field: str) -> NDArray[np.int64]:
            # mostly absent (None) or plain ints
            values = list(map(itemgetter(_COMM_FIELD_NAMES.index(field)), kept))
            if set(map(type, values)) <= _NONE:
                return np.full(len(values), MISSING, dtype=np.int64)
            read = [MISSING if v is None else v if type(v) is int else as_int(v) for v in values]
            try:
                return np.array(read, dtype=np.int64)
            except OverflowError:  # an integer beyond int64 (hostile input): not a number here
                read = [as_int(v) for v in read]
            return np.array(read, dtype=np.int64)

        return CommArgs(
            rows=rows, collective=text("collective"), process_group=text("process_group"),
            group_ranks=text("group_ranks"), dtype=text("dtype"), seq=ints("seq"),
            in_nelems=ints("in_nelems"), out_nelems=ints("out_nelems"),
            group_size=ints("group_size"),
        )  # fmt: skip

    def unknown_categories(self) -> dict[str, int]:
        """Categories no analysis knows, with how many complete events each has."""
        if not self._batches:
            return {}
        counts = np.bincount(self._concat("category"), minlength=len(self.categories))
        return {
            c or "<none>": int(counts[i])
            for c, i in self.categories.items()
            if self.category_kinds[i] is None
        }

    def table(self) -> tuple[EventTable, Unusable]:
        """The sorted table of usable rows (times from the first one), and what was skipped.

        The batches are consumed column by column, each freed once taken, so that the
        columns are held about once (not twice) while the table is built. Once the order
        is known, a helper thread puts half of the columns in it while this one does the
        times and the rest (numpy's take releases the GIL: both run at once).
        """
        start = self._pop("start_ns").astype(np.int64, copy=False)
        dur = self._pop("dur_ns").astype(np.int64, copy=False)
        order, unusable = self._order(start, dur)
        column = self._take(order)
        helped: dict[str, type[np.generic]] = {
            "correlation": np.int64, "device": np.int64, "stream": np.int64,
            "bytes": np.float64, "shape_id": np.int32,
        }  # fmt: skip

        def gather(typed: dict[str, type[np.generic]]) -> dict[str, Any]:
            return {name: column(name, dtype) for name, dtype in typed.items()}

        with helper_for(self._rows) as helper:
            other = helper.submit(gather, helped)
            origin, start_ns, dur_ns = _sorted_times(start, dur, order)
            del start, dur
            start_us, dur_us = start_ns / 1000, dur_ns / 1000
            end_us = np.add(start_ns, dur_ns, out=start_ns) / 1000  # start_ns not needed after
            del start_ns, dur_ns
            thread_of_raw, threads = self._canonical_threads()
            comm = self._comm_table(order)
            taken = gather({"kind": np.int8, "name_id": np.int32, "raw_thread": np.int32,
                            "records_grad": np.bool_})  # fmt: skip
        taken |= other.result()
        table = EventTable(
            kind=taken["kind"],
            name_id=taken["name_id"],
            names=tuple(self.names),
            thread_id=thread_of_raw[taken["raw_thread"]],
            threads=threads,
            origin_ns=origin,
            start_us=start_us,
            dur_us=dur_us,
            end_us=end_us,
            correlation=taken["correlation"],
            device=taken["device"],
            stream=taken["stream"],
            bytes=taken["bytes"],
            shape_id=taken["shape_id"],
            records_grad=taken["records_grad"],
            shapes=tuple(d.decode("utf-8", "replace") for d, _ in self.shapes),
            shape_types=tuple(t.decode("utf-8", "replace") for _, t in self.shapes),
            comm=comm,
        )
        return table, unusable

    def _order(self, start: Ints, dur: Ints) -> tuple[NDArray[np.intp], Unusable]:
        """The usable rows by start, longer first on ties; the others counted by reason."""
        statuses = np.maximum(self._pop("start_status"), self._pop("dur_status"))
        negative = (statuses == OK) & (dur < 0)
        overflow = (statuses == OK) & ~negative & (start >= LIMIT_NS - dur)
        usable = (statuses == OK) & ~negative & ~overflow
        unusable = Unusable(
            not_a_number=int((statuses == NOT_A_NUMBER).sum()),
            negative=int(negative.sum()),
            out_of_range=int((statuses == OUT_OF_RANGE).sum() + overflow.sum()),
        )
        del statuses, negative, overflow
        if usable.all():
            return by_start_longer_first(start, dur), unusable
        rows = np.flatnonzero(usable)
        return rows[by_start_longer_first(start[rows], dur[rows])], unusable

    def _take(self, order: NDArray[np.intp]) -> Callable[[str, type[np.generic]], Any]:
        """A column in table order, of the given type; its batches are let go."""

        def column(name: str, dtype: type[np.generic]) -> Any:
            return self._pop(name)[order].astype(dtype, copy=False)

        return column

    def _pop(self, name: str) -> NDArray[np.generic]:
        """A column of every batch, concatenated, and taken out of the batches (whose
        memory is given back at once: see ``memory``)."""
        column = np.concatenate([batch.pop(name) for batch in self._batches])
        if self._rows >= memory.TRIM_ROWS:  # a few ms each: worth it only for large tables
            memory.release_freed_memory()
        return column

    def _concat(self, name: str) -> NDArray[np.generic]:
        return np.concatenate([batch[name] for batch in self._batches])

    def _canonical_threads(self) -> tuple[NDArray[np.int32], tuple[ThreadKey, ...]]:
        """``"25738"`` and ``25738`` are the same thread."""
        canonical: dict[ThreadKey, int] = {}
        remap = [
            canonical.setdefault((_id(p), _id(t)), len(canonical)) for p, t in self.raw_threads
        ]
        return np.array(remap, dtype=np.int32), tuple(canonical)  # fmt: skip


class Piece(NamedTuple):
    """The columns of some events, ids local to them: ``ColumnBuilder.piece``'s result,
    plain data that crosses processes (``parallel``)."""

    names: list[str]
    categories: list[str]
    raw_threads: list[ThreadKey]
    shapes: list[tuple[bytes, bytes]]
    batches: list[dict[str, NDArray[np.generic]]]
    comm: list[tuple[NDArray[np.int64], list[CommFields]]]
    rows: int
    thread_names: dict[ThreadKey, str]
    counts: tuple[int, int, int]  # events seen, [memory] instants, fwdbwd flows


class Unusable(NamedTuple):
    """Complete events skipped for their ``ts`` or ``dur``, by reason."""

    not_a_number: int  # missing, a string, null...
    negative: int  # a negative duration
    out_of_range: int  # beyond ±2**62 ns, or ending there


def _sorted_times(start: Ints, dur: Ints, order: NDArray[np.intp]) -> tuple[int, Ints, Ints]:
    """The origin and, in table order, starts from it and durations (integer ns)."""
    start = start[order]
    origin = int(start[0]) if order.size else 0
    start -= origin  # exact: |values| < 2**62
    return origin, start, dur[order]


def _times(field: str, read: tuple[Ints, NDArray[np.int8]]) -> dict[str, NDArray[np.generic]]:
    ns, status = read
    return {f"{field}_ns": ns, f"{field}_status": status}


def _ids(interner: _Interner, keys: Iterator[Any], n: int) -> NDArray[np.int32]:
    return np.fromiter(map(interner.__getitem__, keys), dtype=np.int32, count=n)


def _remap(interner: _Interner, keys: list[Any]) -> NDArray[np.int32]:
    """Our id of each key, by its id elsewhere."""
    return np.fromiter(map(interner.__getitem__, keys), dtype=np.int32, count=len(keys))


def _legacy_kind(event: Event) -> Kind:
    has_inputs = event.args is not None and len(event.args.input_dims) > 0
    return legacy_operator_kind(event.name, has_inputs)


def _pick(complete: list[Event], rows: NDArray[np.intp]) -> list[Event]:
    return [complete[i] for i in rows.tolist()]


def _args_of(complete: list[Event], rows: NDArray[np.intp]) -> list[EventArgs]:
    return [a or _NO_ARGS for a in map(attrgetter("args"), _pick(complete, rows))]


_INT64 = (-(2**63), 2**63)


def _ints(
    args: list[EventArgs], field: str, fallback: Iterator[int | str] | None = None
) -> NDArray[np.int64] | list[int]:
    """An integer ``args`` field per row; where it is absent, ``fallback`` (pid or tid)."""
    values: list[object] = list(map(attrgetter(field), args))
    if set(map(type, values)) <= {int}:  # the usual case, converted in C
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            pass
    written: Iterable[object] = values
    if fallback is not None:
        written = (f if v is None else v for v, f in zip(values, fallback, strict=True))
    return [v if type(v) is int and _INT64[0] <= v < _INT64[1] else as_int(v) for v in written]


def as_int(value: object) -> int:
    """An integer field as written (``7``, ``"7"``, ``"stream 7"``, ``"0x0"``); else MISSING."""
    number = _parse_int(value)
    return number if _INT64[0] <= number < _INT64[1] else MISSING


def _parse_int(value: object) -> int:
    if type(value) is int:
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        if value.lower().startswith("0x"):
            try:
                return int(value, 16)
            except ValueError:
                return MISSING
        match = _DIGITS.search(value)
        if match:
            return int(match.group())
    return MISSING


def _id(value: int | str) -> int | str:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value
