"""Give the memory freed while loading back to the system, where the C library allows it.

Loading builds its columns in many small batches; once they are joined into the table,
glibc's allocator keeps the freed batches in its heap (fragmented between live objects),
so the process's resident memory stays as high as if they were alive. ``malloc_trim(0)``
returns every free page of the heap to the system. Elsewhere (macOS, musl, Windows) this
is a no-op: the figures are then those of the platform's allocator.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from functools import cache

TRIM_ROWS = 1 << 19  # rows from which a table's loading gives memory back (a few ms a time)


@cache
def _trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")  # glibc's name (find_library would run ldconfig)
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    return trim


def release_freed_memory() -> None:
    """Return the free pages of the C heap to the system (glibc); else do nothing."""
    trim = _trim()
    if trim is not None:
        trim(0)
