"""Decoded events -> numpy columns, one batch at a time, names and texts interned across batches.

Complete events (``ph == "X"``) become the event table's rows; their ``args`` become the
columns the ``Selection`` declares (``fields``), each read as its ``Value`` says, only
for the rows whose kinds carry it. Integer fields are accepted as written by every Kineto
vintage (``7``, ``"7"``, ``"stream 7"``, ``"0x0"``); what cannot be read is ``MISSING``.
Instants and flows become their own tables when selected (``instants``, ``flows``), else
they are counted. The builder also keeps what the metadata events say.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from itertools import compress, repeat
from operator import attrgetter, is_, is_not
from types import NoneType
from typing import Any, NamedTuple, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from steptrace.trace.arrays import fits_int32
from steptrace.trace.decode import ABSENT_JSON as _ABSENT
from steptrace.trace.decode import METADATA_FIELDS, AnyEvent, Codec, Metadata, RawDocument
from steptrace.trace.fields import MISSING, Field, Value
from steptrace.trace.kinds import Kind, kind_of, legacy_operator_kind
from steptrace.trace.timestamps import durations, nanoseconds
from steptrace.trace.values import ThreadKey, canonical_threads, ints, thread_id_of

Rows = NDArray[np.intp]
Batch = dict[str, NDArray[np.generic]]
_S = TypeVar("_S")

_FLOW_PHASES = {"s": 0, "t": 1, "f": 2}
_TEXT_VALUES = (Value.TEXT, Value.JSON)
_NONE = {NoneType}
_NUMBERS = {int, float, NoneType}
_DTYPES: dict[Value, type[np.generic]] = {
    Value.INT: np.int64,
    Value.FLOAT: np.float64,
    Value.TEXT: np.int32,
    Value.JSON: np.int32,
    Value.FLAG: np.bool_,
}


class _Interner(dict[Any, int]):
    """Key -> dense id; a hit is one C-level lookup, a miss assigns the next id."""

    def __missing__(self, key: Any) -> int:
        self[key] = value = len(self)
        return value


class Counts(NamedTuple):
    """Events seen, whatever was kept of them."""

    events: int = 0
    memory: int = 0  # [memory] instants (profile_memory)
    fwdbwd: int = 0  # forward-to-backward flows: autograd ran a backward pass

    def __add__(self, other: object) -> Counts:
        assert isinstance(other, Counts)
        return Counts(*(a + b for a, b in zip(self, other, strict=True)))


class ColumnBuilder:
    """Accumulates batches of decoded events into the columns of the trace's tables."""

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        self.names = _Interner()
        self.categories = _Interner()
        self.category_kinds: list[Kind | None] = []
        self.raw_threads = _Interner()
        self.texts = _Interner()  # TEXT and JSON values, instants' names, flows' categories
        self.thread_names: dict[ThreadKey, str] = {}
        self.counts = Counts()
        self.batches: list[Batch] = []  # complete events' columns
        self.instants: list[Batch] = []
        self.flows: list[Batch] = []
        self._name_flags: dict[str, list[bool]] = {}  # per sparse pattern: per name id
        self._fields = codec.selection.complete
        self._instant_fields = codec.selection.instant

    def add(self, events: list[AnyEvent]) -> None:
        """Take one batch of decoded events (see ``piece`` and ``merge`` for another process's)."""
        codec = self.codec
        types = list(map(type, events))
        present = set(types)  # a batch seldom holds every phase: no pass for those it lacks

        def of(*classes: type[_S]) -> list[_S]:  # a C-level filter
            taken: list[_S] = []
            for c in classes:
                if c in present:
                    taken += cast(Iterator[_S], compress(events, map(is_, types, repeat(c))))
            return taken

        complete = of(codec.event) or of(codec.tolerant)
        instants = of(codec.instant)
        flows = of(*codec.flows)
        memory = list(map(attrgetter("name"), instants)).count("[memory]")
        starts = list(map(attrgetter("cat"), of(codec.flows[0])))  # CountedFlow or FlowStart
        self.counts += Counts(len(events), memory, starts.count("fwdbwd"))
        for e in of(Metadata):
            if e.name == "thread_name" and e.args and e.args.name:
                self.thread_names[(thread_id_of(e.pid), thread_id_of(e.tid))] = str(e.args.name)
        if complete:
            self.batches.append(self._columns(complete))
        if instants and self._instant_fields:
            self.instants.append(self._instant_columns(instants))
        if flows and len(codec.flows) > 1:
            self.flows.append(self._flow_columns(flows))

    def take(self, documents: Iterable[RawDocument[AnyEvent]]) -> RawDocument[AnyEvent]:
        """Take the events of every (partial) document; their metadata together."""
        metadata: dict[str, Any] = {}
        for part in documents:
            if part.traceEvents:
                self.add(part.traceEvents)
            metadata |= {k: v for k in METADATA_FIELDS if (v := getattr(part, k)) is not None}
        return RawDocument(**metadata)

    def piece(self) -> Piece:
        """What this builder took, with its own ids, for another builder to ``merge``."""
        return Piece(
            names=list(self.names),
            categories=list(self.categories),
            raw_threads=list(self.raw_threads),
            texts=list(self.texts),
            batches=self.batches,
            instants=self.instants,
            flows=self.flows,
            thread_names=self.thread_names,
            counts=self.counts,
        )

    def merge(self, piece: Piece) -> None:
        """Take the batches of a ``piece`` (built in another process), its ids made ours."""
        self.counts += piece.counts
        self.thread_names |= piece.thread_names
        names = _ids(self.names, piece.names, len(piece.names))
        categories = _ids(self.categories, piece.categories, len(piece.categories))
        self._learn_categories()
        threads = _ids(self.raw_threads, piece.raw_threads, len(piece.raw_threads))
        texts = _ids(self.texts, piece.texts, len(piece.texts))
        texts = np.append(texts, np.int32(MISSING))  # [-1]: none
        for batch in piece.batches:
            batch["name_id"] = names[batch["name_id"]]
            batch["category"] = categories[batch["category"]]
            batch["raw_thread"] = threads[batch["raw_thread"]]
            for f in self._fields:
                if f.value in _TEXT_VALUES:
                    batch[f.column] = texts[batch[f.column]]
            self.batches.append(batch)
        for batch in (*piece.instants, *piece.flows):
            batch["raw_thread"] = threads[batch["raw_thread"]]
            for column in ("name", "category"):
                if column in batch:
                    batch[column] = texts[batch[column]]
        self.instants += piece.instants
        self.flows += piece.flows

    def _learn_categories(self) -> None:
        self.category_kinds += [
            kind_of(c) for c in list(self.categories)[len(self.category_kinds) :]
        ]

    def _columns(self, complete: list[Any]) -> Batch:
        """Columns of one batch of complete events; ``map`` with ``attrgetter`` keeps the
        loops in C."""
        n = len(complete)
        category = _ids(self.categories, map(attrgetter("cat"), complete), n)
        self._learn_categories()
        by_category = np.array([Kind.OTHER if k is None else k for k in self.category_kinds])
        kind = by_category[category].astype(np.int8)
        legacy = np.flatnonzero(kind == Kind.LEGACY_OPERATOR)
        kind[legacy] = [  # 2021's "Operator" category: operators and labels alike
            legacy_operator_kind(e.name, e.args is not None and len(e.args.input_dims) > 0)
            for e in map(complete.__getitem__, legacy.tolist())
        ]
        name_id = _ids(self.names, map(attrgetter("name"), complete), n)
        start_ns, start_status = nanoseconds(list(map(attrgetter("ts"), complete)))
        dur_ns, dur_status = durations(list(map(attrgetter("dur"), complete)))
        batch: Batch = {
            "start_ns": start_ns,
            "start_status": start_status,
            "dur_ns": dur_ns,
            "dur_status": dur_status,
            "name_id": name_id,
            "category": category,
            "raw_thread": _ids(self.raw_threads, map(attrgetter("pid", "tid"), complete), n),
            "kind": kind,
        }
        carriers = _Carriers(complete, kind, name_id, self.codec.no_args)
        for field in self._fields:
            flags = self._flags(field) if field.sparse else None
            rows, args = carriers.of(field, flags)
            values = self._read(field, args, carriers.fallback(field, rows), rows.size)
            if field.sparse:
                batch[f"{field.column}.rows"] = rows.astype(np.int32)
                batch[field.column] = values
                continue
            column = np.full(n, field.missing, dtype=_DTYPES[field.value])
            column[rows] = values
            batch[field.column] = _compact(column) if field.value is Value.INT else column
        return batch

    def _flags(self, field: Field) -> NDArray[np.bool_]:
        """Per interned name: does it match the sparse ``field``'s pattern?"""
        pattern = field.name_pattern
        assert pattern is not None
        flags = self._name_flags.setdefault(pattern.pattern, [])
        flags += [bool(pattern.search(n)) for n in list(self.names)[len(flags) :]]
        return np.array(flags, dtype=bool)

    def _read(
        self, field: Field, args: list[Any], fallback: Iterator[int | str] | None, n: int
    ) -> Any:
        """The ``field``'s value in each of ``args``, as its column holds it."""
        value, read = field.value, attrgetter(field.column)
        if value is Value.FLAG:
            return np.fromiter(map(is_not, map(read, args), repeat(None)), bool, n)
        if value is Value.JSON:
            return self._json_ids(args, read, n)
        values: list[Any] = list(map(read, args))
        types = set(map(type, values))
        if types == _NONE and fallback is None:  # a field no row here carries: no pass
            return np.full(n, field.missing, dtype=_DTYPES[value])
        if value is Value.INT:
            return np.asarray(ints(values, fallback, int(field.missing)), dtype=np.int64)
        if value is Value.FLOAT:
            if types <= _NUMBERS:  # converted in C: None is NaN there too
                return np.array(values, np.float64)
            return np.array(
                [v if isinstance(v, int | float) else math.nan for v in values], np.float64
            )
        texts = self.texts
        ids = np.full(n, MISSING, dtype=np.int32)
        for k, v in enumerate(values):
            if v is not None:
                ids[k] = texts[v if type(v) is str else str(v)]
        return ids

    def _json_ids(self, args: list[Any], read: Callable[[Any], Any], n: int) -> NDArray[np.int32]:
        """The ids of the JSON texts (``msgspec.Raw``) ``read`` from ``args``, interned as
        bytes; ``MISSING`` where the key was absent (``decode.ABSENT_JSON``, found by identity)."""
        ids = np.full(n, MISSING, dtype=np.int32)
        present = np.fromiter(map(is_not, map(read, args), repeat(_ABSENT)), bool, n)
        if present.any():  # else no second pass
            kept = map(bytes, map(read, compress(args, present.tolist())))
            ids[present] = np.fromiter(map(self.texts.__getitem__, kept), np.int32)
        return ids

    def _instant_columns(self, instants: list[Any]) -> Batch:
        n = len(instants)
        at_ns, at_status = nanoseconds(list(map(attrgetter("ts"), instants)))
        empty = self.codec.no_instant_args
        args = [a or empty for a in map(attrgetter("args"), instants)]
        batch: Batch = {
            "at_ns": at_ns,
            "at_status": at_status,
            "name": _ids(self.texts, map(attrgetter("name"), instants), n),
            "raw_thread": _ids(self.raw_threads, map(attrgetter("pid", "tid"), instants), n),
        }
        for field in self._instant_fields:
            batch[field.column] = self._read(field, args, None, n)
        return batch

    def _flow_columns(self, flows: list[Any]) -> Batch:
        n = len(flows)
        at_ns, at_status = nanoseconds(list(map(attrgetter("ts"), flows)))
        phases = [_FLOW_PHASES[str(type(f).__struct_config__.tag)] for f in flows]
        return {
            "at_ns": at_ns,
            "at_status": at_status,
            "phase": np.array(phases, dtype=np.int8),
            "flow_id": np.asarray(ints(list(map(attrgetter("id"), flows))), dtype=np.int64),
            "category": _ids(self.texts, map(attrgetter("cat"), flows), n),
            "raw_thread": _ids(self.raw_threads, map(attrgetter("pid", "tid"), flows), n),
            "encloses": np.array([b == "e" for b in map(attrgetter("bp"), flows)], dtype=bool),
        }

    def unknown_categories(self) -> dict[str, int]:
        """Categories no analysis knows, with how many complete events each has."""
        if not self.batches:
            return {}
        counts = np.bincount(
            np.concatenate([b["category"] for b in self.batches]), minlength=len(self.categories)
        )
        return {
            c or "<none>": int(counts[i])
            for c, i in self.categories.items()
            if self.category_kinds[i] is None
        }

    def columns(self) -> Columns:
        """Everything taken, for ``table.build``: the batches are handed over (and emptied
        here) so that their memory goes as soon as each column is taken."""
        batches, self.batches = self.batches, []
        return Columns(
            batches=batches,
            instants=self.instants,
            flows=self.flows,
            names=tuple(self.names),
            texts=tuple(
                t.decode("utf-8", "replace") if isinstance(t, bytes) else t for t in self.texts
            ),
            threads=canonical_threads(self.raw_threads),
            fields=self._fields,
            instant_fields=self._instant_fields,
            flows_kept=len(self.codec.flows) > 1,
            instants_kept=bool(self._instant_fields),
        )


