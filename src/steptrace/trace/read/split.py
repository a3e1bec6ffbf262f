"""A trace's text, in chunks -> typed partial documents, in one pass and bounded memory.

``stream_documents(chunks)`` takes the text in chunks of any size (as ``stream.TextStream``
reads them, or slices of a text in memory: ``split_documents``) and yields the text before
the ``traceEvents`` array as a document, then the events in pieces of about
``_PIECE_BYTES`` of text, then the end of the array with the keys written after it. Only
the text not yet decoded is held (a piece and a chunk or two), whatever the file's size.

The events are cut where one ends and the next begins (``}, {``), found by a regular
expression. A cut is a guess, but a wrong one (inside a string, a number or a nested
value) cannot decode: a piece that starts at an event and decodes as a list of events ends
at an event's end, by induction from the array's start. A piece that does not decode is
extended to the next cut (a name holding ``}, {``; ``deviceProperties`` written after the
events), at most ``_RETRIES`` times and ``_MAX_PENDING`` bytes; more than ``_MAX_PENDING``
bytes without any cut (or before the events' key) is no trace: ``TextOverflow``; the text
before the array must close as a document, the rest as the array's end and the
document's. A piece that decodes as a list but holds events of the wrong shape is decoded
event by event as the exact path does (``decode.tolerated_events``): those are left out
and counted, more than ``decode.MAX_MALFORMED`` is no trace. Anything else raises
``UnsplittableError``, possibly after pieces were
yielded: the caller discards what it took and decodes the whole text with
``decode.exact_documents``. So does a key of the
text before the events written again after them (the last would win), or a unicode
escape there (it can spell any key).

``start_pieces``, ``_Text.raw_pieces`` and ``end_document`` are the same steps for
``parallel``, whose worker processes decode the pieces: there a cut is checked when its
piece comes back, not before the next piece is cut.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import chain

import msgspec

from steptrace.trace.decode import (
    METADATA_FIELDS,
    AnyEvent,
    Codec,
    Malformed,
    RawDocument,
    UnsplittableError,
    tolerated_document,
    tolerated_events,
)
from steptrace.trace.read.budget import PENDING_BYTES, TextOverflow

_PIECE_BYTES = 2 << 20  # text per piece of events decoded in this process
# A worker's pieces (``raw_pieces``) are this many times larger: half as many to hand over
# and merge (on 1.7 GB, 0.15 s less decoding and a faster table), where this process
# alone decodes smaller ones faster (on 54 MB, 4 MB pieces were 0.06 s slower).
_WORKER_PIECES = 2
_RETRIES = 32  # cuts tried after one that did not decode, before giving up
_MAX_PENDING = PENDING_BYTES  # text held while looking for a cut, or one that decodes
_KEY_LOOKAHEAD = 4096  # text read after the first "traceEvents" before matching the key
_SLICE_BYTES = 4 << 20  # a text in memory is handed over in slices of this size
_EVENTS_NAME = b'"traceEvents"'
_ESCAPE = b"\\"
_UNICODE_ESCAPE = b"\\u"
_EVENTS_KEY = re.compile(rb'"traceEvents"[ \t\n\r]*:[ \t\n\r]*\[')  # JSON's whitespace
_BETWEEN_EVENTS = re.compile(rb"\}[ \t\n\r]*,[ \t\n\r]*\{")
_FIRST_CHARACTER = re.compile(rb"[^ \t\n\r]")


def split_documents(
    data: bytes, codec: Codec, malformed: Malformed | None = None
) -> Iterator[RawDocument[AnyEvent]]:
    """``stream_documents`` over a text held in memory."""
    return stream_documents(slices(data), codec, malformed)


def slices(data: bytes) -> Iterator[memoryview]:
    """A text held in memory, handed over as a stream's chunks are, without a copy."""
    view = memoryview(data)
    return (view[i : i + _SLICE_BYTES] for i in range(0, len(data), _SLICE_BYTES))


def stream_documents(
    chunks: Iterable[bytes | memoryview], codec: Codec, malformed: Malformed | None = None
) -> Iterator[RawDocument[AnyEvent]]:
    """The trace in one pass over its text's chunks; see the module's docstring. Events of
    the wrong shape are left out, counted in ``malformed``."""
    text = _Text(iter(chunks), codec, malformed)
    try:
        head, start = text.start()
        if head is not None:
            yield head
        yield from text.pieces(start)
        yield end_document(head, text.buffer, text)
    except (msgspec.MsgspecError, RecursionError):
        raise UnsplittableError from None


