"""The user's code, run by ``profile``, ``investigate`` and ``compare``, kept from the
tool's own output and exit.

``running_user_code(what)`` wraps the block that imports and runs the user's modules:

- what they print goes to stderr: Python's ``print`` and anything written to file
  descriptor 1 (C++, a child process), so that stdout holds the report alone;
- ``sys.exit()``, ``os._exit()`` (called in this process; a forked child, a DataLoader
  worker, still exits as it asks) or an exception that is not an ``Exception`` (a
  ``GeneratorExit``...) become a one-line ``CaptureError`` saying ``what`` stopped and why:
  never the tool's own exit, with code 0 and no report. Ctrl-C stays Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import NoReturn

from steptrace.errors import CaptureError, UserExit, ended_by


@contextlib.contextmanager
def running_user_code(what: str) -> Iterator[None]:
    """Run the block as the user's code (see the module's docstring); ``what``: the work
    named in the error (``the comparison``)."""
    try:
        with _prints_to_stderr(), _exit_refused():
            yield
    except (KeyboardInterrupt, Exception):
        raise
    except BaseException as error:  # sys.exit, os._exit, GeneratorExit...: one line
        raise CaptureError(f"{what} stopped: the user's code {ended_by(error)}") from None


@contextlib.contextmanager
def _prints_to_stderr() -> Iterator[None]:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # fd 1 or 2 closed: Python's stdout alone is redirected
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


@contextlib.contextmanager
def _exit_refused() -> Iterator[None]:
    real, here = os._exit, os.getpid()

    def refused(status: int) -> NoReturn:
        if os.getpid() != here:  # a forked child: its exit is its own
            real(status)
        raise UserExit(f"os._exit({status!r})")

    os._exit = refused
    try:
        yield
    finally:
        os._exit = real
