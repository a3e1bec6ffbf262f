"""A trace streamed in chunks gives the same report as the whole text decoded exactly.

The reference is the exact path (``decode.exact_documents``: msgspec finds every event's
bytes in the whole text, then decodes them), which shares nothing with the streamed one
(``stream.TextStream`` -> ``split.stream_documents``) but the event types. Chunk and piece
sizes are forced small and odd, so that chunk boundaries fall everywhere: inside strings
and their escapes, inside numbers, inside nested ``args``, and between the two bytes of a
``}, {``. The memory the splitter holds is bounded by its chunk and piece sizes, not by
the text (tracemalloc).
"""

from __future__ import annotations

import gzip
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steptrace.cli import app
from steptrace.errors import TraceError
from steptrace.trace import load as loading
from steptrace.trace.decode import AnyEvent, RawDocument, UnsplittableError, exact_documents
from steptrace.trace.read import source
from steptrace.trace.read import split as splitting
from steptrace.trace.read import stream as streaming
from steptrace.trace.read.source import decompress
from steptrace.trace.read.split import stream_documents
from steptrace.trace.read.stream import TextStream
from tests.conftest import NOT_A_TRACE, WriteTrace, real_traces, trace_params
from tests.trace.read.test_split import CODEC, flatten
from tests.tracegen import cpu, kernel, launch, step

runner = CliRunner()


def _report(path: Path) -> str:
    """The report of one process (``test_parallel`` tests several)."""
    result = runner.invoke(app, ["analyze", str(path), "--format", "json", "--jobs", "1"])
    assert result.exit_code == 0, result.output
    return result.stdout


def _never_split(*_: object) -> Iterator[RawDocument[AnyEvent]]:
    raise UnsplittableError
    yield  # a generator, as the splitters are


