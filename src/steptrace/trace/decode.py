"""Bytes of a trace file -> typed documents, with one-line errors for bad input.

The document is decoded by msgspec with its events left raw (references into the
buffer); the events are then decoded in batches into small typed structs, a tagged union
on the event phase, so that only one batch of Python objects is alive at a time.
Complete, metadata and instant events keep the few fields the analyses use; every other
phase (flows are a third of a Kineto trace) and every other ``args`` key is skipped
without building an object. The
structs hold no reference cycles, so they are left out of the garbage collector
(``gc=False``): millions of them would otherwise trigger collections for nothing.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from typing import Any, Union, cast

import msgspec
from isal import isal_zlib

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


class Event(msgspec.Struct, tag_field="ph", tag="X", gc=False):
    """A complete event (``ph == "X"``): the only kind that becomes a row."""

    name: str = ""
    cat: str = ""
    ts: float | None = None
    dur: float | None = None
    pid: int | str = ""
    tid: int | str = ""
    args: EventArgs | None = None


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


class Document(msgspec.Struct):
    """A Kineto trace file: the events and the metadata written beside them."""

    traceEvents: list[msgspec.Raw] | None = None  # noqa: N815 (the format's own key)
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


_DOCUMENT = msgspec.json.Decoder(Document)
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_EVENT_TYPES: Any = Union[(Event, Metadata, Instant, FlowStart, *_SKIPPED)]  # built at run time
_EVENT_LIST = msgspec.json.Decoder(list[_EVENT_TYPES])
_BATCH_PATH = re.compile(r"`\$\[(\d+)\]")
_ISAL_ERROR = cast(type[Exception], isal_zlib.error)
_GZIP_MAGIC = b"\x1f\x8b"
_FIRST_CHARACTER = re.compile(rb"\S")


def decompress(raw: bytes, where: str) -> bytes:
    """Gunzip when the bytes are gzip, else return them as they are.

    ISA-L's inflate (``isal``) is about three times faster than zlib's. The gzip trailer
    gives the size: one exact allocation instead of growing buffers
    (which would double the peak memory on a large trace). Multi-member files, whose
    trailer only tells the last member's size, take the standard library's path.
    """
    if not raw.startswith(_GZIP_MAGIC):
        return raw
    try:
        size = int.from_bytes(raw[-4:], "little")
        data = isal_zlib.decompress(raw, wbits=31, bufsize=max(size, 1))
        return data if len(data) == size else gzip.decompress(raw)
    except (OSError, EOFError, zlib.error, _ISAL_ERROR) as exc:
        raise TraceError(f"{where}: broken gzip ({_short(exc)})") from None


def decode(data: bytes, where: str) -> Document:
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


def _decode_typed(data: bytes, first: bytes) -> Document:
    if first == b"[":  # the Chrome trace "array format": events alone
        return Document(traceEvents=_RAW_LIST.decode(data))
    return _DOCUMENT.decode(data)


def decode_events(raw: list[msgspec.Raw], offset: int, where: str) -> list[AnyEvent]:
    """Decode a batch of raw events (``offset`` is the first one's index, for messages)."""
    try:
        events: list[AnyEvent] = _EVENT_LIST.decode(b"[" + b",".join(raw) + b"]")
        return events
    except msgspec.ValidationError as exc:
        at = _BATCH_PATH.sub(lambda m: f"`$.traceEvents[{int(m.group(1)) + offset}]", str(exc))
        raise TraceError(
            f"{where}: not a torch.profiler trace ({_short(ValueError(at))})"
        ) from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise TraceError(f"{where}: invalid JSON in the events ({_short(exc)})") from None


def _decode_nonstandard(data: bytes, where: str, error: msgspec.DecodeError) -> Document:
    """Python's json writes NaN and Infinity, which strict JSON lacks: accept them as null."""
    try:
        loose = json.loads(data)
    except (ValueError, RecursionError):
        raise TraceError(f"{where}: invalid or truncated JSON ({_short(error)})") from None
    try:
        return _decode_typed(
            msgspec.json.encode(loose), b"[" if isinstance(loose, list) else b"{"
        )  # non-finite numbers become null
    except msgspec.MsgspecError as exc:
        raise TraceError(f"{where}: not a torch.profiler trace ({_short(exc)})") from None


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]
