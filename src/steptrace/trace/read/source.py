"""Trace files -> their text: read, gunzipped, and read ahead on a thread.

ISA-L's inflate releases the GIL, so a file can be read and gunzipped on a thread while
the caller does something else: importing the analysis at start-up, or analyzing the
previous file of a folder of rank traces. This module needs only the standard library and
``isal``, so that reading can start before numpy and msgspec are imported.
"""

from __future__ import annotations

import os
import stat
import threading
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, NamedTuple, cast

from isal import igzip_lib, isal_zlib

from steptrace.errors import TraceError
from steptrace.trace.read.budget import whole_limit, why_limited
from steptrace.trace.read.progress import Stage, shows_progress

GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 8 * 1024 * 1024
# Read ahead whole only below these sizes; a larger file is streamed by its loader.
READ_AHEAD_BYTES = 16 << 20  # on disk
# Gunzipped, as the gzip trailer says: a text read ahead is inflated in one call, which
# releases the GIL throughout, beside the imports of the analysis (streamed, the same
# text is inflated chunk by chunk, each chunk waiting for the GIL: 0.13 s for the 54 MB
# V100 DDP trace beside those imports, 0.07 s alone).
READ_AHEAD_TEXT_BYTES = 64 << 20
# From this size of text (the trailer's) the loader's worker processes decode the pieces,
# which pays from about this size (``analyze`` on 2 cores, whole processes, 2026-12: the
# 54 MB V100 DDP trace 1.09 s in workers, 1.26 s in one process; the 35 MB ResNet-50 one
# 0.79 s and 0.82 s).
PARALLEL_TEXT_BYTES = 32 << 20
_MAX_RATIO = 1032  # deflate's largest expansion of its input
_ISAL_ERROR = cast(type[Exception], isal_zlib.error)
_SILENT = Stage(None, 0)


class FileText(NamedTuple):
    """A trace file's content, gunzipped, its size on disk when it was read, and the bytes
    ignored after its gzip data (``trailing``)."""

    data: bytes
    size: int
    ignored: int = 0


def file_size(path: Path) -> int:
    """The size of a trace file; a one-line ``TraceError`` if it is not a regular file."""
    try:
        mode = path.stat()  # follows a symbolic link, as reading does
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    _check_regular(path, mode.st_mode)
    return mode.st_size


def _check_regular(path: Path, mode: int) -> None:
    """A FIFO would block the read forever and ``/dev/zero`` never ends: only files."""
    if stat.S_ISDIR(mode):
        raise TraceError(f"{path}: is a folder, not a trace file")
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _SPECIAL if test(mode)), "special file")
        raise TraceError(f"{path}: is a {kind}, not a regular file: traces are read from files")


def check_open(path: Path, handle: BinaryIO) -> None:
    """An opened file is still a regular one (not swapped for a named pipe since ``file_size``)."""
    _check_regular(path, os.fstat(handle.fileno()).st_mode)


