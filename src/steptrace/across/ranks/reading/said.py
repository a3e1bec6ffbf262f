"""What traces say of their job before any is loaded: whether several are one job's ranks.

Contract: ``said_by(locations) -> list[Said | Heard]``, each trace's
``said_of(location)``: the ``distributedInfo`` of a trace file or fsspec URL, found in its
header (the text before ``"traceEvents"``), read forward in 64 KB chunks (gunzipped, every
member, as far as a damaged gzip goes); None when the text has none, ``UNREAD`` when
nothing could be read, or when the block comes only after the events (JSON allows it: the
full load reads it, this read does not place it). Bounds, whatever the file: at most
64 MiB of text is read (``_READ_LIMIT``: the header, the block, then the search for a
block after the events), holding one chunk at a time, and a block is decoded from at most
16 MiB of text (``_BLOCK_LIMIT``); past either, the trace says nothing (None). The traces
are read on threads, at most ``_READERS`` at a time (a URL's read waits on the network).
``not_one_job(said) -> str | None``: why traces that said so many things are not the ranks
of one job, as a line to show; None when each says its rank, no rank twice, one world size
and one backend (said by all or by none) and every rank within the world size. Traces not
read do not count (loading them fails, each in one line, or reads the block they say
after their events). Standard library only (fsspec for URLs): the command line asks
before importing the analysis.
"""

from __future__ import annotations

import contextlib
import json
import re
import stat
import zlib
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Final, Literal, NamedTuple, TypeVar

from steptrace.errors import TraceError
from steptrace.trace.read.remote import fsspec_module, is_url

T = TypeVar("T", int, str)
Heard = Literal["unread"] | None  # a trace that said nothing: ``UNREAD``, or no distributedInfo

_READERS = 16
_CHUNK_BYTES = 64 * 1024
_READ_LIMIT = 64 * 1024 * 1024  # text read at most, header, block and events together
_BLOCK_LIMIT = 16 * 1024 * 1024  # a block's text decoded at most
_KEY = re.compile(rb'"(distributedInfo|traceEvents)"\s{0,64}:')  # the header's end, or the block
_BLOCK = re.compile(rb'"distributedInfo"\s{0,64}:')
_OVERLAP = 128  # bytes kept from one chunk to the next: a key cut between them is found


UNREAD: Final = "unread"  # nothing read (loading will say why), or the block after the events


class Said(NamedTuple):
    """A trace's ``distributedInfo``: its rank, world size and backend (None: not said)."""

    rank: int | None
    world_size: int | None
    backend: str | None


def said_by(locations: Sequence[str]) -> list[Said | Heard]:
    """Each trace's ``distributedInfo``, in the order given (see the module's contract)."""
    if len(locations) < 2:
        return [said_of(where) for where in locations]
    pool = ThreadPoolExecutor(min(_READERS, len(locations)), "steptrace-said")
    try:
        return list(pool.map(said_of, locations))
    finally:  # Ctrl-C: the reads under way are left to end on their own
        pool.shutdown(wait=False, cancel_futures=True)


def said_of(location: str) -> Said | Heard:
    """The ``distributedInfo`` in a trace's header (see the module's contract)."""
    try:
        with _opened(location) as handle:
            text = _Text(_chunks(handle))
            first = text.more()
            return _said_in(text, first) if first else UNREAD
    except (OSError, ValueError, ImportError, TraceError):
        return UNREAD


