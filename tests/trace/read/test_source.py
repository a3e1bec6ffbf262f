"""Reading trace files: gunzip, one-line errors, and reading ahead on a thread."""

from __future__ import annotations

import gzip
import io
import os
import sys
import threading
from pathlib import Path

import pytest

from steptrace.errors import TraceError
from steptrace.trace.read import source
from steptrace.trace.read.source import FileText, ReadAhead, decompress, read_text


def test_plain_and_gzip_files_read_the_same(tmp_path: Path) -> None:
    text = b'{"traceEvents": []}'
    (tmp_path / "a.json").write_bytes(text)
    (tmp_path / "a.json.gz").write_bytes(gzip.compress(text))
    plain, gzipped = read_text(tmp_path / "a.json"), read_text(tmp_path / "a.json.gz")
    assert plain.data == gzipped.data == text
    assert plain.size == len(text) and gzipped.size == (tmp_path / "a.json.gz").stat().st_size


def test_read_ahead_hands_out_every_file_in_order(tmp_path: Path) -> None:
    paths = []
    for i in range(5):
        path = tmp_path / f"rank-{i}.json.gz"
        path.write_bytes(gzip.compress(f'{{"rank": {i}}}'.encode()))
        paths.append(path)
    seen = [(path, _data(reading.take())) for path, reading in ReadAhead(paths)]
    assert seen == [(p, f'{{"rank": {i}}}'.encode()) for i, p in enumerate(paths)]


def _data(text: FileText | None) -> bytes:
    assert text is not None
    return text.data


def test_the_next_file_is_read_while_one_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_path, second_path = tmp_path / "a.json", tmp_path / "b.json"
    first_path.write_bytes(b"{}")
    second_path.write_bytes(b'{"b": 1}')
    started: dict[str, threading.Event] = {"a.json": threading.Event(), "b.json": threading.Event()}
    real = source.read_ahead_text

    def spied(path: Path) -> FileText | None:
        started[path.name].set()
        return real(path)

    monkeypatch.setattr(source, "read_ahead_text", spied)
    readings = iter(ReadAhead([first_path, second_path]))
    _, first = next(readings)
    assert _data(first.take()) == b"{}"
    assert started["b.json"].wait(10.0)  # nobody asked for b.json yet: read ahead
    _, second = next(readings)
    assert _data(second.take()) == b'{"b": 1}'


def test_a_bad_file_fails_on_its_turn_and_the_text_is_given_once(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json.gz"
    good.write_bytes(b"{}")
    bad.write_bytes(b"\x1f\x8bnot gzip at all")
    readings = iter(ReadAhead([good, bad]))
    _, first = next(readings)
    assert _data(first.take()) == b"{}"
    with pytest.raises(RuntimeError, match="taken already"):
        first.take()  # the reading let go of the text: its user alone holds it
    _, second = next(readings)
    with pytest.raises(TraceError, match=r"bad\.json\.gz: broken gzip"):
        second.take()


def test_missing_file_and_folder_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such file"):
        read_text(tmp_path / "absent.json")
    with pytest.raises(TraceError, match="is a folder"):
        read_text(tmp_path)


def test_decompress_leaves_plain_bytes_alone() -> None:
    assert decompress(b"[1, 2]", "x.json") == b"[1, 2]"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_file_shown_loading_on_a_terminal_is_left_to_its_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"{}")
    monkeypatch.setattr("steptrace.trace.read.progress.LARGE_TRACE_BYTES", 2)
    monkeypatch.setattr(sys, "stderr", _Terminal())
    ((_, reading),) = ReadAhead([path])
    assert reading.take() is None  # the loader reads it with its progress display
    assert not reading.is_alive() and not reading.ahead
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a pipe: read ahead
    ((_, reading),) = ReadAhead([path])
    assert _data(reading.take()) == b"{}"


def test_only_a_large_regular_file_is_decoded_in_parallel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The text's size, as a gzip trailer says it, decides; a named pipe is never opened
    for it (it would block), and a trailer deflate cannot reach is not believed."""
    small, large = tmp_path / "small.json.gz", tmp_path / "large.json"
    small.write_bytes(gzip.compress(b"x" * 1_000))
    large.write_bytes(b"x" * 3_000)
    monkeypatch.setattr(source, "PARALLEL_TEXT_BYTES", 2_000)
    assert source.text_bytes(small) == 1_000 and source.text_bytes(large) == 3_000
    assert not source.decodes_in_parallel(small) and source.decodes_in_parallel(large)
    liar = tmp_path / "liar.json.gz"
    liar.write_bytes(gzip.compress(b"x")[:-4] + (2**32 - 1).to_bytes(4, "little"))
    assert source.text_bytes(liar) is None and not source.decodes_in_parallel(liar)
    if sys.platform != "win32":
        pipe = tmp_path / "pipe.json"
        os.mkfifo(pipe)
        assert source.text_bytes(pipe) is None and not source.decodes_in_parallel(pipe)
    assert source.text_bytes(tmp_path / "absent.json") is None
