"""Bytes of a trace file -> typed partial documents, with one-line errors for bad input.

A trace is decoded as a sequence of partial documents (``RawDocument``), each holding one
batch of events as small typed structs (a tagged union on the event phase), so that only
one batch of Python objects is alive at a time. What the structs keep is what a
``Selection`` of fields asks for (``fields``): ``codec(selection)`` builds their classes
from the declared fields, so that every other ``args`` key, and every phase not asked for,
is skipped without building an object (flows are a third of a Kineto trace). The structs
hold no reference cycles, so they are left out of the garbage collector (``gc=False``).

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
from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, TypeVar, Union, cast

import msgspec

from steptrace.errors import TraceError
from steptrace.trace.fields import Field, Selection, Value
from steptrace.trace.read.budget import TextOverflow, too_long_without_quote

Scalar = int | float | str | None


class Event(msgspec.Struct, tag_field="ph", tag="X", gc=False):
    """A complete event (``ph == "X"``): the only kind that becomes a row. Its ``args``
    (the selected fields) are added by ``codec``."""

    name: str = ""
    cat: str = ""
    ts: msgspec.Raw = msgspec.Raw()  # the text, read exactly by ``timestamps``
    dur: float | None = None  # exact enough as a float: durations are small numbers
    pid: int | str = ""
    tid: int | str = ""


class TolerantEvent(Event, tag="X", gc=False):
    """A complete event on the exact path: a ``dur`` of any JSON value (a string, 1e400)
    is kept as text, so that the event is skipped and counted rather than the file refused."""

    dur: msgspec.Raw = msgspec.Raw()  # type: ignore[assignment]


class MetadataArgs(msgspec.Struct, gc=False):
    name: Scalar = None  # a thread's or a process's name


class Metadata(msgspec.Struct, tag_field="ph", tag="M", gc=False):
    """A metadata event: process and thread names."""

    name: str = ""
    pid: int | str = ""
    tid: int | str = ""
    args: MetadataArgs | None = None


class CountedInstant(msgspec.Struct, tag_field="ph", tag="i", gc=False):
    """An instant event when instants are only counted (``[memory]`` ones)."""

    name: str = ""


class Instant(msgspec.Struct, tag_field="ph", tag="i", gc=False):
    """An instant event when the instants are kept; ``args`` added by ``codec``."""

    name: str = ""
    ts: msgspec.Raw = msgspec.Raw()
    pid: int | str = ""
    tid: int | str = ""


class CountedFlow(msgspec.Struct, tag_field="ph", tag="s", gc=False):
    """A flow's start when flows are only counted (``fwdbwd`` ones: a backward ran)."""

    cat: str = ""


class FlowEvent(msgspec.Struct, gc=False):
    """One end (or a step) of a flow, when flows are kept."""

    cat: str = ""
    id: Scalar = None
    ts: msgspec.Raw = msgspec.Raw()
    pid: int | str = ""
    tid: int | str = ""
    bp: str | None = None  # "e": bound to the enclosing slice


class FlowStart(FlowEvent, tag_field="ph", tag="s", gc=False):
    pass


class FlowStep(FlowEvent, tag_field="ph", tag="t", gc=False):
    pass


class FlowFinish(FlowEvent, tag_field="ph", tag="f", gc=False):
    pass


# Every other phase of the Chrome trace format decodes to an empty marker: its fields are
# skipped without building a single object.
_SKIPPED = {
    ph: msgspec.defstruct(f"Phase{ph}", [], tag_field="ph", tag=ph, gc=False)
    for ph in "BEIbnestfPNODVvRcC"
}
AnyEvent = msgspec.Struct

E = TypeVar("E")


class RawDocument(msgspec.Struct, Generic[E]):
    """A Kineto trace file, or part of one: events and the metadata written beside them."""

    traceEvents: list[E] | None = None  # noqa: N815 (the format's own key)
    deviceProperties: list[dict[str, Any]] | None = None  # noqa: N815
    distributedInfo: dict[str, Any] | None = None  # noqa: N815
    baseTimeNanoseconds: int | str | None = None  # noqa: N815
    displayTimeUnit: str | None = None  # noqa: N815
    host_name: Scalar = None  # the host the trace was recorded on (torch 2.x writes it)
    record_shapes: Scalar = None
    profile_memory: Scalar = None
    with_stack: Scalar = None
    with_flops: Scalar = None
    with_modules: Scalar = None
    steptrace: Any = None  # the scenario block steptrace's capture writes


