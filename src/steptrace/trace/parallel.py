"""A large trace's events decoded by several processes: every core at work on one file.

``parallel_columns(chunks, pool)`` is ``split.stream_documents`` fed to one
``ColumnBuilder``, with the decoding and the columns of each piece of events done in a pool
of worker processes (msgspec holds the GIL while it builds objects: threads would not
share that work). This process reads the text, cuts it (``split._Text.raw_pieces``) and
merges the pieces' columns in order, their ids made its own (``ColumnBuilder.merge``).

A cut is a guess (see ``split``): a piece is taken only once every piece before it was,
so that it starts at an event. One that does not decode from there was cut inside a value:
it is joined with the next piece (and the text between them) and decoded here, at most
``split._RETRIES`` times and ``split._MAX_PENDING`` bytes; the next piece's own result,
decoded from a wrong start, is never used. A piece of events of the wrong shape, or a text
that cannot be cut at all, raises ``UnsplittableError`` as the one-process path does. At
most ``_AHEAD_PER_WORKER`` pieces per worker are in flight, so the memory held stays a
few pieces whatever the file's size.
"""

from __future__ import annotations

import gc
import multiprocessing
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from multiprocessing.pool import AsyncResult, Pool
from typing import Any, Literal, NamedTuple

import msgspec

from steptrace.trace.columns import ColumnBuilder, Piece
from steptrace.trace.decode import EVENT_LIST, METADATA_FIELDS, AnyEvent, Document
from steptrace.trace.decode import UnsplittableError as UnsplittableError
from steptrace.trace.split import _MAX_PENDING, _RETRIES, end_document, start_pieces

_AHEAD_PER_WORKER = 3  # pieces in flight per worker process
Failure = Literal["cut", "shape"]  # a piece that did not decode: a wrong cut, a wrong event


def piece_columns(text: bytes) -> Piece | Failure:
    """The columns of one piece of events (a worker's job): ``"cut"`` if the text is not a
    list of events, ``"shape"`` if it is one with an event of the wrong shape."""
    try:
        events: list[AnyEvent] = EVENT_LIST.decode(b"".join((b"[", text, b"]")))
    except msgspec.ValidationError:
        return "shape"
    except (msgspec.DecodeError, RecursionError):
        return "cut"
    builder = ColumnBuilder()
    builder.add(events)
    del events
    return builder.piece()


class WorkerPool(NamedTuple):
    """Worker processes, and how many."""

    pool: Pool
    workers: int


@contextmanager
def worker_pool(workers: int) -> Iterator[WorkerPool | None]:
    """A pool of ``workers`` processes, or None for one process (or where none can start).

    Made before any thread of this loading starts: forked workers then copy no lock held
    by another thread. A process that is itself a pool's worker (daemonic) gets None.
    """
    if workers < 2 or multiprocessing.current_process().daemon:
        yield None
        return
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    try:
        pool = multiprocessing.get_context(method).Pool(workers, initializer=gc.disable)
    except OSError:  # no more processes allowed, no /dev/shm...
        yield None
        return
    try:
        yield WorkerPool(pool, workers)
    finally:
        pool.terminate()
        pool.join()


def parallel_columns(
    chunks: Iterable[bytes | memoryview], workers: WorkerPool
) -> tuple[ColumnBuilder, Document[AnyEvent]]:
    """The columns of a trace's text and the metadata around its events (see module)."""
    text, head, start = start_pieces(chunks)
    builder = ColumnBuilder()
    in_order = _InOrder(workers.pool, builder, _AHEAD_PER_WORKER * workers.workers)
    for piece, between in text.raw_pieces(start):
        in_order.submit(piece, between)
    rest = in_order.finish() + text.buffer
    tail = end_document(head, rest)
    del rest
    metadata: dict[str, Any] = {}
    for part in (head, tail):
        if part is not None:
            if part.traceEvents:
                builder.add(part.traceEvents)
            metadata |= {k: v for k in METADATA_FIELDS if (v := getattr(part, k)) is not None}
    return builder, Document(**metadata)


class _InOrder:
    """Pieces sent to the pool, their results taken in the text's order (see module)."""

    def __init__(self, pool: Pool, builder: ColumnBuilder, ahead: int) -> None:
        self._pool = pool
        self._builder = builder
        self._ahead = ahead
        self._pending: deque[tuple[bytes, bytes, AsyncResult[Piece | Failure]]] = deque()
        self._carry = b""  # text not taken yet: pieces cut inside a value, and what follows
        self._retries = 0

    def submit(self, piece: bytes, between: bytes) -> None:
        """Send a piece (and the text before the next one) to a worker."""
        self._pending.append((piece, between, self._pool.apply_async(piece_columns, (piece,))))
        while len(self._pending) > self._ahead:
            self._take()

    def finish(self) -> bytes:
        """Take every piece still in flight; the text not taken (empty if all were)."""
        while self._pending:
            self._take()
        return self._carry

    def _take(self) -> None:
        piece, between, future = self._pending.popleft()
        result = future.get()
        if self._carry:  # the pieces before were cut inside a value: join them to this one
            piece = self._carry + piece
            result = piece_columns(piece)
        if isinstance(result, Piece):
            self._builder.merge(result)
            self._carry, self._retries = b"", 0
            return
        self._retries += 1
        if result == "shape" or self._retries > _RETRIES or len(piece) > _MAX_PENDING:
            raise UnsplittableError
        self._carry = piece + between