class _Carriers:
    """The rows of one batch that carry a field, and their args: found once per kinds
    (and name pattern, for a sparse field)."""

    def __init__(
        self,
        complete: list[Any],
        kind: NDArray[np.int8],
        name_id: NDArray[np.int32],
        no_args: object,
    ) -> None:
        self.complete = complete
        self.no_args = no_args
        self.kind = kind
        self.name_id = name_id
        self._found: dict[tuple[tuple[Kind, ...], str | None], tuple[Rows, list[Any]]] = {}
        self._args: NDArray[np.object_] | None = None  # every event's, taken once

    def of(self, field: Field, flags: NDArray[np.bool_] | None) -> tuple[Rows, list[Any]]:
        """The rows carrying ``field`` and their ``args`` (an empty one for events without);
        ``flags``: per name id, whether a sparse field's pattern matches it."""
        key = (field.carriers, field.names)
        if key not in self._found:
            member = np.zeros(256, dtype=bool)
            member[np.array([int(k) for k in field.carriers], dtype=np.uint8)] = True
            rows = np.flatnonzero(member[self.kind.view(np.uint8)])
            if flags is not None:
                rows = rows[flags[self.name_id[rows]]] if flags.any() else rows[:0]
            if self._args is None:  # every event's, read once: numpy picks each field's rows
                empty = self.no_args
                found = [a or empty for a in map(attrgetter("args"), self.complete)]
                self._args = np.fromiter(found, dtype=object, count=len(found))
            self._found[key] = rows, self._args[rows].tolist()
        return self._found[key]

    def fallback(self, field: Field, rows: Rows) -> Iterator[int | str] | None:
        """Where ``field`` falls back on the event's pid or tid: those, per row."""
        if field.fallback is None:
            return None
        return map(attrgetter(field.fallback), self._events(rows))

    def _events(self, rows: Rows) -> list[Any]:
        complete = self.complete
        return [complete[i] for i in rows.tolist()]