class _Text:
    """A trace's text, read forward one chunk at a time, ``_READ_LIMIT`` bytes at most."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks, self.read = chunks, 0

    def more(self) -> bytes:
        """The next chunk; b"" at the end of the text or at the limit."""
        chunk = next(self.chunks, b"") if self.read + _CHUNK_BYTES <= _READ_LIMIT else b""
        self.read += len(chunk)
        return chunk

    def find(self, pattern: re.Pattern[bytes], text: bytes) -> re.Match[bytes] | None:
        """The first match of ``pattern`` in ``text`` and the chunks after it (in the window
        it was found in, ``match.string``: one chunk and the end of the one before), or None
        when the text ends first."""
        while (found := pattern.search(text)) is None:
            chunk = self.more()
            if not chunk:
                return None
            text = text[-_OVERLAP:] + chunk
        return found


def _said_in(text: _Text, first: bytes) -> Said | Heard:
    """The block the header holds; UNREAD when it follows the events; None when none does."""
    found = text.find(_KEY, first)
    if found is None:
        return None
    rest = found.string[found.end() :]
    if found.group(1) == b"traceEvents":
        return UNREAD if text.find(_BLOCK, rest) else None
    return _block(text, rest)


def _block(text: _Text, start: bytes) -> Said | None:
    """The block whose text begins ``start``, read on while it is cut (decoded again each
    time its text doubles, from ``_BLOCK_LIMIT`` bytes at most); None when damaged."""
    parts, size, ended = [start], len(start), False
    while True:
        joined = b"".join(parts)
        try:
            block, _ = json.JSONDecoder().raw_decode(joined.decode(errors="replace").lstrip())
            return _said(block)
        except (ValueError, RecursionError):
            if ended or size >= _BLOCK_LIMIT:
                return None  # the whole text was read: a damaged block (or too long)
        parts, goal = [joined], min(max(2 * size, _CHUNK_BYTES), _BLOCK_LIMIT)
        while not ended and size < goal:
            chunk = text.more()
            parts.append(chunk)
            size, ended = size + len(chunk), not chunk


def not_one_job(said: Sequence[Said | Heard]) -> str | None:
    """Why traces whose ``distributedInfo`` are ``said`` are not one job's ranks; None if
    they are (see the module's contract)."""
    heard = [s for s in said if s != UNREAD]
    total = len(heard)
    told = [s for s in heard if s is not None and s.rank is not None]
    if len(told) < total:
        some = "" if not told else f", {total - len(told)} of them"
        return f"{total} traces{some} without rank information (no distributedInfo rank)"
    if not told:
        return None  # none could be read: as a job, each rank's failure is said
    rank, times = Counter(s.rank for s in told).most_common(1)[0]
    if times > 1:
        return f"{total} traces whose ranks repeat (rank {rank} in {times} of them)"
    problem = differing([s.world_size for s in told], "world size") or differing(
        [s.backend for s in told], "backend"
    )
    if problem:
        return f"{total} traces whose {problem}"
    world = told[0].world_size
    beyond = [s.rank for s in told if world is not None and s.rank is not None and s.rank >= world]
    if beyond:
        return f"{total} traces, rank {min(beyond)} beyond their world size {world}"
    return None


def differing(values: Collection[T | None], what: str) -> str | None:
    """``"world sizes [2, 8] differ"`` when ``values`` are not all one; a value said by some
    traces only (None for the others) differs too."""
    told = sorted({v for v in values if v is not None})
    if len(told) > 1:
        return f"{what}s {told} differ"
    unsaid = sum(v is None for v in values)
    if told and unsaid:
        return f"{what} is said by {len(values) - unsaid} of them only"
    return None


def _said(block: object) -> Said | None:
    if not isinstance(block, dict) or not block:
        return None
    backend = block.get("backend")
    return Said(
        rank=_count(block.get("rank")),
        world_size=_count(block.get("world_size")),
        backend=str(backend) if backend is not None else None,
    )


def _count(value: object) -> int | None:
    """A rank or a size as written (``3``, ``3.0``, ``"3"``); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    return value if isinstance(value, int) and value >= 0 else None


def _chunks(handle: IO[bytes]) -> Iterator[bytes]:
    """The trace's text in chunks of ``_CHUNK_BYTES`` at most, gunzipped (every member);
    a gzip cut or damaged further on gives what comes before (a truncated rank still says
    its rank)."""
    raw = handle.read(_CHUNK_BYTES)
    if not raw.startswith(b"\x1f\x8b"):
        while raw:
            yield raw
            raw = handle.read(_CHUNK_BYTES)
        return
    inflater = zlib.decompressobj(wbits=31)
    with contextlib.suppress(zlib.error):  # damaged from here on
        while raw:
            if part := inflater.decompress(raw, _CHUNK_BYTES):
                yield part
            if inflater.eof:  # the next member, if any
                raw, inflater = inflater.unused_data, zlib.decompressobj(wbits=31)
            else:
                raw = inflater.unconsumed_tail
            raw = raw or handle.read(_CHUNK_BYTES)
        if rest := inflater.flush():
            yield rest


def _opened(location: str) -> IO[bytes]:
    """The file opened for reading: a regular local file, or a URL's (``OSError`` if not)."""
    if not is_url(location):
        path = Path(location)
        if not stat.S_ISREG(path.stat().st_mode):  # a pipe would block the read
            raise OSError(f"{location}: not a regular file")
        return path.open("rb")
    fs, where = fsspec_module(location).core.url_to_fs(location)
    if fs.info(where).get("type") != "file":
        raise OSError(f"{location}: not a regular file")
    handle: IO[bytes] = fs.open(where, "rb")
    return handle
