"""Kineto's ``USDT: ... profiler_start`` / ``profiler_stop`` lines, kept off stderr.

Kineto writes a line such as ``USDT:2026-12-01 23:07:14 20289:20289
SyncActivityProfilerHandler.cpp:52] profiler_start`` to file descriptor 2 (from C++, past
Python's ``sys.stderr``) each time the profiler starts or stops recording. Its only switch,
``KINETO_LOG_LEVEL``, would hide its errors with them (USDT is its highest level, above
ERROR), so instead ``without_usdt_lines()`` sends fd 2 to a temporary file for the duration
of the call that starts or stops recording, then writes everything back to the real fd 2
except those lines: any other output (a warning, an error, another thread's line in that
moment) still reaches stderr, in its order, once the call returns. A temporary file, not a
pipe: nothing can block however much the call writes. When fd 2 cannot be duplicated (it
is closed), the call runs as it is.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

USDT_LINE = re.compile(rb"^USDT:[^\n]*\] profiler_(?:start|stop)\s*$")


def kept_lines(text: bytes) -> bytes:
    """``text`` without kineto's profiler start and stop lines."""
    return b"".join(line for line in text.splitlines(keepends=True) if not USDT_LINE.match(line))


@contextlib.contextmanager
def without_usdt_lines(fd: int = 2) -> Iterator[None]:
    """Run the block with kineto's USDT start/stop lines filtered out of ``fd``."""
    _flush()
    try:
        saved = os.dup(fd)
    except OSError:  # fd 2 closed: nothing to filter
        yield
        return
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), fd)
        try:
            yield
        finally:
            _flush()
            os.dup2(saved, fd)
            os.close(saved)
            caught.seek(0)
            rest = kept_lines(caught.read())
            if rest:
                os.write(fd, rest)


def _flush() -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.flush()
