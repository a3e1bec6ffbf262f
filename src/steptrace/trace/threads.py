"""Independent numpy work on a large table shared with a second thread.

numpy releases the GIL inside its loops (gathers, sorts, ufuncs), so a helper thread keeps
the second core busy while the calling thread does other work: building the table, half
of its columns are put in order by the helper. One helper, not a pool: each thread that
allocates gets its own glibc arena, whose freed memory is kept, and the temporaries of
parts run side by side add up, so every extra thread adds to the peak memory (measuring
the table runs on one thread for that reason: ``analysis.compose``). Below ``LARGE_ROWS``
the helper is the calling thread itself: the gain would not pay for it, and small traces
are analysed side by side in processes already.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

LARGE_ROWS = 1 << 20  # events from which a helper thread takes part of the work
P = ParamSpec("P")
T = TypeVar("T")


class _Inline(Executor):
    """An executor that runs each call at once, in the calling thread."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        done: Future[T] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except Exception as error:  # raised by result(), as the helper thread's would be
            done.set_exception(error)
        return done


@contextmanager
def helper_for(rows: int) -> Iterator[Executor]:
    """A helper thread for a table of ``rows`` events from ``LARGE_ROWS`` on, else the
    calling thread; leaving the block waits for what was submitted."""
    if rows < LARGE_ROWS:
        yield _Inline()
        return
    with ThreadPoolExecutor(1, thread_name_prefix="steptrace-helper") as helper:
        yield helper
