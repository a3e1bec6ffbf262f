"""What traces say of their job before any is loaded: whether several are one job's ranks.

Contract: ``said_by(locations) -> list[Said | Heard]``, each trace's
``said_of(location)``: the ``distributedInfo`` of a trace file or fsspec URL, read from its
first bytes (64 KB, gunzipped, as far as a damaged gzip goes; up to 4 MB when the block is
longer); None when it has none there, ``UNREAD`` when nothing could be read; the
traces are read on threads, at most ``_READERS`` at a time (a URL's read waits on the network).
``not_one_job(said) -> str | None``: why traces that said so many things are not the ranks
of one job, as a line to show; None when each says its rank, no rank twice, one world size
and one backend (said by all or by none) and every rank within the world size. Traces not
read do not count (loading them fails either way, each in one line). Standard
library only (fsspec for URLs): the command line asks before importing the analysis.
"""

from __future__ import annotations

import json
import re
import stat
import zlib
from collections import Counter
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Final, Literal, NamedTuple, TypeVar

from steptrace.errors import TraceError
from steptrace.trace.read.remote import fsspec_module, is_url

T = TypeVar("T", int, str)
Heard = Literal["unread"] | None  # a trace that said nothing: ``UNREAD``, or no distributedInfo

_READERS = 16
_HEAD_BYTES = (64 * 1024, 4 * 1024 * 1024)  # the second only when the block is cut
_CHUNK_BYTES = 64 * 1024
_BLOCK = re.compile(rb'"distributedInfo"\s*:\s*')


UNREAD: Final = "unread"  # nothing could be read: loading the trace will say why


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
    """The ``distributedInfo`` at the head of a trace (see the module's contract)."""
    for size in _HEAD_BYTES:
        head = _head(location, size)
        if not head:
            return UNREAD
        found = _BLOCK.search(head)
        if found is None:
            return None
        try:
            block, _ = json.JSONDecoder().raw_decode(head[found.end() :].decode(errors="replace"))
        except (ValueError, RecursionError):
            if len(head) < size:
                return None  # the whole text was read: a damaged block
            continue  # cut by the head's end: a longer head
        return _said(block)
    return None


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


def _head(location: str, size: int) -> bytes:
    """The first ``size`` bytes of the trace, gunzipped, as far as they can be; b"" when
    nothing can be read."""
    try:
        with _opened(location) as handle:
            head = handle.read(size)
            return _gunzipped(handle, head, size) if head.startswith(b"\x1f\x8b") else head
    except (OSError, ValueError, ImportError, TraceError):
        return b""


def _gunzipped(handle: IO[bytes], raw: bytes, size: int) -> bytes:
    """The first ``size`` bytes of the gzip text that starts with ``raw``; a file cut or
    damaged further on gives what comes before (a truncated rank still says its rank)."""
    inflater = zlib.decompressobj(wbits=31)
    parts, got = [], 0
    try:
        while raw and got < size and not inflater.eof:
            part = inflater.decompress(raw, size - got)
            parts.append(part)
            got += len(part)
            raw = handle.read(_CHUNK_BYTES)
    except zlib.error:
        pass  # damaged from here on
    return b"".join(parts)


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