class Piece(NamedTuple):
    """The columns of some events, ids local to them: ``ColumnBuilder.piece``'s result,
    plain data that crosses processes (``parallel``)."""

    names: list[str]
    categories: list[str]
    raw_threads: list[ThreadKey]
    texts: list[str | bytes]
    batches: list[Batch]
    instants: list[Batch]
    flows: list[Batch]
    thread_names: dict[ThreadKey, str]
    counts: Counts


class Columns(NamedTuple):
    """What a builder took, handed over to ``assemble``."""

    batches: list[Batch]
    instants: list[Batch]
    flows: list[Batch]
    names: tuple[str, ...]
    texts: tuple[str, ...]
    threads: tuple[NDArray[np.int32], tuple[ThreadKey, ...]]  # per raw thread: canonical id
    fields: tuple[Field, ...]
    instant_fields: tuple[Field, ...]
    flows_kept: bool
    instants_kept: bool


def _compact(column: NDArray[np.int64]) -> NDArray[np.signedinteger[Any]]:
    """An integer column as int32 when every value fits (ids, devices: half the memory)."""
    return column.astype(np.int32) if column.size and fits_int32(column) else column


def _ids(interner: _Interner, keys: Iterable[Any], n: int) -> NDArray[np.int32]:
    return np.fromiter(map(interner.__getitem__, keys), dtype=np.int32, count=n)