METADATA_FIELDS = tuple(f for f in RawDocument.__struct_fields__ if f != "traceEvents")
_DOCUMENT = msgspec.json.Decoder(RawDocument[msgspec.Raw])
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_BATCH = 8_192  # events per batch on the exact path
_FIRST_CHARACTER = re.compile(rb"[^ \t\n\r]")


@dataclass(frozen=True)
class Codec:
    """The event classes and decoders of one ``Selection`` (see ``codec``)."""

    selection: Selection
    event: type[Event]  # a complete event, with the selected args
    tolerant: type[Event]  # the same on the exact path
    instant: type[msgspec.Struct]  # Instant (kept) or CountedInstant
    no_args: msgspec.Struct  # the args of an event without any: every field at its default
    no_instant_args: msgspec.Struct
    flows: tuple[type[msgspec.Struct], ...]  # FlowStart/Step/Finish (kept) or CountedFlow
    event_list: msgspec.json.Decoder[list[AnyEvent]]
    events_document: msgspec.json.Decoder[RawDocument[AnyEvent]]
    tolerant_list: msgspec.json.Decoder[list[AnyEvent]]
    tolerant_event: msgspec.json.Decoder[AnyEvent]


@cache
def codec(selection: Selection) -> Codec:
    """The classes and decoders that keep what ``selection`` asks for (built once each)."""
    args = _args_struct("EventArgs", selection.complete)
    event = _with_args(Event, args)
    tolerant = _with_args(TolerantEvent, args)
    instant: type[msgspec.Struct] = CountedInstant
    instant_args = _args_struct("InstantArgs", selection.instant)
    if selection.instant:
        instant = _with_args(Instant, instant_args)
    flows: tuple[type[msgspec.Struct], ...] = (CountedFlow,)
    if selection.flows:
        flows = (FlowStart, FlowStep, FlowFinish)
    others = [s for ph, s in _SKIPPED.items() if ph not in {"i", *_tags(flows)}]
    union: Any = Union[(event, Metadata, instant, *flows, *others)]
    tolerant_union: Any = Union[(tolerant, Metadata, instant, *flows, *others)]
    return Codec(
        selection=selection,
        event=event,
        tolerant=tolerant,
        instant=instant,
        no_args=args(),
        no_instant_args=instant_args(),
        flows=flows,
        event_list=msgspec.json.Decoder(list[union]),
        events_document=msgspec.json.Decoder(RawDocument[union]),
        tolerant_list=msgspec.json.Decoder(list[tolerant_union]),
        tolerant_event=msgspec.json.Decoder(tolerant_union),
    )


def _tags(classes: tuple[type[msgspec.Struct], ...]) -> list[str]:
    return [str(c.__struct_config__.tag) for c in classes]


# What a JSON field holds where its key is absent: this one object, a struct's default as it
# is (never a copy), so that ``columns`` finds the absent values by identity, in C.
ABSENT_JSON = msgspec.Raw()


def _args_struct(name: str, fields: tuple[Field, ...]) -> type[msgspec.Struct]:
    """A struct of the ``fields``' args keys: JSON values kept as text (``msgspec.Raw``;
    ``ABSENT_JSON`` where absent), the others as scalars; every other key is skipped."""
    return msgspec.defstruct(
        name,
        [
            (f.column, msgspec.Raw, msgspec.field(default=ABSENT_JSON, name=f.key))
            if f.value is Value.JSON
            else (f.column, Scalar, msgspec.field(default=None, name=f.key))
            for f in fields
        ],
        gc=False,
    )


def _with_args(base: type[E], args: type[msgspec.Struct]) -> type[E]:
    tag = base.__struct_config__.tag  # type: ignore[attr-defined]
    made = msgspec.defstruct(
        base.__name__, [("args", args | None, None)], bases=(base,), tag=tag, gc=False
    )
    return cast(type[E], made)


class UnsplittableError(Exception):
    """The one-pass path (``split``) could not cut the text between events: take the exact one."""


MAX_MALFORMED = 1_000_000  # events of the wrong shape; more is no trace (``Malformed``)


class TooMalformed(ValueError):  # noqa: N818 (what the text is)
    """More than ``MAX_MALFORMED`` events of the wrong shape: millions of ``{}`` are what a
    compressed bomb of small objects holds, not a trace. Refused, never held."""

    def __init__(self, first: str) -> None:
        super().__init__(
            f"more than {MAX_MALFORMED:,} events of the wrong shape (the first: {first}): "
            "not a torch.profiler trace"
        )