def _exact_report(path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The report through the exact path, the whole text in memory."""
    with monkeypatch.context() as patch:
        patch.setattr(loading, "stream_documents", _never_split)
        patch.setattr(loading, "split_documents", _never_split)
        patch.setattr(loading, "parallel_columns", _never_split)
        return _report(path)


def _small_chunks(monkeypatch: pytest.MonkeyPatch, text: int, read: int, piece: int) -> None:
    monkeypatch.setattr(streaming, "CHUNK_BYTES", text)
    monkeypatch.setattr(streaming, "_READ_BYTES", read)
    monkeypatch.setattr(splitting, "_PIECE_BYTES", piece)
    monkeypatch.setattr(source, "READ_AHEAD_BYTES", 0)  # the command streams every file


def _text_bytes(path: Path) -> int:
    """The gunzipped size, from the gzip trailer (the shared traces are below 4 GiB)."""
    with path.open("rb") as handle:
        handle.seek(-4, 2)
        return int.from_bytes(handle.read(4), "little")


def _real_traces() -> list[Any]:
    """Every real trace; those of more than 30 MB of JSON (two analyses of 2-4 s) are slow."""
    params = trace_params()
    for i, param in enumerate(params):
        (path,) = param.values
        if isinstance(path, Path) and _text_bytes(path) > 30_000_000:
            params[i] = pytest.param(path, id=param.id, marks=pytest.mark.slow)
    return params


@pytest.mark.parametrize("path", _real_traces())
def test_every_real_trace_streamed_in_small_chunks_gives_the_exact_report(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path.name == NOT_A_TRACE:
        pytest.skip("not a trace: its error is tested in test_bad_input")
    exact = _exact_report(path, monkeypatch)
    size = len(gzip.decompress(path.read_bytes()))
    piece = max(size // 40, 1_000)  # tens of pieces, even in the small traces
    _small_chunks(monkeypatch, text=max(piece // 3, 257) | 1, read=7_919, piece=piece)
    calls: list[int] = []
    original = splitting._Text.more

    def counted(self: splitting._Text) -> bool:
        calls.append(1)
        return original(self)

    monkeypatch.setattr(splitting._Text, "more", counted)
    assert _report(path) == exact
    assert len(calls) > 3, "the trace was not read in several chunks"


def test_the_real_traces_are_all_checked() -> None:
    if not real_traces():
        pytest.skip("no real traces")
    assert len(trace_params()) >= 15


def _nested(depth: int) -> Any:
    value: Any = {"name": 'in}, {"side', "k": [1.5e3, -0.25]}
    for level in range(depth):
        value = [value, {"level": level, "s": "]}, {["}] if level % 2 else {"x": value}
    return value


NASTY_NAMES = [  # written with escapes: \" \\ \u00e9
    'quote " and }, { inside',
    "back\\slash}, {",
    "caf\u00e9 }, {",
    'a"}, {"ph": "X", "name": "fake", "ts": 1, "dur": 1}',
    "RAW",  # replaced in the text by raw UTF-8 and escaped braces
]
RAW = 'caf\u00e9 \u00e9 \\u007d, \\u007b \\" \u00e9'.encode()  # é: two bytes


def _nasty_events() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [step(1, 0, 1_000), step(2, 1_000, 1_000)]
    for i in range(60):
        ts = 10 + i * 30 + (i % 7) * 0.125  # decimals: boundaries inside numbers
        name = NASTY_NAMES[i % len(NASTY_NAMES)] + str(i)
        op = cpu(name, ts, 12.5, deep=_nested(8 + i % 5), note="}, {" * (i % 3))
        events += [op, launch(ts + 1, 2, correlation=i), kernel(f"k{i}", ts + 5, 3, correlation=i)]
    return events


def _nasty_text() -> bytes:
    info = {"rank": 0, "world_size": 1, "note": '"traceEvents": ['}
    trace = {"schemaVersion": 1, "distributedInfo": info, "traceEvents": _nasty_events()}
    body = json.dumps(trace, indent=1).encode()
    body = body.replace(b'"RAW', b'"' + RAW)
    return body[:-1] + b', "deviceProperties": [{"id": 0, "name": "}, {"}, {"id": 1}]}'


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_a_trace_cut_inside_escapes_numbers_and_nested_args_gives_the_exact_report(
    gz: bool, write_trace: WriteTrace, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _nasty_text()
    assert json.loads(text)["deviceProperties"][0]["name"] == "}, {"  # written after the events
    path = write_trace(text, gz=gz)
    exact = _exact_report(path, monkeypatch)
    assert len(json.loads(exact)["analysis"]["steps"]) == 2
    for chunk, read, piece in [(5, 13, 1), (64, 29, 50), (4096, 97, 500), (1 << 20, 1 << 20, 1)]:
        with monkeypatch.context() as patch:
            _small_chunks(patch, text=chunk, read=read, piece=piece)
            assert _report(path) == exact, (chunk, read, piece)


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 11, 97])
@pytest.mark.parametrize("piece", [1, 40, 333])
def test_chunks_of_any_size_give_the_exact_events(
    chunk: int, piece: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _nasty_text()
    monkeypatch.setattr(splitting, "_PIECE_BYTES", piece)
    chunks = (text[i : i + chunk] for i in range(0, len(text), chunk))
    streamed = flatten(list(stream_documents(chunks, CODEC)))
    exact = flatten(list(exact_documents(text, "t.json", CODEC)))
    assert streamed == exact
    assert len(streamed[0]) == len(_nasty_events())
    assert streamed[1]["deviceProperties"][0]["name"] == "}, {"


def _events_text(copies: int) -> Iterator[bytes]:
    """A long trace's text, generated chunk by chunk (never held whole)."""
    one = json.dumps(cpu("aten::mm", 1, 2, correlation=5)).encode()
    block = b",\n".join([one] * 1_000)
    yield b'{"schemaVersion": 1, "traceEvents": [\n' + block
    for _ in range(copies - 1):
        yield b",\n" + block
    yield b'\n], "traceName": "long"}'


def test_the_splitter_holds_a_few_pieces_not_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    piece = 64 << 10
    monkeypatch.setattr(splitting, "_PIECE_BYTES", piece)
    copies = 120  # about 15 MB of text, in chunks of about 120 KB
    events = 0
    tracemalloc.start()
    try:
        for part in stream_documents(_events_text(copies), CODEC):
            events += len(part.traceEvents or [])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    text_bytes = sum(map(len, _events_text(copies)))
    assert events == copies * 1_000
    assert text_bytes > 12_000_000
    assert peak < 40 * piece, f"peak {peak} B for a text of {text_bytes} B"


# ----------------------------------------------------------------------------- TextStream


def _read(path: Path) -> tuple[bytes, int]:
    with TextStream(path) as stream:
        return b"".join(stream), stream.read_bytes


@pytest.mark.parametrize("read", [1, 5, 4096])
def test_text_stream_reads_plain_gzip_and_every_member(
    read: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streaming, "_READ_BYTES", read)
    monkeypatch.setattr(streaming, "CHUNK_BYTES", 7)
    text = b'{"traceEvents": [' + b"x" * 3_000 + b"]}"
    files = {
        "a.json": text,
        "b.json.gz": gzip.compress(text),
        "c.json.gz": gzip.compress(text[:10]) + gzip.compress(text[10:]),
        "d.json.gz": gzip.compress(text) + bytes(8),  # zero padding after the member
    }
    for name, raw in files.items():
        (tmp_path / name).write_bytes(raw)
        assert _read(tmp_path / name) == (text, len(raw)), name


@pytest.mark.parametrize(
    "raw",
    [
        gzip.compress(b'{"traceEvents": []}' * 100)[:-30],  # truncated
        b"\x1f\x8bnot gzip at all",
        gzip.compress(b"{}") + b"\x1f\x8bxx",  # a broken second member
    ],
    ids=["truncated", "not-gzip", "broken-member"],
)
def test_text_stream_reports_a_broken_gzip_in_one_line(raw: bytes, tmp_path: Path) -> None:
    path = tmp_path / "bad.json.gz"
    path.write_bytes(raw)
    with pytest.raises(TraceError, match=r"bad\.json\.gz: broken gzip \(") as caught:
        _read(path)
    assert "\n" not in str(caught.value)


_TEXT = b'{"traceEvents": [' + b'{"ph": "X"}, ' * 500 + b"{}]}"
_HALF = len(_TEXT) // 2


@pytest.mark.parametrize(
    "raw",
    [
        gzip.compress(_TEXT),
        gzip.compress(_TEXT[:_HALF])
        + gzip.compress(_TEXT[_HALF : 2 * _HALF])
        + (
            gzip.compress(_TEXT[2 * _HALF :]) if len(_TEXT) % 2 else b""
        ),  # members of equal size: the last one's trailer tells the first one's size too
        gzip.compress(_TEXT) * 2,  # the same member twice: the text twice (not JSON)
        gzip.compress(_TEXT[:7]) + gzip.compress(_TEXT[7:100]) + gzip.compress(_TEXT[100:]),
        gzip.compress(_TEXT) + bytes(8),  # zero padding
        gzip.compress(_TEXT) + b"trailing text",  # not a member: ignored
        gzip.compress(_TEXT)[:-30],  # truncated
        gzip.compress(_TEXT) + b"\x1f\x8bxx",  # a broken second member
    ],
    ids=["one", "equal-halves", "twice", "three", "padding", "trailing", "truncated", "broken"],
)
def test_a_file_read_whole_is_gunzipped_as_the_stream_does(raw: bytes, tmp_path: Path) -> None:
    """Small files are read whole (``source.decompress``), large ones streamed: one text."""
    path = tmp_path / "t.json.gz"
    path.write_bytes(raw)
    try:
        streamed: bytes | str = _read(path)[0]
    except TraceError as error:
        streamed = str(error)
    try:
        whole: bytes | str = decompress(raw, str(path))
    except TraceError as error:
        whole = str(error)
    assert whole == streamed
    if isinstance(whole, bytes):
        assert whole.startswith(_TEXT) and len(whole) % len(_TEXT) == 0


def test_a_stream_left_early_stops_its_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streaming, "_READ_BYTES", 16)
    path = tmp_path / "a.json"
    path.write_bytes(b"x" * 10_000)
    stream = TextStream(path)
    next(iter(stream))
    stream.close()
    assert not stream._thread.is_alive()


def test_large_files_are_streamed_not_read_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, large = tmp_path / "small.json.gz", tmp_path / "large.json.gz"
    small.write_bytes(gzip.compress(b"x" * 1_000))
    large.write_bytes(gzip.compress(b"x" * 3_000_000))
    monkeypatch.setattr(source, "READ_AHEAD_TEXT_BYTES", 2_000_000)
    assert source.reads_ahead(small) and not source.reads_ahead(large)
    ((_, reading),) = source.ReadAhead([large])
    assert reading.take() is None  # left to its loader, which streams it
    monkeypatch.setattr(source, "READ_AHEAD_BYTES", 10)
    assert not source.reads_ahead(small)
