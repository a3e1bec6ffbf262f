"""How much text a trace may hold: limits checked while it is read, before memory is taken.

- ``text_limit()``: the most text (gunzipped bytes) one trace may hold: ``--max-bytes``
  (the environment's ``STEPTRACE_MAX_BYTES``, which worker processes inherit), else the
  memory this process can still use (``available_bytes``): streamed, a trace's columns
  take about a quarter of its text, so that leaves room for the analysis.
- ``whole_limit()``: the most text read whole into memory (a small file read ahead, a text
  that cannot be cut between events and is decoded exactly: some four times its size), a
  quarter of the text limit.
- ``PENDING_BYTES``: text held while looking for the end of an event; more without one is
  no trace's (a string, a number list or blank space that long) and is refused.
- ``available_bytes()``: what the system has available (``MemAvailable``), within this
  process's address-space limit (``RLIMIT_AS``, less what it maps already) and its
  cgroup's (``memory.max`` less ``memory.current``); None where none is known.

Each limit is refused in one line naming the file, the size and how to raise it.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

MAX_BYTES_ENV = "STEPTRACE_MAX_BYTES"
PENDING_BYTES = 64 << 20
# Gunzipped text per compressed byte past which a gzip is a bomb, not a trace: real traces
# gunzip to 5 to 30 times their size (the shared ones: 13 to 30); a run of tiny events
# repeated (millions of the same event, each a row) to hundreds of times. Judged once the
# text passes PENDING_BYTES, so that a small file is never refused for its ratio.
BOMB_RATIO = 100
_WHOLE_SHARE = 4
_CGROUP = Path("/sys/fs/cgroup")
# a run of PENDING_BYTES without a quote, from the start or a quote: one regular
# expression's scan, each byte looked at about once
_QUOTELESS = re.compile(rb'(?:\A|")[^"]{%d}' % PENDING_BYTES)


class TextOverflow(ValueError):  # noqa: N818 (what the text does)
    """More than ``PENDING_BYTES`` of text without the end of an event: one string, number
    list or run of blank space longer than any trace's. Refused, never held."""

    def __init__(self) -> None:
        super().__init__(
            f"more than {PENDING_BYTES >> 20} MB of text without the end of an event (one "
            "string, list or blank space that long): not a trace"
        )


@contextlib.contextmanager
def max_bytes_set(max_bytes: int | None) -> Iterator[None]:
    """``--max-bytes`` for the block (None: as it was), in the environment, which worker
    processes inherit."""
    saved = os.environ.get(MAX_BYTES_ENV)
    if max_bytes is not None:
        os.environ[MAX_BYTES_ENV] = str(max_bytes)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(MAX_BYTES_ENV, None)
        else:
            os.environ[MAX_BYTES_ENV] = saved


def bomb_ratio(path: object, text_bytes: int, compressed_bytes: int) -> str | None:
    """The refusal of a gzip whose text passed ``BOMB_RATIO`` times what was read of it,
    in one line; None while it has not."""
    if text_bytes <= PENDING_BYTES or text_bytes <= BOMB_RATIO * compressed_bytes:
        return None
    return (
        f"{path}: {text_bytes:,} bytes of text from {compressed_bytes:,} compressed: more "
        f"than {BOMB_RATIO} times, what only a compressed bomb holds (traces gunzip to 5 to "
        "30 times their size)"
    )


def text_limit() -> int | None:
    """The most text a trace may hold (None: no limit known)."""
    given = os.environ.get(MAX_BYTES_ENV, "").strip()
    if given.isdigit():
        return int(given)
    return available_bytes()


def whole_limit() -> int | None:
    """The most text read whole into memory."""
    limit = text_limit()
    return None if limit is None else limit // _WHOLE_SHARE


def why_limited() -> str:
    """What sets the limits, in words, for a refusal."""
    if os.environ.get(MAX_BYTES_ENV, "").strip().isdigit():
        return f"--max-bytes {os.environ[MAX_BYTES_ENV].strip()}"
    return "the memory available; --max-bytes sets another limit"


def quoteless_run(run: int, chunk: bytes) -> int:
    """The bytes since the last quote once ``chunk`` follows a text that ended ``run`` bytes
    after its last one; ``TextOverflow`` past ``PENDING_BYTES`` (chunks are smaller: a run
    that long crosses a chunk's end)."""
    first = chunk.find(b'"')
    if first < 0:
        run += len(chunk)
    elif run + first > PENDING_BYTES:
        raise TextOverflow
    else:
        run = len(chunk) - chunk.rfind(b'"') - 1
    if run > PENDING_BYTES:
        raise TextOverflow
    return run


def too_long_without_quote(text: bytes | bytearray | memoryview) -> bool:
    """Whether ``text`` holds ``PENDING_BYTES`` without a quote: one string (or number list,
    or blank space) longer than any trace's."""
    return len(text) >= PENDING_BYTES and _QUOTELESS.search(text) is not None


def available_bytes() -> int | None:
    """The memory this process can still take (see the module's docstring)."""
    found = [b for b in (_meminfo(), _address_space(), _cgroup()) if b is not None]
    return max(min(found), 0) if found else None


def _meminfo() -> int | None:
    try:
        with Path("/proc/meminfo").open() as lines:
            for line in lines:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _address_space() -> int | None:
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        mapped = int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        mapped = 0
    return soft - mapped


def _cgroup() -> int | None:
    try:
        most = (_CGROUP / "memory.max").read_text().strip()
        used = (_CGROUP / "memory.current").read_text().strip()
    except OSError:
        return None
    if not most.isdigit() or not used.isdigit():
        return None  # "max": no limit
    return int(most) - int(used)
