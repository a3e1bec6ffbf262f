"""Load a torch.profiler (Kineto) Chrome trace, ``.json`` or ``.json.gz``, into a ``Trace``."""

from __future__ import annotations

import gc
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from steptrace.errors import TraceError
from steptrace.trace.decode import Document, Event, EventArgs, decode, decompress
from steptrace.trace.kinds import GPU_WORK, LAUNCHES, Kind, kind_of, legacy_operator_kind
from steptrace.trace.progress import loading_progress
from steptrace.trace.table import MISSING, Device, Distributed, EventTable, Trace, TraceInfo

_CHUNK = 8 * 1024 * 1024
_OPTION_KEYS = ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")
_DIGITS = re.compile(r"-?\d+")
_NO_ARGS = EventArgs()


def load_trace(path: str | Path, *, progress: bool | None = None) -> Trace:
    """Read and decode a trace file; raise ``TraceError`` with a one-line message if unusable."""
    path = Path(path)
    where = str(path)
    if not path.exists():
        raise TraceError(f"{where}: no such file")
    if path.is_dir():
        raise TraceError(f"{where}: is a folder, not a trace file")
    size = path.stat().st_size
    with loading_progress(path.name, size, progress) as stage, _collector_paused():
        raw = _read(path, stage.read)
        stage.step("decompressing")
        data = decompress(raw, where)
        del raw
        stage.step("decoding")
        document = decode(data, where)
        del data
        stage.step("indexing")
        return _build(document, path, size)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Building millions of acyclic objects triggers useless collections: pause them."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _read(path: Path, advance: Any) -> bytes:
    try:
        with path.open("rb") as handle:
            chunks = []
            while chunk := handle.read(_CHUNK):
                chunks.append(chunk)
                advance(len(chunk))
    except OSError as exc:
        raise TraceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return b"".join(chunks)


def _build(document: Document, path: Path, size: int) -> Trace:
    if document.traceEvents is None:
        raise TraceError(f"{path}: not a torch.profiler trace (no traceEvents)")
    events = document.traceEvents
    if not events:
        raise TraceError(f"{path}: the trace holds no events")
    complete = [e for e in events if e.ph == "X"]
    if not complete:
        raise TraceError(f"{path}: the trace holds no complete (ph 'X') events to measure")
    warnings: list[str] = []
    table = _table(complete, warnings)
    if len(table) == 0:
        raise TraceError(f"{path}: no event has a usable ts and dur")
    info = TraceInfo(
        path=path,
        size_bytes=size,
        events_total=len(events),
        devices=_devices(document.deviceProperties),
        distributed=_distributed(document.distributedInfo),
        base_time_ns=_as_int(document.baseTimeNanoseconds),
        time_unit=document.displayTimeUnit,
        options={k: str(v) for k in _OPTION_KEYS if (v := getattr(document, k)) is not None},
        memory_events=sum(1 for e in events if e.ph == "i" and e.name == "[memory]"),
        thread_names=_thread_names(events),
        warnings=tuple(warnings),
    )
    return Trace(info=info, events=table)


def _table(complete: list[Event], warnings: list[str]) -> EventTable:
    start = np.array([e.ts for e in complete], dtype=np.float64)  # None -> NaN
    dur = np.array([e.dur for e in complete], dtype=np.float64)
    usable = np.isfinite(start) & np.isfinite(dur) & (dur >= 0)
    if not usable.all():
        warnings.append(
            f"skipped {int((~usable).sum())} complete events without a usable ts/dur "
            "(missing, negative or not finite)"
        )
    names: dict[str, int] = {}
    name_id = np.array([names.setdefault(e.name, len(names)) for e in complete], np.int32)
    kind = _kinds(complete, warnings)
    thread_id, threads = _threads(complete)
    rows = np.flatnonzero(usable)
    order = rows[np.lexsort((-dur[rows], start[rows]))]
    args = _ArgColumns(complete, kind)
    return EventTable(
        kind=kind[order],
        name_id=name_id[order],
        names=tuple(names),
        thread_id=thread_id[order],
        threads=threads,
        start_us=start[order],
        dur_us=dur[order],
        correlation=args.correlation[order],
        device=args.device[order],
        stream=args.stream[order],
        bytes=args.nbytes[order],
        shape_id=args.shape_id[order],
        shapes=args.shapes,
    )


