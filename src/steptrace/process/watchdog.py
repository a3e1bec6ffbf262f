"""A deadline for work that may never end: a user's step, a connection never answered.

``watchdog(seconds)``: within the block, ``Overrun`` is raised in the main thread
``seconds`` from now (``SIGALRM``), wherever it is: inside a step that sleeps or loops for
ever, the step ends there (``validate.agreement.guarded`` names the side and the step); a
Dask scheduler's address where nothing answers ends in one line
(``across.ranks.executors``). Python runs signal handlers between bytecodes: a single long
native call (one huge matrix product) ends first. Outside the main thread, or where there
is no ``SIGALRM``, there is no watchdog (a comparison's budget still sizes its blocks).
Watchdogs do not nest: an inner one stops the outer one's timer, and gives it back, less
the time spent, on leaving.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType


class Overrun(BaseException):
    """The deadline passed (a ``BaseException``: the user's ``except Exception`` cannot
    swallow it)."""


@contextlib.contextmanager
def watchdog(seconds: float) -> Iterator[None]:
    """``Overrun`` in this thread once ``seconds`` have passed (see the module's docstring)."""
    alarm = getattr(signal, "SIGALRM", None)
    if alarm is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    outer, _ = signal.setitimer(signal.ITIMER_REAL, 0)
    previous = signal.signal(alarm, _overrun)
    began = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(alarm, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - began), 1e-3))


def _overrun(number: int, frame: FrameType | None) -> None:
    raise Overrun