class Malformed:
    """The events skipped for their shape: how many, and the first one's description (the
    others' are not kept: a damaged trace can hold millions)."""

    def __init__(self) -> None:
        self.count = 0
        self.first = ""

    def append(self, description: str) -> None:
        self.first = self.first or description
        self.count += 1
        if self.count > MAX_MALFORMED:
            raise TooMalformed(self.first)

    def __len__(self) -> int:
        return self.count


def exact_documents(
    data: bytes, where: str, codec: Codec, skipped: Malformed | None = None
) -> Iterator[RawDocument[AnyEvent]]:
    """The trace in two passes: first its metadata, then its events in batches.

    An event that does not decode (``name: null``, no ``ph``, ``args`` not an object) is
    skipped and described in ``skipped``, at its index; the rest of the file is kept.
    """
    if too_long_without_quote(data):
        raise TraceError(f"{where}: {TextOverflow()}")
    document = decode(data, where)
    raw = document.traceEvents
    if raw is None:
        raise TraceError(f"{where}: not a torch.profiler trace (no traceEvents)")
    if not raw:
        raise TraceError(f"{where}: the trace holds no events")
    document.traceEvents = None
    yield cast(RawDocument[AnyEvent], document)
    problems = Malformed() if skipped is None else skipped
    for offset in range(0, len(raw), _BATCH):
        batch = raw[offset : offset + _BATCH]
        yield RawDocument(traceEvents=decode_events(batch, offset, where, codec, problems))
    if len(problems) == len(raw):
        raise TraceError(f"{where}: not a torch.profiler trace ({problems.first})")


def decode(data: bytes, where: str) -> RawDocument[msgspec.Raw]:
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


def _decode_typed(data: bytes, first: bytes) -> RawDocument[msgspec.Raw]:
    if first == b"[":  # the Chrome trace "array format": events alone
        return RawDocument(traceEvents=_RAW_LIST.decode(data))
    return _DOCUMENT.decode(data)


def decode_events(
    raw: list[msgspec.Raw], offset: int, where: str, codec: Codec, skipped: Malformed
) -> list[AnyEvent]:
    """Decode a batch of raw events (``offset``: the first one's index, for messages).

    When the batch does not decode, its events are decoded one by one and those that
    fail are left out, each described in ``skipped``.
    """
    try:
        return codec.tolerant_list.decode(b"[" + b",".join(raw) + b"]")
    except (msgspec.DecodeError, RecursionError) as exc:
        if not isinstance(exc, msgspec.ValidationError):
            raise TraceError(f"{where}: invalid JSON in the events ({_short(exc)})") from None
    kept: list[AnyEvent] = []
    for index, event in enumerate(raw, start=offset):
        try:
            kept.append(codec.tolerant_event.decode(event))
        except (msgspec.ValidationError, RecursionError) as exc:
            at = str(exc).replace("`$", f"`$.traceEvents[{index}]")
            if "`$" not in at:
                at = f"{at} - at `$.traceEvents[{index}]`"
            skipped.append(_short(ValueError(at)))
    return kept


def tolerated_events(
    text: bytes, offset: int, codec: Codec, skipped: Malformed
) -> tuple[list[AnyEvent], int] | None:
    """The events of ``text`` (a JSON list of events, some of the wrong shape) decoded one
    by one as ``exact_documents`` does, those of the wrong shape left out and counted in
    ``skipped`` (``offset``: the index of the first); with how many the list held. None if
    the text is not a JSON list (a piece cut inside a value: ``split``)."""
    try:
        raw = _RAW_LIST.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return None
    return decode_events(raw, offset, "", codec, skipped), len(raw)


def tolerated_document(
    text: bytes, offset: int, codec: Codec, skipped: Malformed
) -> RawDocument[AnyEvent] | None:
    """``tolerated_events`` of a document's text: its events one by one, its other keys as
    they are; None if the text is not a JSON document."""
    try:
        document = _DOCUMENT.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return None
    events = decode_events(document.traceEvents or [], offset, "", codec, skipped)
    return RawDocument(traceEvents=events, **{f: getattr(document, f) for f in METADATA_FIELDS})


def _decode_nonstandard(
    data: bytes, where: str, error: msgspec.DecodeError
) -> RawDocument[msgspec.Raw]:
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