_SPECIAL = (
    (stat.S_ISFIFO, "named pipe"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


def read_file(path: Path, stage: Stage = _SILENT) -> bytes:
    """A regular file's bytes; one-line ``TraceError`` otherwise, or if it does not fit.

    Opened without blocking and checked again once open, so that a file swapped for a
    named pipe after ``file_size`` cannot hang the read either.
    """
    size, limit = file_size(path), whole_limit()
    if limit is not None and size > limit:
        raise TraceError(too_large(str(path), size, limit))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            check_open(path, handle)
            chunks = []
            while chunk := handle.read(_CHUNK):
                chunks.append(chunk)
                stage.read(len(chunk))
        return b"".join(chunks)
    except OSError as exc:
        raise TraceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except MemoryError:
        raise TraceError(f"{path}: too large to read into memory") from None


def read_text(path: Path, stage: Stage = _SILENT) -> FileText:
    """The file's bytes, gunzipped when they are gzip."""
    raw = read_file(path, stage)
    stage.step("decompressing")
    data, ignored = inflate(raw, str(path), whole_limit())
    return FileText(data, len(raw), ignored)


class PastLimitError(TraceError):
    """A text that grew past the limit it was read under (``inflate``)."""


def read_ahead_text(path: Path) -> FileText | None:
    """``read_text`` of a file that says it is small, or None when its text grows past
    ``READ_AHEAD_TEXT_BYTES`` after all (a gzip trailer holds the size modulo 2**32, or
    lies): such a file is streamed by its loader, which refuses a compressed bomb within
    64 MB of it, instead of being inflated whole here."""
    limit = whole_limit()
    ahead = READ_AHEAD_TEXT_BYTES if limit is None else min(limit, READ_AHEAD_TEXT_BYTES)
    raw = read_file(path)
    try:
        data, ignored = inflate(raw, str(path), ahead)
    except PastLimitError:
        return None
    return FileText(data, len(raw), ignored)


def too_large(where: str, size: int, limit: int) -> str:
    """The refusal of a text past a limit (``budget``), in one line."""
    return (
        f"{where}: too large to hold in memory here ({size:,} bytes or more, at most "
        f"{limit:,}: {why_limited()})"
    )


def decompress(raw: bytes, where: str) -> bytes:
    """``inflate``'s text alone, within the whole-text limit (``budget``)."""
    return inflate(raw, where, whole_limit())[0]


def trailing(rest: bytes) -> int:
    """The bytes after the last gzip member that count as damage: none when they are zero
    padding (which some writers add), else all of them."""
    return len(rest) if rest.strip(b"\0") else 0


def inflate(raw: bytes, where: str, limit: int | None = None) -> tuple[bytes, int]:
    """Gunzip when the bytes are gzip (else return them as they are), and the bytes
    ignored after the last member (``trailing``); a text past ``limit`` bytes is refused
    as soon as it passes it, before it is held.

    Every member of a multi-member file, in turn; what follows the last member, if it is
    not another one (zero padding), is ignored, as ``stream`` does. ISA-L's inflate
    (``isal``) is about three times faster than zlib's. The gzip trailer gives the size:
    one exact allocation instead of growing buffers (which would double the peak memory on
    a large trace). The trailer is only a hint, bounded by deflate's largest ratio
    (1032:1): a truncated file cannot make it ask for gigabytes up front. It tells the last
    member's size only: a file of several members takes the member-by-member path.
    """
    if not raw.startswith(GZIP_MAGIC):
        return raw, 0
    most = limit if limit is not None else len(raw) * _MAX_RATIO
    try:
        size = int.from_bytes(raw[-4:], "little")
        first = igzip_lib.IgzipDecompressor(flag=igzip_lib.DECOMP_GZIP)
        data = first.decompress(raw, max(min(size, len(raw) * _MAX_RATIO, most + 1), 1))
        if first.eof and first.unused_data[:1] != GZIP_MAGIC[:1] and len(data) <= most:
            return data, trailing(first.unused_data)  # the only member
        del data
        return _members(raw, where, most)
    except (OSError, EOFError, zlib.error, _ISAL_ERROR) as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise TraceError(f"{where}: broken gzip ({text[:200]})") from None
    except MemoryError:
        raise TraceError(f"{where}: too large to decompress into memory") from None


def _members(raw: bytes, where: str, most: int) -> tuple[bytes, int]:
    """Each gzip member in turn, until what follows is not one (its bytes: ``trailing``),
    refused once the text passes ``most`` bytes."""
    texts, rest, held = [], raw, 0
    while rest[:1] == GZIP_MAGIC[:1]:
        member = igzip_lib.IgzipDecompressor(flag=igzip_lib.DECOMP_GZIP)
        texts.append(member.decompress(rest, most + 1 - held))
        held += len(texts[-1])
        if held > most:
            raise PastLimitError(too_large(where, held, most))
        if not member.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
        rest = member.unused_data
    return b"".join(texts), trailing(rest)


class ReadAhead:
    """Each file with its ``BackgroundRead``; the next file is read on a thread while one is used.

    Reading the first file starts at construction, the next one when a file is handed out:
    at most two texts are held at a time. A file whose loading shows a progress display
    (a large file, on a terminal) is not read ahead: its loader reads it, in view; nor is a
    large file (``reads_ahead``): its loader streams it, never holding its whole text.
    """

    def __init__(self, paths: Sequence[Path]) -> None:
        self._paths = list(paths)
        self._next = BackgroundRead(self._paths[0]) if self._paths else None

    def __iter__(self) -> Iterator[tuple[Path, BackgroundRead]]:
        for index, path in enumerate(self._paths):
            reading, self._next = self._next, None
            assert reading is not None  # one reading is started per path, in order
            if index + 1 < len(self._paths):
                self._next = BackgroundRead(self._paths[index + 1])
            yield path, reading


def reads_ahead(path: Path) -> bool:
    """Whether a file is small enough to be read whole ahead of its use.

    Below ``READ_AHEAD_BYTES`` on disk, and below ``READ_AHEAD_TEXT_BYTES`` of text
    (``text_bytes``: a gzip's trailer says it modulo 2**32, a wrapped size erring towards
    reading ahead; so does a size deflate cannot reach, a broken file whose reading
    reports it). Anything but a regular file is read "ahead": the reading refuses it in
    one line.
    """
    mode = path.stat()
    if not stat.S_ISREG(mode.st_mode):
        return True
    if mode.st_size >= READ_AHEAD_BYTES:
        return False
    text = text_bytes(path)
    return text is None or text < READ_AHEAD_TEXT_BYTES


def text_bytes(path: Path) -> int | None:
    """A regular file's text size: its own, or the one its gzip trailer says; None for
    anything but a regular file (never opened: a named pipe would block), when that
    trailer cannot be true (more than deflate's largest expansion), or when the file
    cannot be read (its reading says why)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            mode = os.fstat(handle.fileno())
            if not stat.S_ISREG(mode.st_mode):
                return None
            size = mode.st_size
            if handle.read(2) != GZIP_MAGIC or size < 4:
                return size
            handle.seek(size - 4)
            text = int.from_bytes(handle.read(4), "little")
    except OSError:
        return None
    return None if text > size * _MAX_RATIO else text


def decodes_in_parallel(path: Path) -> bool:
    """Whether a local file's text is large enough (``PARALLEL_TEXT_BYTES``) for its
    events to be decoded by worker processes."""
    text = text_bytes(path)
    return text is not None and text >= PARALLEL_TEXT_BYTES


class BackgroundRead(threading.Thread):
    """One file read on a daemon thread: a failed or abandoned read never blocks the exit."""

    def __init__(self, path: Path) -> None:
        super().__init__(name=f"steptrace-read-{path.name}", daemon=True)
        self._path = path
        self._text: FileText | None = None
        self._error: Exception | None = None
        self._taken = False
        try:
            self.ahead = reads_ahead(path) and not shows_progress(path.stat().st_size)
        except OSError:
            self.ahead = True  # the reading reports the error, in one line
        if self.ahead:
            self.start()

    def run(self) -> None:
        try:
            self._text = read_ahead_text(self._path)
        except Exception as error:  # handed to the caller, in its thread, by take()
            self._error = error

    def take(self) -> FileText | None:
        """The text, once (None: not read ahead, or its text grew past what it said: the
        loader streams it); then this object lets go of it.

        A file's ``TraceError`` is raised here, as if the file had been read now.
        """
        if self._taken:
            raise RuntimeError(f"{self._path}: the text was taken already")
        self._taken = True
        if not self.ahead:
            return None
        self.join()
        if self._error is not None:
            raise self._error
        text, self._text = self._text, None
        return text
