"""Load a torch.profiler (Kineto) Chrome trace, ``.json`` or ``.json.gz``, into a ``Trace``."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from steptrace.errors import TraceError
from steptrace.trace.columns import ColumnBuilder, as_int
from steptrace.trace.decode import Document, decode, decode_events, decompress
from steptrace.trace.progress import loading_progress
from steptrace.trace.table import MISSING, Device, Distributed, Trace, TraceInfo

_CHUNK = 8 * 1024 * 1024
_BATCH = 8_192  # events decoded into Python objects at a time
_OPTION_KEYS = ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")


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


def _read(path: Path, advance: Callable[[int], None]) -> bytes:
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
    raw_events = document.traceEvents
    if raw_events is None:
        raise TraceError(f"{path}: not a torch.profiler trace (no traceEvents)")
    if not raw_events:
        raise TraceError(f"{path}: the trace holds no events")
    builder = ColumnBuilder()
    for offset in range(0, len(raw_events), _BATCH):
        builder.add(decode_events(raw_events[offset : offset + _BATCH], offset, str(path)))
    del raw_events, document.traceEvents
    if not builder.names:
        raise TraceError(f"{path}: the trace holds no complete (ph 'X') events to measure")
    table, unusable = builder.table()
    if len(table) == 0:
        raise TraceError(f"{path}: no event has a usable ts and dur")
    warnings = []
    if unusable:
        warnings.append(
            f"skipped {unusable} complete events without a usable ts/dur "
            "(missing, negative or not finite)"
        )
    if unknown := builder.unknown_categories():
        listed = ", ".join(repr(c) for c in sorted(unknown))
        warnings.append(f"ignored {sum(unknown.values())} events of unknown categories: {listed}")
    info = TraceInfo(
        path=path,
        size_bytes=size,
        events_total=builder.events_seen,
        devices=_devices(document.deviceProperties),
        distributed=_distributed(document.distributedInfo),
        base_time_ns=as_int(document.baseTimeNanoseconds),
        time_unit=document.displayTimeUnit,
        options={k: str(v) for k in _OPTION_KEYS if (v := getattr(document, k)) is not None},
        memory_events=builder.memory_events,
        fwdbwd_flows=builder.fwdbwd_flows,
        thread_names=builder.thread_names,
        scenario_block=document.steptrace,
        warnings=tuple(warnings),
    )
    return Trace(info=info, events=table)


def _devices(properties: list[dict[str, Any]] | None) -> tuple[Device, ...] | None:
    if properties is None:
        return None
    devices = []
    for p in properties:
        major, minor = as_int(p.get("computeMajor")), as_int(p.get("computeMinor"))
        devices.append(
            Device(
                id=as_int(p.get("id")),
                name=str(p.get("name", "unknown")),
                compute_capability=f"{major}.{minor}" if min(major, minor) >= 0 else None,
                memory_bytes=as_int(p["totalGlobalMem"]) if "totalGlobalMem" in p else None,
            )
        )
    return tuple(devices)


def _count(value: object) -> int | None:
    """A rank or a size: a non-negative integer, else None (never a made-up -1)."""
    number = as_int(value) if value is not None else MISSING
    return number if number >= 0 else None


def _distributed(info: dict[str, Any] | None) -> Distributed | None:
    if not info:
        return None
    rank, world, backend = info.get("rank"), info.get("world_size"), info.get("backend")
    return Distributed(
        rank=_count(rank),
        world_size=_count(world),
        backend=str(backend) if backend is not None else None,
    )
