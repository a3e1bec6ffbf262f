"""The one-pass decode cuts the events' text at guessed boundaries: it must equal the exact one.

Either ``split_documents`` gives the same events and metadata as ``exact_documents`` (the
two-pass path, which msgspec drives event by event), or it refuses with
``UnsplittableError``; it never gives something else. Real traces take the one-pass path.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steptrace.trace import load as loading
from steptrace.trace.columns import ColumnBuilder
from steptrace.trace.decode import (
    METADATA_FIELDS,
    AnyEvent,
    RawDocument,
    TolerantEvent,
    UnsplittableError,
    codec,
    exact_documents,
)
from steptrace.trace.fields import ALL_GROUPS, select
from steptrace.trace.load import load_trace, read_trace
from steptrace.trace.read import split as splitting
from steptrace.trace.read.source import FileText, decompress
from steptrace.trace.read.split import split_documents, stream_documents
from tests.conftest import WriteTrace, trace_params
from tests.tracegen import cpu, document, kernel, step

CODEC = codec(select(ALL_GROUPS))  # every field, the instants and the flows kept


def flatten(documents: list[RawDocument[AnyEvent]]) -> tuple[list[AnyEvent], dict[str, Any]]:
    """Every event in order, and the metadata of all pieces (a later piece wins)."""
    events: list[AnyEvent] = []
    metadata: dict[str, Any] = {}
    for piece in documents:
        events += map(_same_dur, piece.traceEvents or [])
        metadata |= {k: v for k in METADATA_FIELDS if (v := getattr(piece, k)) is not None}
    return events, metadata


def _same_dur(event: AnyEvent) -> AnyEvent:
    """The exact path keeps ``dur`` as text (``TolerantEvent``): compare it as a number."""
    if not isinstance(event, TolerantEvent):
        return event
    fields = {f: getattr(event, f) for f in CODEC.event.__struct_fields__}
    dur = bytes(event.dur)
    return CODEC.event(**(fields | {"dur": msgspec.json.decode(dur) if dur else None}))


def split_or_none(data: bytes, piece_bytes: int) -> list[RawDocument[AnyEvent]] | None:
    with mock.patch.object(splitting, "_PIECE_BYTES", piece_bytes):
        try:
            return list(split_documents(data, CODEC))
        except UnsplittableError:
            return None


@pytest.mark.parametrize("path", trace_params())
def test_real_traces_take_the_one_pass_path_and_match_the_exact_one(path: Path) -> None:
    data = decompress(path.read_bytes(), str(path))
    pieces = split_or_none(data, 64 << 10)  # many cuts even in the small traces
    assert pieces is not None, "a real Kineto trace fell back to the two-pass path"
    exact = flatten(list(exact_documents(data, str(path), CODEC)))
    assert flatten(pieces) == exact
    assert len(pieces) > min(3, len(data) // (64 << 10))


NASTY = st.text(alphabet='ab}{,[]": \\\n\t', max_size=12)  # what a cut could be fooled by
NAMES = st.one_of(st.text(alphabet="ab:# ", max_size=8), NASTY)
PHASES = st.sampled_from(["X", "M", "i", "s", "f", "C"])


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": draw(PHASES), "name": draw(NAMES), "cat": draw(NAMES)}
    if draw(st.booleans()):
        event |= {"ts": draw(st.integers(0, 10**6)), "dur": draw(st.integers(0, 1000))}
    if draw(st.integers(0, 3)) == 0:  # nested objects that look like events: tempting cuts
        inner = draw(st.lists(st.fixed_dictionaries({"ph": PHASES, "name": NASTY}), max_size=3))
        event["args"] = {"nested": inner, "correlation": draw(st.integers(0, 99)), "k": "}, {"}
    return event


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    trace_events = draw(st.lists(events(), min_size=1, max_size=12))
    indent = draw(st.sampled_from([None, 0, 2]))
    if draw(st.booleans()):  # the Chrome "array format"
        return json.dumps(trace_events, indent=indent).encode()
    before: dict[str, Any] = {"schemaVersion": 1}
    if draw(st.booleans()):  # the key's name inside an earlier value
        before["distributedInfo"] = {"note": '"traceEvents": [', "rank": 1}
    after: dict[str, Any] = {"traceName": draw(NASTY)}
    if draw(st.booleans()):  # another array of event-like objects after the events
        after["samples"] = draw(st.lists(events(), max_size=3))
    if draw(st.booleans()):
        after["baseTimeNanoseconds"] = 1700000000000000000
    return json.dumps({**before, "traceEvents": trace_events, **after}, indent=indent).encode()


@settings(max_examples=300, deadline=None)
@given(documents(), st.integers(1, 400))
def test_one_pass_equals_two_passes_or_refuses(data: bytes, piece_bytes: int) -> None:
    pieces = split_or_none(data, piece_bytes)
    if pieces is not None:
        assert flatten(pieces) == flatten(list(exact_documents(data, "t.json", CODEC)))


def test_a_second_events_key_is_left_to_the_exact_path() -> None:
    one = '{"ph": "X", "name": "a", "ts": 1, "dur": 1}'
    data = f'{{"traceEvents": [{one}, {one}], "traceEvents": [{one}]}}'.encode()
    assert split_or_none(data, 1) is None
    assert len(flatten(list(exact_documents(data, "t.json", CODEC)))[0]) == 1  # the last key wins


def test_a_cut_inside_a_string_is_passed_over_not_believed() -> None:
    name = "x" * 50 + "}, {" + "y" * 50  # the only cut point lies inside this name
    data = json.dumps({"traceEvents": [{"ph": "X", "name": name, "ts": 1, "dur": 2}]}).encode()
    pieces = split_or_none(data, 10)
    assert pieces is not None
    assert flatten(pieces) == flatten(list(exact_documents(data, "t.json", CODEC)))
    assert [e.name for e in flatten(pieces)[0]] == [name]  # type: ignore[union-attr]


def test_a_run_of_cuts_that_do_not_decode_is_left_to_the_exact_path() -> None:
    name = "}, {" * (splitting._RETRIES + 2)  # more wrong cuts in a row than are tried
    one = {"ph": "X", "name": "a", "ts": 1, "dur": 2}
    data = json.dumps({"traceEvents": [one, {**one, "name": name}, one]}).encode()
    assert split_or_none(data, 1) is None
    few = json.dumps({"traceEvents": [one, {**one, "name": "}, {" * 3}, one]}).encode()
    assert split_or_none(few, 1) is not None


def test_the_events_name_as_a_value_first_is_refused() -> None:
    data = b'{"name": "traceEvents", "traceEvents": [{"ph": "i", "name": "a"}]}'
    assert split_or_none(data, 1) is None
    escaped = b'{"note": "\\"traceEvents\\": [", "traceEvents": [{"ph": "i", "name": "a"}]}'
    pieces = split_or_none(escaped, 1)  # an escaped quote is no mention: one pass
    assert pieces is not None
    assert flatten(pieces) == flatten(list(exact_documents(escaped, "t.json", CODEC)))


def _refusing_after(pieces: int, splitter: Any = split_documents) -> Any:
    """A one-pass splitter that gives up after ``pieces`` documents, as a bad cut would."""

    def split(text: Any, coded: Any, *malformed: Any) -> Iterator[RawDocument[AnyEvent]]:
        for index, piece in enumerate(splitter(text, coded, *malformed)):
            if index == pieces:
                raise UnsplittableError
            yield piece

    return split


def test_loading_falls_back_to_the_exact_path_with_the_same_table(
    write_trace: WriteTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = [step(1, 0, 100), cpu("aten::mm", 10, 20), kernel("gemm", 40, 30)]
    events.append(cpu("a name with }, { inside", 50, 5))
    path = write_trace(document(events))
    whole = load_trace(path)
    text = FileText(path.read_bytes(), path.stat().st_size)  # the one-pass over a text
    monkeypatch.setattr(splitting, "_PIECE_BYTES", 1)
    monkeypatch.setattr(loading, "split_documents", _refusing_after(2))
    fell_back = read_trace(path, select(ALL_GROUPS), text=text)
    for field in ("kind", "name_id", "start_us", "dur_us", "correlation", "stream"):
        assert (getattr(fell_back.events, field) == getattr(whole.events, field)).all()
    assert fell_back.events.names == whole.events.names
    assert "a name with }, { inside" in whole.events.names
    assert fell_back.info.devices == whole.info.devices is not None


def _event(name: str) -> str:
    return json.dumps({"ph": "X", "name": name, "ts": 1, "dur": 1, "pid": 1, "tid": 1})


A, B, Z = _event("A"), _event("B"), _event("Z")


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({'x"traceEvents': [{"ph": "i", "name": "A"}]}),  # a key holding the name
        '{"traceEvents": [' + A + ", " + B + '], "\\u0074raceEvents": [' + Z + "]}",
        '{"displayTimeUnit": "ms", "traceEvents": [' + A + ", " + B + '], "displayTimeUnit": null}',
        '{"traceEvents": [' + A + "\x0b, " + B + "]}",  # a vertical tab is no JSON space
        "\x0c[" + A + "]",
    ],
    ids=["name-in-a-key", "escaped-second-key", "metadata-again", "vtab", "formfeed"],
)
def test_texts_that_once_fooled_the_cuts_are_refused(text: str) -> None:
    assert split_or_none(text.encode(), 1) is None


def test_an_escaped_first_key_still_loses_to_the_plain_one_after_it() -> None:
    data = ('{"\\u0074raceEvents": [' + B + '], "traceEvents": [' + A + ", " + Z + "]}").encode()
    assert json.loads(data)["traceEvents"][0]["name"] == "A"  # the last key wins
    pieces = split_or_none(data, 1)
    assert pieces is not None
    assert flatten(pieces) == flatten(list(exact_documents(data, "t.json", CODEC)))
    assert [e.name for e in flatten(pieces)[0]] == ["A", "Z"]  # type: ignore[union-attr]


def test_a_failed_one_pass_is_let_go_before_the_exact_pass(
    write_trace: WriteTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    builders: list[weakref.ref[ColumnBuilder]] = []

    class Spy(ColumnBuilder):
        def __init__(self, coded: Any) -> None:
            super().__init__(coded)
            builders.append(weakref.ref(self))

    def exact(
        data: bytes, where: str, coded: Any, skipped: list[str]
    ) -> Iterator[RawDocument[AnyEvent]]:
        assert builders[0]() is None, "the one-pass columns are still held"
        yield from exact_documents(data, where, coded, skipped)

    monkeypatch.setattr(loading, "ColumnBuilder", Spy)
    monkeypatch.setattr(loading, "exact_documents", exact)
    monkeypatch.setattr(splitting, "_PIECE_BYTES", 1)
    monkeypatch.setattr(loading, "stream_documents", _refusing_after(3, stream_documents))
    events = [step(1, 0, 100), cpu("aten::mm", 10, 20), cpu("late }, { name", 50, 5)]
    trace = load_trace(write_trace(document(events)))
    assert len(builders) == 2 and "late }, { name" in trace.events.names


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b'{"a": 1}, {"b": 2}, {"c": 3}', b'{"a": 1}, {"b": 2}'),  # the last cut
        (b'{"a": 1}\n  ,\n  {"b": 2}', b'{"a": 1}'),  # JSON's whitespace around the comma
        (b'{"a": 1}, {"b": {"c": 2}}', b'{"a": 1}'),  # a nested object is not a cut
        (b'{"a": {"b": 1}, "c": {"d": 2}}', None),  # "}, "c": {" is not "}, {"
        (b'{"a": 1}, {', b'{"a": 1}'),  # the next event's start is enough
        (b'{"a": 1}}', None),
        (b"", None),
        (b"{", None),
        (b"}" * 50 + b"{" * 50, None),  # braces, no cut
        (b'{"a": 1}, {"b": "' + b"x" * 70_000 + b'"}', b'{"a": 1}'),  # before the last 64 KB
        (b'{"a": 1}, {"b": "' + b"x" * 1_100_000 + b'"}', b'{"a": 1}'),  # before the last MB
    ],
    ids=lambda v: repr(v[:24]) if isinstance(v, bytes) else str(v),
)
def test_the_last_cut_of_a_chunk(text: bytes, expected: bytes | None) -> None:
    """A worker's piece ends at its last chunk's last ``}, {``: the ``}`` kept, the
    ``{`` starting the next piece, what lies between handed over apart."""
    cut = splitting._last_cut(text)
    if expected is None:
        assert cut is None
        return
    assert cut is not None
    assert text[: cut[0]] == expected
    assert text[cut[0] : cut[1]].strip(b" \n") == b","
    assert text[cut[1] :].startswith(b"{")
    assert splitting._last_cut(memoryview(text)) == cut  # a view of a chunk alike


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 300), min_size=1, max_size=30), st.integers(1, 400))
def test_raw_pieces_hold_every_byte_once_in_order(sizes: list[int], piece: int) -> None:
    """Whatever the chunks' sizes and the pieces' target, the pieces, the text between
    them and the rest are the text after the array's start, in order."""
    events = [cpu(f"op{k}", k, 1, note="}, {") for k in range(40)]
    text = json.dumps(document(events)).encode()
    chunks, at = [], 0
    for size in sizes * (len(text) // sum(sizes) + 1):
        chunks.append(text[at : at + size])
        at += size
    chunks = [c for c in chunks if c]
    with mock.patch.object(splitting, "_PIECE_BYTES", piece):
        cut, head, start = splitting.start_pieces(iter(chunks), CODEC)
        assert head is not None
        seen = b"".join(
            b"".join(bytes(p) for p in parts) + between for parts, between in cut.raw_pieces(start)
        )
    assert (seen + bytes(cut.buffer)) == text[text.index(b"[", text.index(b"traceEvents")) + 1 :]


def test_worker_pieces_are_of_one_size_the_first_and_the_last_too() -> None:
    """Each piece ends at the first cut past its size, even in the middle of a chunk: the
    first (the text after the events' key and the next chunk) is not twice the others, and
    the events of the text's last chunk go to a piece too, not to this process's end."""
    events = [cpu(f"op{i}", 10 + i * 20, 5) for i in range(4000)]
    text = json.dumps(document(events), indent=1).encode()
    size = 1 << 14
    with mock.patch.object(splitting, "_PIECE_BYTES", size // splitting._WORKER_PIECES):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        rest, _, start = splitting.start_pieces(chunks, CODEC)
        pieces = [b"".join(parts) for parts, _ in rest.raw_pieces(start)]
        left = bytes(rest.buffer)
    event_bytes = len(text) // len(events)
    assert len(pieces) >= len(text) // size - 1
    assert all(size <= len(p) < size + 2 * event_bytes for p in pieces[:-1])
    assert len(pieces[-1]) < size + 2 * event_bytes
    assert len(left) < 2 * event_bytes + 200  # the last event, the array's end, the rest
    decoded = [e for p in pieces for e in CODEC.event_list.decode(b"[" + p + b"]")]
    assert len(decoded) + left.count(b'"ph"') == text.count(b'"ph"')  # each event once
