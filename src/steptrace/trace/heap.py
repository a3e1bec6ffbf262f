"""Give the memory freed while loading back to the system, where the C library allows it.

Loading builds its columns in many small batches; once they are joined into the table,
glibc's allocator keeps the freed batches in its heap (fragmented between live objects),
so the process's resident memory stays as high as if they were alive. ``malloc_trim(0)``
returns every free page of the heap to the system. Elsewhere (macOS, musl, Windows) this
is a no-op: the figures are then those of the platform's allocator.

Measuring a large table, glibc's mmap threshold rises with every large temporary freed
(up to 32 MB), so that later ones come from the heap, where what is freed stays resident
until the next trim: ``bound_heap`` fixes the threshold (numpy's temporaries of a large
table are then mapped and unmapped, given back as they are freed), and the analysis trims
after each figure and each part the figures share
(``analysis.context.TraceContext``). On the 8x replica of the largest shared trace
(432 MB) the peak went from 280 to about 250 MB; on a small table mapping every large
temporary costs a third more time, so it is done only for large ones.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from functools import cache
from typing import cast

TRIM_ROWS = 1 << 19  # rows from which a table's loading gives memory back (a few ms a time)


_M_MMAP_THRESHOLD = -3  # mallopt's parameter (malloc.h)
_MAPPED_BYTES = 256 * 1024  # blocks from this size are mapped, whatever was freed before


@cache
def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")  # glibc's name (find_library would run ldconfig)
        libc.malloc_trim, libc.mallopt  # noqa: B018 (both exist: glibc)
    except (OSError, AttributeError):  # not glibc
        return None
    return libc


def _trim() -> Callable[[int], int] | None:
    libc = _glibc()
    return None if libc is None else cast(Callable[[int], int], libc.malloc_trim)


@cache
def bound_heap() -> None:
    """From now on, blocks of ``_MAPPED_BYTES`` or more are mapped (glibc); else nothing.
    For the rest of the process: once is enough."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, _MAPPED_BYTES)


def release_freed_memory() -> None:
    """Return the free pages of the C heap to the system (glibc); else do nothing."""
    trim = _trim()
    if trim is not None:
        trim(0)