def start_pieces(
    chunks: Iterable[bytes | memoryview], codec: Codec, malformed: Malformed | None = None
) -> tuple[_Text, RawDocument[AnyEvent] | None, int]:
    """The text, its document before the events (None in the array format) and where the
    first event starts: for ``_Text.raw_pieces``, then ``end_document``."""
    text = _Text(iter(chunks), codec, malformed)
    try:
        head, start = text.start()
    except (msgspec.MsgspecError, RecursionError):
        raise UnsplittableError from None
    return text, head, start


def end_document(
    head: RawDocument[AnyEvent] | None, rest: bytes | bytearray, text: _Text
) -> RawDocument[AnyEvent]:
    """The text after the last cut: the last events, the array's end and the keys after it."""
    codec = text.codec
    try:
        if head is None:  # the array format
            whole = b"".join((b"[", rest))
            try:
                return RawDocument(traceEvents=codec.event_list.decode(whole))
            except msgspec.ValidationError:  # events of the wrong shape: one by one
                found = tolerated_events(whole, text.seen, codec, text.malformed)
                if found is None:
                    raise UnsplittableError from None
                return RawDocument(traceEvents=found[0])
        # a key written again after the events (escapes can spell any key) would win there
        again = (_EVENTS_NAME, _UNICODE_ESCAPE, *(_key(f) for f in _fields_set(head)))
        if any(rest.find(name) >= 0 for name in again):
            raise UnsplittableError
        whole = b"".join((b'{"traceEvents":[', rest))
        try:
            document: RawDocument[AnyEvent] = codec.events_document.decode(whole)
        except msgspec.ValidationError:  # events of the wrong shape: one by one
            tolerated = tolerated_document(whole, text.seen, codec, text.malformed)
            if tolerated is None:
                raise UnsplittableError from None
            return tolerated
        return document
    except (msgspec.MsgspecError, RecursionError):
        raise UnsplittableError from None


