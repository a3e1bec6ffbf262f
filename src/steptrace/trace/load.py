"""Load a torch.profiler (Kineto) Chrome trace, ``.json`` or ``.json.gz``, into a ``Trace``.

``load_trace(path, groups=...)`` decodes the field groups asked for (``fields``: all of
them by default); ``read_trace`` is the same for a ``Selection``, a text read already and
worker processes started already.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, NamedTuple

from steptrace.errors import TraceError
from steptrace.trace.assemble import Skipped, assemble
from steptrace.trace.columns import ColumnBuilder
from steptrace.trace.decode import (
    AnyEvent,
    Codec,
    Malformed,
    RawDocument,
    TooMalformed,
    UnsplittableError,
    codec,
    exact_documents,
)
from steptrace.trace.fields import ALL_GROUPS, MISSING, Selection, select
from steptrace.trace.heap import TRIM_ROWS, release_freed_memory
from steptrace.trace.read.budget import TextOverflow, text_limit, whole_limit
from steptrace.trace.read.parallel import WorkerPool, parallel_columns, worker_pool
from steptrace.trace.read.progress import Stage, loading_progress
from steptrace.trace.read.remote import is_url, open_url
from steptrace.trace.read.source import FileText, file_size, inflate, read_text, too_large
from steptrace.trace.read.split import slices, split_documents, stream_documents
from steptrace.trace.read.stream import Opener, TextStream
from steptrace.trace.table import Device, Distributed, Trace, TraceInfo
from steptrace.trace.values import as_int

_EXACT_SPAN_NS = 2**53  # float64 microseconds keep every nanosecond up to here
_OPTION_KEYS = ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")


def load_trace(
    path: str | Path,
    *,
    groups: Iterable[str] = ALL_GROUPS,
    workers: int = 1,
    progress: bool | None = None,
) -> Trace:
    """Read and decode a trace file; raise ``TraceError`` with a one-line message if unusable.

    ``path`` may be an fsspec URL (``s3://...``: ``remote``). ``groups``: the field groups
    to decode (``fields.GROUPS``; ``core`` always): all by
    default, the complete events' columns, the instants and the flows. ``workers`` > 1
    decodes a large file in that many processes; ``progress`` shows a progress bar (None:
    when the output is a terminal)."""
    return read_trace(path, select(groups), workers=workers, progress=progress)


def read_trace(
    path: str | Path | Opener,
    selection: Selection,
    *,
    progress: bool | None = None,
    text: FileText | None = None,
    workers: int = 1,
    pool: WorkerPool | None = None,
) -> Trace:
    """``load_trace`` of the fields ``selection`` names.

    ``text`` is the file's content when it was read already (``source.ReadAhead``). Else
    the file (a local path, or what an ``Opener`` opens: ``remote``) is streamed
    (``stream.TextStream``): read, gunzipped and decoded a few megabytes at a time, so that
    its text is never held whole; with ``workers`` > 1 the pieces are decoded by that many
    processes (``parallel``). A ``pool`` of them started already (``worker_pool``, before
    the caller's threads and imports) decodes the pieces of either, and is closed once
    they are. A text that cannot be cut between events (``split``) is read whole and
    decoded by the exact path.
    """
    source = _source(path)
    where = source.name if isinstance(source, Opener) else str(source)  # in messages
    size = text.size if text is not None else _size(source)
    pooled = nullcontext(pool) if pool is not None else worker_pool(workers if text is None else 1)
    try:
        with (
            pooled as pool,  # before the loading's threads
            loading_progress(Path(where).name, size, progress) as stage,
            _collector_paused(),
        ):
            columns, found = _decoded(source, where, text, stage, pool, codec(selection))
            del text
            stage.step("indexing")
            url = source.name if isinstance(source, Opener) else None
            trace = _build(*columns, Path(where), size, found, url)
    except (TextOverflow, TooMalformed) as overflow:  # text longer than any trace's
        raise TraceError(f"{where}: {overflow}") from None
    del columns  # what the builder kept besides the table: interned keys, collective args
    if len(trace.events) >= TRIM_ROWS:
        release_freed_memory()  # its memory back before the analysis allocates its own
    return trace


class _Found(NamedTuple):
    """What loading skipped: events it could not decode, bytes after the gzip data."""

    malformed: Malformed
    ignored_bytes: int


def _decoded(
    source: Path | Opener,
    where: str,
    text: FileText | None,
    stage: Stage,
    pool: WorkerPool | None,
    coded: Codec,
) -> tuple[tuple[ColumnBuilder, RawDocument[AnyEvent]], _Found]:
    """The columns of the file's events, in one pass when its text can be cut between
    events, else read whole and decoded exactly; what was skipped."""
    data, ignored = None, [text.ignored] if text is not None else []
    malformed = Malformed()
    if text is not None:
        stage.read(text.size)
        stage.step("decoding")
        data = text.data
        del text
        if pool is None:
            columns = _in_one_pass(coded, split_documents(data, coded, malformed))
        else:
            columns = _in_workers(slices(data), pool, coded, malformed)
    else:
        columns = _streamed(source, stage, pool, coded, (ignored, malformed))
    if columns is None:  # here, not in an except block whose traceback holds the first try
        if data is None:
            whole = _read_whole(source)
            data, ignored = whole.data, [whole.ignored]
        malformed = Malformed()  # what the first try counted went with its columns
        columns = _columns(coded, exact_documents(data, where, coded, malformed))
    return columns, _Found(malformed, max(ignored, default=0))


def _source(path: str | Path | Opener) -> Path | Opener:
    """A local file's path, or an fsspec URL opened (``remote``)."""
    if isinstance(path, str) and is_url(path):
        return open_url(path)
    return path if isinstance(path, Opener) else Path(path)


def _size(source: Path | Opener) -> int:
    return source.size if isinstance(source, Opener) else file_size(source)


def _read_whole(source: Path | Opener) -> FileText:
    """The text of a file that could not be streamed, gunzipped, within the whole-text
    limit (``budget``)."""
    if not isinstance(source, Opener):
        return read_text(source)
    limit = whole_limit()
    if limit is not None and source.size > limit:
        raise TraceError(too_large(source.name, source.size, limit))
    try:
        with source.open() as handle:
            raw = handle.read()
    except OSError as exc:
        raise TraceError(f"{source.name}: cannot read ({exc.strerror or exc})") from None
    except Exception as exc:  # a storage backend's own error, as the stream says it
        raise TraceError(f"{source.name}: cannot read ({type(exc).__name__}: {exc})") from None
    data, ignored = inflate(raw, source.name, limit)
    return FileText(data, len(raw), ignored)


def _in_one_pass(
    coded: Codec, documents: Iterator[RawDocument[AnyEvent]]
) -> tuple[ColumnBuilder, RawDocument[AnyEvent]] | None:
    try:
        return _columns(coded, documents)
    except UnsplittableError:
        return None


def _streamed(
    source: Path | Opener,
    stage: Stage,
    pool: WorkerPool | None,
    coded: Codec,
    skipped: tuple[list[int], Malformed],
) -> tuple[ColumnBuilder, RawDocument[AnyEvent]] | None:
    """The columns of a file read and decoded chunk by chunk (progress in bytes read), by
    the ``pool``'s processes if there is one; what was skipped: the bytes after its gzip
    data, the events of the wrong shape."""
    ignored, malformed = skipped
    with TextStream(source, text_limit()) as stream:

        def chunks() -> Iterator[bytes]:
            shown = 0
            for chunk in stream:
                stage.read(stream.read_bytes - shown)
                shown = stream.read_bytes
                yield chunk
            ignored.extend(stream.ignored)  # said by the reading thread before the end

        if pool is None:
            return _in_one_pass(coded, stream_documents(chunks(), coded, malformed))
        return _in_workers(chunks(), pool, coded, malformed)


def _in_workers(
    chunks: Iterable[bytes | memoryview], pool: WorkerPool, coded: Codec, malformed: Malformed
) -> tuple[ColumnBuilder, RawDocument[AnyEvent]] | None:
    """The columns of a text's chunks, decoded by the ``pool``'s processes (closed then:
    their memory back before the table is built); None where it cannot be cut."""
    try:
        return parallel_columns(chunks, pool, coded, malformed)
    except UnsplittableError:
        return None
    finally:
        pool.close()


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


def _columns(
    coded: Codec, documents: Iterator[RawDocument[AnyEvent]]
) -> tuple[ColumnBuilder, RawDocument[AnyEvent]]:
    """Columns of every batch of events, and the metadata of all the pieces together."""
    builder = ColumnBuilder(coded)
    return builder, builder.take(documents)


def _build(
    builder: ColumnBuilder,
    document: RawDocument[AnyEvent],
    path: Path,
    size: int,
    found: _Found,
    url: str | None,
) -> Trace:
    where = url or str(path)
    if found.malformed and not builder.counts.events:  # as the exact path says it
        raise TraceError(f"{where}: not a torch.profiler trace ({found.malformed.first})")
    if not builder.counts.events:
        raise TraceError(f"{where}: the trace holds no events")
    if not builder.names:
        raise TraceError(f"{where}: the trace holds no complete (ph 'X') events to measure")
    unknown = builder.unknown_categories()
    counts, selection = builder.counts, builder.codec.selection
    thread_names = builder.thread_names
    tables = assemble(builder.columns())
    table = tables.events
    if len(table) == 0:
        raise TraceError(f"{where}: no event has a usable ts and dur")
    warnings = _skipped(tables.skipped)
    malformed = found.malformed
    if malformed:
        more = f"; {len(malformed) - 1} more" if len(malformed) > 1 else ""
        warnings.insert(0, f"skipped {len(malformed)} malformed events ({malformed.first}{more})")
    if found.ignored_bytes:
        warnings.insert(
            0,
            f"ignored {found.ignored_bytes} bytes after the end of the gzip data (not another "
            "gzip member): the file is damaged, or something was appended to it",
        )
    if (span := float(table.end_us.max())) * 1000 > _EXACT_SPAN_NS:
        warnings.append(
            f"the events span {span / 86_400e6:.0f} days: times far from the first event "
            "lose sub-microsecond precision (a stray timestamp?)"
        )
    if unknown:
        listed = ", ".join(repr(c) for c in sorted(unknown))
        warnings.append(f"ignored {sum(unknown.values())} events of unknown categories: {listed}")
    info = TraceInfo(
        path=path,
        url=url,
        size_bytes=size,
        events_total=counts.events,
        devices=_devices(document.deviceProperties),
        distributed=_distributed(document.distributedInfo),
        base_time_ns=as_int(document.baseTimeNanoseconds),
        host=_host(document.host_name),
        time_unit=document.displayTimeUnit,
        options={k: str(v) for k in _OPTION_KEYS if (v := getattr(document, k)) is not None},
        memory_events=counts.memory,
        fwdbwd_flows=counts.fwdbwd,
        thread_names=thread_names,
        scenario_block=document.steptrace,
        warnings=tuple(warnings),
        groups=_groups(selection),
        events_skipped=len(malformed) + _count_skipped(tables.skipped),
        bytes_ignored=found.ignored_bytes,
    )
    return Trace(info=info, events=table, instants=tables.instants, flows=tables.flows)


def _host(name: object) -> str | None:
    """The host a trace names, if any: not ``scrub``'s placeholder (``<host-1>``), which
    each scrubbed file numbers from 1, so that two hosts would read as one."""
    if not isinstance(name, str) or not name or _PLACEHOLDER.fullmatch(name):
        return None
    return name


_PLACEHOLDER = re.compile(r"<[a-z]+-\d+>")


def _groups(selection: Selection) -> tuple[str, ...]:
    named = dict.fromkeys(f.group for f in selection.fields)
    return (*named, "flows") if selection.flows else tuple(named)


def _count_skipped(skipped: Skipped) -> int:
    counts = (skipped.not_a_number, skipped.negative, skipped.out_of_range, skipped.other_events)
    return sum(counts)


def _skipped(skipped: Skipped) -> list[str]:
    """One counted warning per reason events were skipped."""
    reasons = (
        (skipped.not_a_number, "complete events with a ts or dur that is missing or not a number"),
        (skipped.negative, "complete events with a negative dur"),
        (
            skipped.out_of_range,
            "complete events with a ts or end beyond ±2**62 ns (about 146 years)",
        ),
        (skipped.other_events, "instants or flow ends with a ts that is missing or not a number"),
    )
    return [f"skipped {n} {why}" for n, why in reasons if n]


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
