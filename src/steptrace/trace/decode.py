"""Bytes of a trace file -> typed partial documents, with one-line errors for bad input.

A trace is decoded as a sequence of partial documents, each holding one batch of events
as small typed structs (a tagged union on the event phase), so that only one batch of
Python objects is alive at a time. Complete, metadata and instant events keep the few
fields the analyses use; every other phase (flows are a third of a Kineto trace) and
every other ``args`` key is skipped without building an object. The structs hold no
reference cycles, so they are left out of the garbage collector (``gc=False``).

Two ways produce the batches:

* ``split.stream_documents`` (one pass, bounded memory): the text, in chunks, is cut
  between events and each piece decoded on its own; it raises ``UnsplittableError`` when
  the text cannot be cut that way (see ``split``).
* ``exact_documents`` (two passes, the whole text in memory): msgspec finds every event's
  bytes first, then decodes them in batches; it gives the exact error message for bad
  input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Generic, TypeVar, Union, cast

import msgspec

from steptrace.errors import TraceError

Scalar = int | float | str | None


class EventArgs(msgspec.Struct, gc=False):
    """The few ``args`` the analyses read; every other key is skipped."""

    correlation: Scalar = None
    device: Scalar = None
    stream: Scalar = None
    bytes: Scalar = None
    name: Scalar = None  # metadata events: thread and process names
    input_dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="Input Dims")
    input_types: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="Input type")
    # autograd numbers the operators it records: present only while grad mode is on
    sequence: Scalar = msgspec.field(default=None, name="Sequence number")
    # collectives (record_param_comms ops and NCCL kernels of newer Kineto): only those
    # events carry these keys, so the other events decode as fast as before
    collective: Scalar = msgspec.field(default=None, name="Collective name")
    process_group: Scalar = msgspec.field(default=None, name="Process Group Name")
    group_ranks: Scalar = msgspec.field(default=None, name="Process Group Ranks")
    seq: Scalar = msgspec.field(default=None, name="Seq")
    in_nelems: Scalar = msgspec.field(default=None, name="In msg nelems")
    out_nelems: Scalar = msgspec.field(default=None, name="Out msg nelems")
    group_size: Scalar = msgspec.field(default=None, name="Group size")
    dtype: Scalar = None


class Event(msgspec.Struct, tag_field="ph", tag="X", gc=False):
    """A complete event (``ph == "X"``): the only kind that becomes a row."""

    name: str = ""
    cat: str = ""
    ts: msgspec.Raw = msgspec.Raw()  # the text, read exactly by ``timestamps``
    dur: float | None = None  # exact enough as a float: durations are small numbers
    pid: int | str = ""
    tid: int | str = ""
    args: EventArgs | None = None


class TolerantEvent(Event, tag="X", gc=False):
    """A complete event on the exact path: a ``dur`` of any JSON value (a string, 1e400)
    is kept as text, so that the event is skipped and counted rather than the file refused."""

    dur: msgspec.Raw = msgspec.Raw()  # type: ignore[assignment]


class Metadata(msgspec.Struct, tag_field="ph", tag="M", gc=False):
    """A metadata event: process and thread names."""

    name: str = ""
    pid: int | str = ""
    tid: int | str = ""
    args: EventArgs | None = None


class Instant(msgspec.Struct, tag_field="ph", tag="i", gc=False):
    """An instant event; ``[memory]`` ones come from ``profile_memory``."""

    name: str = ""


class FlowStart(msgspec.Struct, tag_field="ph", tag="s", gc=False):
    """The start of a flow; ``fwdbwd`` ones link a forward operator to its backward."""

    cat: str = ""


# Every other phase of the Chrome trace format decodes to an empty marker: its fields are
# skipped without building a single object (flows alone are a third of a Kineto trace).
_OTHER_PHASES = "BEIbnetfPNODVvRcC"
_SKIPPED = tuple(
    msgspec.defstruct(f"Phase{ph}", [], tag_field="ph", tag=ph, gc=False) for ph in _OTHER_PHASES
)
AnyEvent = Event | Metadata | Instant | FlowStart | msgspec.Struct


E = TypeVar("E")


class Document(msgspec.Struct, Generic[E]):
    """A Kineto trace file, or part of one: events and the metadata written beside them."""

    traceEvents: list[E] | None = None  # noqa: N815 (the format's own key)
    deviceProperties: list[dict[str, Any]] | None = None  # noqa: N815
    distributedInfo: dict[str, Any] | None = None  # noqa: N815
    baseTimeNanoseconds: int | str | None = None  # noqa: N815
    displayTimeUnit: str | None = None  # noqa: N815
    record_shapes: Scalar = None
    profile_memory: Scalar = None
    with_stack: Scalar = None
    with_flops: Scalar = None
    with_modules: Scalar = None
    steptrace: Any = None  # the scenario block steptrace's capture writes


METADATA_FIELDS = tuple(f for f in Document.__struct_fields__ if f != "traceEvents")
_EVENT_TYPES: Any = Union[(Event, Metadata, Instant, FlowStart, *_SKIPPED)]  # built at run time
_TOLERANT_TYPES: Any = Union[(TolerantEvent, Metadata, Instant, FlowStart, *_SKIPPED)]
_DOCUMENT = msgspec.json.Decoder(Document[msgspec.Raw])
EVENTS_DOCUMENT = msgspec.json.Decoder(Document[_EVENT_TYPES])
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
EVENT_LIST = msgspec.json.Decoder(list[_EVENT_TYPES])
_TOLERANT_LIST = msgspec.json.Decoder(list[_TOLERANT_TYPES])
_TOLERANT_EVENT = msgspec.json.Decoder(_TOLERANT_TYPES)
_BATCH = 8_192  # events per batch on the exact path
_FIRST_CHARACTER = re.compile(rb"[^ \t\n\r]")


class UnsplittableError(Exception):
    """The one-pass path (``split``) could not cut the text between events: take the exact one."""


def exact_documents(
    data: bytes, where: str, skipped: list[str] | None = None
) -> Iterator[Document[AnyEvent]]:
    """The trace in two passes: first its metadata, then its events in batches.

    An event that does not decode (``name: null``, no ``ph``, ``args`` not an object) is
    skipped and described in ``skipped``, at its index; the rest of the file is kept.
    """
    document = decode(data, where)
    raw = document.traceEvents
    if raw is None:
        raise TraceError(f"{where}: not a torch.profiler trace (no traceEvents)")
    if not raw:
        raise TraceError(f"{where}: the trace holds no events")
    document.traceEvents = None
    yield cast(Document[AnyEvent], document)
    problems = [] if skipped is None else skipped
    for offset in range(0, len(raw), _BATCH):
        batch = raw[offset : offset + _BATCH]
        yield Document(traceEvents=decode_events(batch, offset, where, problems))
    if len(problems) == len(raw):
        raise TraceError(f"{where}: not a torch.profiler trace ({problems[0]})")


def decode(data: bytes, where: str) -> Document[msgspec.Raw]:
    """Decode a trace document; bad JSON or a non-trace raise a one-line ``TraceError``."""
    first = _FIRST_CHARACTER.search(data)
    if first is None:
        raise TraceError(f"{where}: empty file")
    try:
        return _decode_typed(data, first.group())
    except msgspec.ValidationError as exc:
        raise TraceError(f"{where}: not a torch.profiler trace ({_short(exc)})") from None
    except msgspec.DecodeError as exc:
        return _decode_nonstandard(data, where, exc)
    except RecursionError:
        raise TraceError(f"{where}: JSON nested too deeply to be a trace") from None


def _decode_typed(data: bytes, first: bytes) -> Document[msgspec.Raw]:
    if first == b"[":  # the Chrome trace "array format": events alone
        return Document(traceEvents=_RAW_LIST.decode(data))
    return _DOCUMENT.decode(data)


def decode_events(
    raw: list[msgspec.Raw], offset: int, where: str, skipped: list[str]
) -> list[AnyEvent]:
    """Decode a batch of raw events (``offset``: the first one's index, for messages).

    When the batch does not decode, its events are decoded one by one and those that
    fail are left out, each described in ``skipped``.
    """
    try:
        events: list[AnyEvent] = _TOLERANT_LIST.decode(b"[" + b",".join(raw) + b"]")
        return events
    except (msgspec.DecodeError, RecursionError) as exc:
        if not isinstance(exc, msgspec.ValidationError):
            raise TraceError(f"{where}: invalid JSON in the events ({_short(exc)})") from None
    kept: list[AnyEvent] = []
    for index, event in enumerate(raw, start=offset):
        try:
            kept.append(_TOLERANT_EVENT.decode(event))
        except (msgspec.ValidationError, RecursionError) as exc:
            at = str(exc).replace("`$", f"`$.traceEvents[{index}]")
            if "`$" not in at:
                at = f"{at} - at `$.traceEvents[{index}]`"
            skipped.append(_short(ValueError(at)))
    return kept


def _decode_nonstandard(
    data: bytes, where: str, error: msgspec.DecodeError
) -> Document[msgspec.Raw]:
    """Python's json writes NaN and Infinity, which strict JSON lacks: accept them as null."""
    try:
        loose = json.loads(data)
        strict = msgspec.json.encode(loose)  # non-finite numbers become null
    except (ValueError, RecursionError):  # UnicodeError too: a lone surrogate \ud800
        raise TraceError(f"{where}: invalid or truncated JSON ({_short(error)})") from None
    try:
        return _decode_typed(strict, b"[" if isinstance(loose, list) else b"{")
    except msgspec.MsgspecError as exc:
        raise TraceError(f"{where}: not a torch.profiler trace ({_short(exc)})") from None


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]