class _Text:
    """The text not decoded yet: chunks appended at the end, decoded text cut off the front."""

    def __init__(
        self, chunks: Iterator[bytes | memoryview], codec: Codec, malformed: Malformed | None
    ) -> None:
        self.buffer = bytearray()
        self.first = 0  # where the first character is, once found
        self.malformed = Malformed() if malformed is None else malformed  # left out
        self.seen = 0  # the events of the pieces taken, of every shape
        self.codec = codec
        self._chunks = chunks

    def more(self) -> bool:
        """Append the next chunk; False at the end of the text."""
        chunk = next(self._chunks, None)
        if chunk is None:
            return False
        self.buffer += chunk
        return True

    def start(self) -> tuple[RawDocument[AnyEvent] | None, int]:
        """The document before the events (None in the array format) and the first event's
        offset in ``buffer``."""
        first = self.first_character()
        if first is None:
            raise UnsplittableError
        if first == b"[":  # the Chrome trace "array format": events alone
            return None, self.first + 1
        return self.head()

    def first_character(self) -> bytes | None:
        while (found := _FIRST_CHARACTER.search(self.buffer)) is None:
            if not self.more():
                return None
        self.first = found.start()
        return found.group()

    def head(self) -> tuple[RawDocument[AnyEvent], int]:
        """The document before the events, and where the first event starts."""
        buffer, seen = self.buffer, 0
        while (mention := buffer.find(_EVENTS_NAME, seen)) < 0 or (
            len(buffer) - mention < _KEY_LOOKAHEAD
        ):
            if mention < 0 and len(buffer) > _MAX_PENDING:
                raise TextOverflow
            seen = max(len(buffer) - len(_EVENTS_NAME), 0) if mention < 0 else mention
            if not self.more():
                break
        key = _EVENTS_KEY.match(buffer, mention) if mention > 0 else None
        if key is None or buffer[mention - 1 : mention] == _ESCAPE:
            raise UnsplittableError  # absent, not an array's key, or inside a string
        # the text before the key must close as a document: the key is a top-level one
        head = self.codec.events_document.decode(
            b"".join((buffer[: key.start()], b'"traceEvents":null}'))
        )
        return head, key.end()

    def pieces(self, start: int) -> Iterator[RawDocument[AnyEvent]]:
        """Pieces of events from ``start``; what is left in ``buffer`` is the rest."""
        buffer = self.buffer
        search, retries = start + _PIECE_BYTES, 0
        while True:
            cut = _BETWEEN_EVENTS.search(buffer, search)
            if cut is None:
                if len(buffer) - start > _MAX_PENDING:
                    raise TextOverflow
                # a cut reaching past the end starts at the last "}": search from there on
                last = buffer.rfind(b"}", search)
                search = max(search, last if last >= 0 else len(buffer))
                if self.more():
                    continue
                del buffer[:start]
                return
            found = self.decoded(buffer, start, cut.start() + 1)
            if found is None:  # the cut was inside a value, or the events ended before it
                retries += 1
                if retries > _RETRIES or cut.end() - start > _MAX_PENDING:
                    raise UnsplittableError
                search = cut.end() - 1
                continue
            events, self.seen = found[0], self.seen + found[1]
            yield RawDocument(traceEvents=events)
            del buffer[: cut.end() - 1]  # the next piece starts at the "{"
            start, retries = 0, 0
            search = _PIECE_BYTES

    def decoded(
        self, buffer: bytearray | bytes, start: int, end: int
    ) -> tuple[list[AnyEvent], int] | None:
        """The events of ``buffer[start:end]`` and how many the text held; None if that text
        is not a list of events. Events of the wrong shape are left out, counted in
        ``malformed`` (``tolerated_events``)."""
        with memoryview(buffer) as view:
            piece = b"".join((b"[", view[start:end], b"]"))
        try:
            events: list[AnyEvent] = self.codec.event_list.decode(piece)
        except msgspec.ValidationError:
            return tolerated_events(piece, self.seen, self.codec, self.malformed)
        except (msgspec.DecodeError, RecursionError):
            return None
        return events, len(events)

    def raw_pieces(self, start: int) -> Iterator[tuple[list[bytes | memoryview], bytes]]:
        """Pieces of text from ``start``, not decoded, each with the text between it and
        the next (``,`` and spaces): a cut may be wrong, which the pieces' decoding tells
        (``parallel``). What is left in ``buffer`` is the rest.

        A piece ends at the first ``}, {`` once it holds ``worker_piece_bytes()`` (else at
        the last one of its last chunk): it is the chunks taken since the previous cut, as
        they came (views of them), so that each byte is copied once, where the caller puts
        it (a worker's slot), not first into a buffer here. The text after the cut starts
        the next piece. The parts are valid until the next piece is asked for. (Cut at a
        chunk's last ``}, {``, as until 2026-12-07, the first piece took the text before
        the events' key and a whole chunk after it: twice the others, the one whose
        columns every other piece waits behind.)"""
        size = worker_piece_bytes()
        held: list[bytes | memoryview] = []
        held_bytes = 0
        for chunk in chain((bytes(self.buffer[start:]),), self._chunks):
            held.append(chunk)
            held_bytes += len(chunk)
            while held_bytes >= size and (cut := _cut(held[-1], held_bytes - size)) is not None:
                view = memoryview(held[-1])
                held[-1] = view[: cut[0]]
                yield held, bytes(view[cut[0] : cut[1]])
                held = [view[cut[1] :]]
                held_bytes = len(held[0])
            if held_bytes > size + _MAX_PENDING:
                raise TextOverflow
        rest = b"".join(held)
        if len(rest) > _PIECE_BYTES // 8 and (cut := _last_cut(rest)) is not None:
            # the text's end: its events but the last are a piece too, not decoded here
            view = memoryview(rest)
            yield [view[: cut[0]]], bytes(view[cut[0] : cut[1]])
            rest = rest[cut[1] :]
        self.buffer = bytearray(rest)


def _cut(chunk: bytes | memoryview, beyond: int) -> tuple[int, int] | None:
    """Where the piece ending in ``chunk`` is cut, ``beyond`` its bytes past the piece's
    size: the first ``}, {`` from there, else the chunk's last; None if it has none."""
    first = _BETWEEN_EVENTS.search(chunk, max(len(chunk) - beyond - 1, 0))
    return (first.start() + 1, first.end() - 1) if first else _last_cut(chunk)


def _last_cut(chunk: bytes | memoryview) -> tuple[int, int] | None:
    """Where the last ``}, {`` wholly inside ``chunk`` lies: the end of its ``}`` and the
    start of its ``{``; None if there is none. Looked for in the chunk's last 64 KB, then
    its last megabyte, then all of it: every pass is one regular expression's (C) scan, so
    text without a cut costs that whatever its braces."""
    text = chunk if isinstance(chunk, bytes) else bytes(chunk)
    for tail in (1 << 16, 1 << 20, len(text)):
        last = deque(_BETWEEN_EVENTS.finditer(text, max(len(text) - tail, 0)), maxlen=1)
        if last:
            return last[0].start() + 1, last[0].end() - 1
    return None


def worker_piece_bytes() -> int:
    """The text per piece that ``raw_pieces`` cuts for a worker process."""
    return _WORKER_PIECES * _PIECE_BYTES


def _fields_set(document: RawDocument[AnyEvent]) -> list[str]:
    return [f for f in METADATA_FIELDS if getattr(document, f) is not None]


def _key(field: str) -> bytes:
    return b'"%s"' % field.encode()