def _kinds(complete: list[Event], warnings: list[str]) -> np.ndarray:
    categories: dict[str, int] = {}
    category_id = np.array(
        [categories.setdefault(e.cat, len(categories)) for e in complete], np.int64
    )
    by_category = np.zeros(len(categories), dtype=np.int8)
    unknown: list[str] = []
    for category, index in categories.items():
        known = kind_of(category)
        by_category[index] = Kind.OTHER if known is None else known
        if known is None:
            unknown.append(category or "<none>")
    kind = by_category[category_id]
    if unknown:
        per_category = np.bincount(category_id, minlength=len(categories))
        count = sum(int(per_category[categories[c]]) for c in categories if kind_of(c) is None)
        listed = ", ".join(repr(c) for c in sorted(unknown))
        warnings.append(f"ignored {count} events of unknown categories: {listed}")
    legacy = np.flatnonzero(kind == Kind.LEGACY_OPERATOR)
    kind[legacy] = [
        legacy_operator_kind(complete[i].name, _has_inputs(complete[i])) for i in legacy.tolist()
    ]
    return kind


def _has_inputs(event: Event) -> bool:
    return event.args is not None and len(event.args.input_dims) > 0


def _threads(complete: list[Event]) -> tuple[np.ndarray, tuple[tuple[int | str, int | str], ...]]:
    """Intern (pid, tid); ``"25738"`` and ``25738`` are the same thread."""
    raw: dict[tuple[int | str, int | str], int] = {}
    codes = np.array([raw.setdefault((e.pid, e.tid), len(raw)) for e in complete], np.int32)
    canonical: dict[tuple[int | str, int | str], int] = {}
    remap = np.array(
        [canonical.setdefault((_id(p), _id(t)), len(canonical)) for p, t in raw], np.int32
    )
    return (remap[codes] if len(codes) else codes), tuple(canonical)


class _ArgColumns:
    """The ``args`` columns, filled only for the rows whose analyses read them."""

    def __init__(self, complete: list[Event], kind: np.ndarray) -> None:
        n = len(complete)
        self.correlation = np.full(n, MISSING, np.int64)
        self.device = np.full(n, MISSING, np.int64)
        self.stream = np.full(n, MISSING, np.int64)
        self.nbytes = np.full(n, math.nan, np.float64)
        self.shape_id = np.full(n, MISSING, np.int32)
        gpu = np.isin(kind, np.array([*GPU_WORK, *LAUNCHES, Kind.CUDA_SYNC], np.int8))
        rows = np.flatnonzero(gpu)
        events = [complete[i] for i in rows.tolist()]
        args = [e.args or _NO_ARGS for e in events]
        self.correlation[rows] = [_as_int(a.correlation) for a in args]
        self.device[rows] = [
            _as_int(e.pid if a.device is None else a.device)
            for e, a in zip(events, args, strict=True)
        ]
        self.stream[rows] = [
            _as_int(e.tid if a.stream is None else a.stream)
            for e, a in zip(events, args, strict=True)
        ]
        self.nbytes[rows] = [
            a.bytes if isinstance(a.bytes, int | float) else math.nan for a in args
        ]
        shapes: dict[bytes, int] = {}
        for i in np.flatnonzero(kind == Kind.CPU_OP).tolist():
            a = complete[i].args
            if a is not None and a.input_dims:
                self.shape_id[i] = shapes.setdefault(bytes(a.input_dims), len(shapes))
        self.shapes = tuple(s.decode("utf-8", "replace") for s in shapes)


def _as_int(value: object) -> int:
    """An integer field as written (``7``, ``"7"``, ``"stream 7"``, ``"0x0"``); else MISSING."""
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


def _devices(properties: list[dict[str, Any]] | None) -> tuple[Device, ...] | None:
    if properties is None:
        return None
    devices = []
    for p in properties:
        major, minor = p.get("computeMajor"), p.get("computeMinor")
        devices.append(
            Device(
                id=_as_int(p.get("id", MISSING)),
                name=str(p.get("name", "unknown")),
                compute_capability=f"{major}.{minor}" if major is not None else None,
                memory_bytes=_as_int(p["totalGlobalMem"]) if "totalGlobalMem" in p else None,
            )
        )
    return tuple(devices)


def _distributed(info: dict[str, Any] | None) -> Distributed | None:
    if not info:
        return None
    rank, world = info.get("rank"), info.get("world_size")
    backend = info.get("backend")
    return Distributed(
        rank=_as_int(rank) if rank is not None else None,
        world_size=_as_int(world) if world is not None else None,
        backend=str(backend) if backend is not None else None,
    )


def _thread_names(events: list[Event]) -> dict[tuple[int | str, int | str], str]:
    return {
        (_id(e.pid), _id(e.tid)): str(e.args.name)
        for e in events
        if e.ph == "M" and e.name == "thread_name" and e.args is not None and e.args.name
    }
