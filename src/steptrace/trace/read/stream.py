"""A trace file -> its text in chunks, read and gunzipped on a thread, in bounded memory.

``TextStream(path, limit)`` iterates, once, over the file's text (refused past ``limit``
bytes), gunzipped when it is gzip (every member of a multi-member file; what follows the
last member, if it is not another one, is ignored as ``source.inflate`` does, and counted
in ``ignored`` unless it is zero padding), in chunks of at most ``CHUNK_BYTES`` of
text (plain files: as read, ``_READ_BYTES`` at a time). A daemon thread reads the file
(or what an ``Opener`` opens: a URL) and inflates it with ISA-L (both release the GIL)
while the caller decodes what came before: at most ``_AHEAD`` chunks wait in between, so
the memory held stays a few chunks whatever the size of the file. Errors (a broken or
truncated gzip, a read error) are raised in the caller's thread, as one-line
``TraceError`` s, when it reaches them. Closing the stream (or leaving a ``with`` block)
stops the thread at its next chunk.

Like ``source``, this module needs only the standard library and ``isal``.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import zlib
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, NamedTuple, cast

from isal import isal_zlib

from steptrace.errors import TraceError
from steptrace.trace.read.budget import bomb_ratio
from steptrace.trace.read.source import GZIP_MAGIC, check_open, file_size, too_large, trailing

CHUNK_BYTES = 4 << 20  # text per chunk handed to the caller
_READ_BYTES = 1 << 20  # bytes read from the file at a time
_AHEAD = 4  # chunks waiting for the caller, at most
_ISAL_ERROR = cast(type[Exception], isal_zlib.error)


class Opener(NamedTuple):
    """A trace file that is not a local path (an fsspec URL: ``remote``): its name in
    messages, its size in storage, and how to open it for reading."""

    name: str
    size: int
    open: Callable[[], BinaryIO]


class TextStream:
    """The text of one trace file, chunk by chunk (see the module's docstring)."""

    def __init__(self, path: Path | Opener, limit: int | None = None) -> None:
        self.path = path.name if isinstance(path, Opener) else path  # in messages
        self._open = path.open if isinstance(path, Opener) else partial(_open, path)
        if not isinstance(path, Opener):
            file_size(path)  # a one-line error now for a folder, a pipe, no file
        self.read_bytes = 0  # of the file on disk, in the chunks taken so far
        self.ignored: list[int] = []  # bytes ignored after the gzip data (``trailing``)
        self._limit = limit  # text bytes at most (``budget.text_limit``)
        self._queue: queue.Queue[_Item] = queue.Queue(_AHEAD)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"steptrace-stream-{path.name}", daemon=True
        )
        self._thread.start()

    def __iter__(self) -> Iterator[bytes]:
        while (item := self._queue.get()) is not None:
            if isinstance(item, TraceError):
                raise item
            chunk, read = item
            self.read_bytes += read
            if chunk:
                yield chunk

    def close(self) -> None:
        """Stop the reading thread (it may be waiting for room to hand a chunk over)."""
        self._stop.set()
        while self._thread.is_alive():
            with contextlib.suppress(queue.Empty):
                self._queue.get(timeout=0.05)

    def __enter__(self) -> TextStream:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self) -> None:
        try:
            with self._open() as handle:
                head = handle.read(_READ_BYTES)
                while 0 < len(head) < len(GZIP_MAGIC) and (more := handle.read(_READ_BYTES)):
                    head += more  # enough to tell gzip from text
                gzipped = head.startswith(GZIP_MAGIC)
                inflated = _inflate(handle, head, self.path, self.ignored)
                chunks = inflated if gzipped else _plain(handle, head)
                text_bytes, compressed = 0, 0
                for chunk in chunks:
                    text_bytes, compressed = text_bytes + len(chunk[0]), compressed + chunk[1]
                    if self._limit is not None and text_bytes > self._limit:
                        raise TraceError(too_large(str(self.path), text_bytes, self._limit))
                    if gzipped and (bomb := bomb_ratio(self.path, text_bytes, compressed)):
                        raise TraceError(bomb)
                    if not self._put(chunk):
                        return
            self._put(None)
        except TraceError as error:
            self._put(error)
        except OSError as exc:
            self._put(TraceError(f"{self.path}: cannot read ({exc.strerror or exc})"))
        except MemoryError:
            self._put(TraceError(f"{self.path}: too large to read"))
        except Exception as exc:  # a storage backend's own error: said, never a silent hang
            self._put(TraceError(f"{self.path}: cannot read ({type(exc).__name__}: {exc})"))

    def _put(self, item: _Item) -> bool:
        """Hand an item over, waiting for room; False once the caller closed the stream."""
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False


_Item = tuple[bytes, int] | TraceError | None  # a chunk and the file's bytes it took; the end


def _open(path: Path) -> BinaryIO:
    """Opened without blocking and checked once open (a file swapped for a pipe)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    handle = os.fdopen(fd, "rb")
    try:
        check_open(path, handle)
    except BaseException:
        handle.close()
        raise
    return handle


def _plain(handle: BinaryIO, head: bytes) -> Iterator[tuple[bytes, int]]:
    chunk = head
    while chunk:
        yield chunk, len(chunk)
        chunk = handle.read(_READ_BYTES)


def _inflate(
    handle: BinaryIO, head: bytes, path: Path | str, ignored: list[int]
) -> Iterator[tuple[bytes, int]]:
    """Each member of the gzip file in turn, in chunks of at most ``CHUNK_BYTES`` of text.

    What follows the last member, if it is not another member, is ignored, as
    ``source.inflate`` does, and counted in ``ignored`` unless it is zero padding.
    """
    inflater, started = isal_zlib.decompressobj(wbits=31), False
    raw, read = head, len(head)
    try:
        while raw:
            if not started and raw[:1] != GZIP_MAGIC[:1]:
                yield b"", read  # after a member, what is not another one is ignored
                total, damaged = len(raw), trailing(raw) > 0
                while rest := handle.read(_READ_BYTES):
                    total, damaged = total + len(rest), damaged or trailing(rest) > 0
                    yield b"", len(rest)
                ignored.append(total if damaged else 0)
                return
            started = True
            text = inflater.decompress(raw, CHUNK_BYTES)
            raw = inflater.unconsumed_tail
            if inflater.eof:  # the end of a member: another may follow
                raw, started = inflater.unused_data, False
                inflater = isal_zlib.decompressobj(wbits=31)
            yield text, read
            read = 0
            if not raw:
                raw = handle.read(_READ_BYTES)
                read = len(raw)
        if started:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
    except (EOFError, zlib.error, _ISAL_ERROR) as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise TraceError(f"{path}: broken gzip ({why[:200]})") from None
