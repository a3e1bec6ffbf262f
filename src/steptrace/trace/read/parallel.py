"""A large trace's events decoded by several processes: every core at work on one file.

``parallel_columns(chunks, pool)`` is ``split.stream_documents`` fed to one
``ColumnBuilder``, with the decoding and the columns of each piece of events done in a pool
of worker processes (msgspec holds the GIL while it builds objects: threads would not
share that work). This process reads the text, cuts it (``split._Text.raw_pieces``) and
merges the pieces' columns in order, their ids made its own (``ColumnBuilder.merge``).
Pieces and columns cross between the processes through shared memory (``WorkerPool``).

A cut is a guess (see ``split``): a piece is taken only once every piece before it was,
so that it starts at an event. One that does not decode from there was cut inside a value:
it is joined with the next piece (and the text between them) and decoded here, at most
``split._RETRIES`` times and ``split._MAX_PENDING`` bytes; the next piece's own result,
decoded from a wrong start, is never used. A piece of events of the wrong shape is decoded
here event by event, those events left out and counted, as the one-process path does; a
text that cannot be cut at all raises ``UnsplittableError``. At
most ``_AHEAD_PER_WORKER`` pieces per worker are in flight, so the memory held stays a
few pieces whatever the file's size.
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import multiprocessing
import os
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any, Literal, NamedTuple

import msgspec
import numpy as np

from steptrace.errors import TraceError
from steptrace.process.lifetime import end_workers, starting_children, worker_start
from steptrace.trace.columns import ColumnBuilder, Piece
from steptrace.trace.decode import (
    AnyEvent,
    Codec,
    Malformed,
    RawDocument,
    UnsplittableError,
    codec,
)
from steptrace.trace.fields import Selection
from steptrace.trace.read import split
from steptrace.trace.read.split import end_document, start_pieces

_AHEAD_PER_WORKER = 3  # pieces in flight per worker process
MAX_WORKERS = 8  # for one file: beyond, the reading process cannot feed them any faster
Failure = Literal["cut", "shape"]  # a piece that did not decode: a wrong cut, a wrong event
_RING: mmap.mmap | None = None  # a forked worker's view of its parent's ring (see WorkerPool)


def piece_columns(text: bytes, selection: Selection) -> Piece | Failure:
    """The columns of one piece of events (a worker's job): ``"cut"`` if the text is not a
    list of events, ``"shape"`` if it is one with an event of the wrong shape."""
    return _columns_of(b"".join((b"[", text, b"]")), codec(selection))


def ring_columns(
    offset: int, length: int, room: slice, selection: Selection
) -> Piece | Packed | Failure:
    """``piece_columns`` of the list of events written at ``offset`` of the ring, its
    columns written back in the ring's ``room`` when they fit there (``Packed``)."""
    assert _RING is not None, "ring_columns runs in a forked worker"
    ring = memoryview(_RING)  # a view of the shared mapping, let go when the call returns
    result = _columns_of(ring[offset : offset + length], codec(selection))
    if isinstance(result, Piece):
        return _pack(result, ring[room]) or result
    return result


class Packed(NamedTuple):
    """A ``Piece`` whose columns a worker wrote in the ring: where each one lies there
    (batch, column name, dtype, length, offset in the room), the rest as it was."""

    piece: Piece  # with no batches
    batches: int
    columns: list[tuple[int, str, str, int, int]]


def _pack(piece: Piece, room: memoryview) -> Packed | None:
    """The piece's columns written in ``room``; None if they do not fit (then they go
    through the pool's pipe, pickled, as before)."""
    columns, at = [], 0
    for index, batch in enumerate(piece.batches):
        for name, array in batch.items():
            end = at + array.nbytes
            if end > len(room):
                return None
            room[at:end] = array.data.cast("B")
            columns.append((index, name, array.dtype.str, array.size, at))
            at = -(-end // 8) * 8  # the next one aligned
    return Packed(piece._replace(batches=[]), len(piece.batches), columns)


def _unpack(packed: Packed, room: memoryview) -> Piece:
    """The ``Piece`` a worker packed in ``room``, its columns copied out of the ring."""
    batches: list[dict[str, Any]] = [{} for _ in range(packed.batches)]
    for index, name, dtype, size, at in packed.columns:
        batches[index][name] = np.frombuffer(room, dtype=dtype, count=size, offset=at).copy()
    return packed.piece._replace(batches=batches)


def _columns_of(events_text: bytes | memoryview, coded: Codec) -> Piece | Failure:
    try:
        events: list[AnyEvent] = coded.event_list.decode(events_text)
    except msgspec.ValidationError:
        return "shape"
    except (msgspec.DecodeError, RecursionError):
        return "cut"
    builder = ColumnBuilder(coded)
    builder.add(events)
    del events
    return builder.piece()


class WorkerPool(NamedTuple):
    """Worker processes, how many, and where pieces are written for them.

    Forked workers share their parent's ``ring``, an anonymous shared mapping of
    ``slots`` pieces of at most ``slot_bytes``, then as many rooms of ``room_bytes`` for
    their columns: each is written there once, where a pipe would copy it four times
    (pickled, written, read, unpickled) and wake both processes every 64 KB. Elsewhere
    (spawned workers) there is no ring, and pieces and columns go through the pool's pipes.
    """

    pool: ProcessPoolExecutor
    workers: int
    ring: mmap.mmap | None
    slot_bytes: int
    room_bytes: int

    @property
    def slots(self) -> int:
        return _AHEAD_PER_WORKER * self.workers + 1

    def room(self, slot: int) -> slice:
        """Where the columns of the piece in ``slot`` are written back."""
        start = self.slots * self.slot_bytes + slot * self.room_bytes
        return slice(start, start + self.room_bytes)

    def close(self) -> None:
        """End the workers (their memory back to the system) and unmap the ring; again: no-op.

        A view of the ring still held (by the frames of an exception on its way up: Ctrl-C)
        keeps it mapped until that view goes."""
        self.pool.shutdown(wait=True, cancel_futures=True)
        if self.ring is not None:
            with contextlib.suppress(BufferError):
                self.ring.close()


@contextmanager
def worker_pool(workers: int) -> Iterator[WorkerPool | None]:
    """A pool of ``workers`` processes (at most ``MAX_WORKERS``), or None for one process
    (or where none can start).

    Made before this loading's own threads start (its reading thread, the progress
    display): the forked workers copy no lock they hold. A ``multiprocessing.Pool``'s
    worker (a daemonic process, which may not start processes) gets None.
    """
    global _RING
    workers = min(workers, MAX_WORKERS)
    if workers < 2 or multiprocessing.current_process().daemon:
        yield None
        return
    forks = sys.platform.startswith("linux")
    slot_bytes = 2 * split.worker_piece_bytes() + 2  # a piece, its last event's rest, "[]"
    room_bytes = split.worker_piece_bytes() // 2  # columns take 1/6 of the text on real traces
    ring, pool = None, None
    try:
        slots = _AHEAD_PER_WORKER * workers + 1
        ring = mmap.mmap(-1, slots * (slot_bytes + room_bytes)) if forks else None
        _RING = ring  # the workers forked next see it there
        context = multiprocessing.get_context("fork" if forks else "spawn")
        with starting_children(forked=forks):
            pool = ProcessPoolExecutor(
                workers, mp_context=context, initializer=_worker_start, initargs=(os.getpid(),)
            )
            started = pool.submit(int)  # every worker starts now, before this loading's threads
        started.result()
    except (OSError, BrokenProcessPool):  # no more processes allowed, no memory to map...
        _let_go(pool, ring)
        yield None
        return
    except BaseException:  # Ctrl-C while the workers start (said when the block ends)
        _let_go(pool, ring)
        raise
    finally:
        _RING = None
    made = WorkerPool(pool, workers, ring, slot_bytes, room_bytes)
    try:
        yield made
    except BaseException:  # Ctrl-C, or a failed decoding: not waiting for the pieces running
        end_workers(pool)
        raise
    finally:
        made.close()


def _let_go(pool: ProcessPoolExecutor | None, ring: mmap.mmap | None) -> None:
    """End a pool that did not start whole (its queues closed: no semaphore left to the
    resource tracker's warning), and unmap its ring."""
    if pool is not None:
        end_workers(pool)
    if ring is not None:
        ring.close()


def _worker_start(parent: int) -> None:
    """A worker's set-up: no garbage collection (the events hold no cycles); Ctrl-C is the
    parent's to handle, and the worker ends with it (``lifetime``)."""
    gc.disable()
    worker_start(parent)


def parallel_columns(
    chunks: Iterable[bytes | memoryview],
    workers: WorkerPool,
    coded: Codec,
    malformed: Malformed | None = None,
) -> tuple[ColumnBuilder, RawDocument[AnyEvent]]:
    """The columns of a trace's text and the metadata around its events (see module);
    events of the wrong shape left out, counted in ``malformed``."""
    text, head, start = start_pieces(chunks, coded, malformed)
    builder = ColumnBuilder(coded)
    in_order = _InOrder(workers, builder, text)
    try:
        for piece, between in text.raw_pieces(start):
            in_order.submit(piece, between)
        rest = in_order.finish() + text.buffer
    except BrokenProcessPool:  # a worker was killed (out of memory, most often)
        raise TraceError(
            "a process decoding the trace ended abruptly (out of memory?); "
            "--jobs 1 decodes it in this process alone"
        ) from None
    tail = end_document(head, rest, text)
    del rest
    return builder, builder.take(part for part in (head, tail) if part is not None)


class _InOrder:
    """Pieces sent to the pool, their results taken in the text's order (see module)."""

    def __init__(self, workers: WorkerPool, builder: ColumnBuilder, text: split._Text) -> None:
        self._workers = workers
        self._builder = builder
        self._cut = text  # what decodes a piece of events of the wrong shape, here
        self._selection = builder.codec.selection
        # per piece in flight: its text (or where it lies in the ring), its result to come,
        # what follows it
        self._pending: deque[tuple[bytes | slice, Future[Piece | Packed | Failure], bytes]]
        self._pending = deque()
        self._sent = 0
        self._carry = b""  # text not taken yet: pieces cut inside a value, and what follows
        self._retries = 0

    def submit(self, piece: list[bytes | memoryview], between: bytes) -> None:
        """Send a piece, in parts (and the text before the next one), to a worker; the
        parts are copied before this returns."""
        self._pending.append((*self._send(piece), between))
        while len(self._pending) >= self._workers.slots:
            self._take()

    def _send(
        self, piece: list[bytes | memoryview]
    ) -> tuple[bytes | slice, Future[Piece | Packed | Failure]]:
        """Into the next slot of the ring, which the piece sent ``slots`` pieces ago left
        (``submit`` takes every piece but the last ``slots - 1`` first), where its text
        stays until it is taken; else through the pool's pipe, its text kept here."""
        ring, pool = self._workers.ring, self._workers.pool
        size = sum(map(len, piece)) + 2
        if ring is None or size > self._workers.slot_bytes:
            text = b"".join(piece)
            return text, pool.submit(piece_columns, text, self._selection)
        slot = self._sent % self._workers.slots
        offset = slot * self._workers.slot_bytes
        self._sent += 1
        ring[offset], ring[offset + size - 1] = ord("["), ord("]")
        at = offset + 1
        for part in piece:
            ring[at : at + len(part)] = part
            at += len(part)
        result = pool.submit(ring_columns, offset, size, self._workers.room(slot), self._selection)
        return slice(offset + 1, offset + size - 1), result

    def _text(self, kept: bytes | slice) -> bytes:
        """The text of a piece in flight, wherever it was kept (``_send``)."""
        if isinstance(kept, bytes):
            return kept
        assert self._workers.ring is not None
        return self._workers.ring[kept]

    def _tolerated(self, text: bytes) -> Piece | Failure:
        """The columns of a piece whose events are not all of the right shape, those left
        out and counted (``split._Text.decoded``); ``"cut"`` if it is not a list of events."""
        found = self._cut.decoded(text, 0, len(text))
        if found is None:
            return "cut"
        builder = ColumnBuilder(self._builder.codec)
        builder.add(found[0])
        return builder.piece()

    def finish(self) -> bytes:
        """Take every piece still in flight; the text not taken (empty if all were)."""
        while self._pending:
            self._take()
        return self._carry

    def _take(self) -> None:
        kept, future, between = self._pending.popleft()
        result = future.result()  # BrokenProcessPool if a worker was killed
        if isinstance(result, Packed):  # then its text is in the ring: ``kept`` says where
            assert self._workers.ring is not None and isinstance(kept, slice)
            room = self._workers.room(kept.start // self._workers.slot_bytes)
            with memoryview(self._workers.ring) as ring:
                result = _unpack(result, ring[room])
        joined = self._carry + self._text(kept) if self._carry else None
        if joined is not None:  # the pieces before were cut inside a value: join them to this one
            result = piece_columns(joined, self._selection)
        if result == "shape":  # events of the wrong shape: decoded here, one by one
            result = self._tolerated(joined if joined is not None else self._text(kept))
        if isinstance(result, Piece):
            self._builder.merge(result)
            self._cut.seen = self._builder.counts.events + len(self._cut.malformed)
            self._carry, self._retries = b"", 0
            return
        piece = joined if joined is not None else self._text(kept)
        self._retries += 1
        if self._retries > split._RETRIES or len(piece) > split._MAX_PENDING:
            raise UnsplittableError
        self._carry = piece + between
