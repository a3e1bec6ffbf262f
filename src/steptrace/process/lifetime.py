"""Worker processes that end with the process that started them, and leave Ctrl-C to it.

``worker_start(parent)`` is a process pool's initializer (``initargs=(os.getpid(),)``):
the worker ignores SIGINT (a terminal's Ctrl-C reaches every process of its group: the
parent handles it and ends the pool, instead of a traceback from each worker) and watches
``parent`` from a daemon thread, exiting within ``_WATCH_S`` once it is gone (or a zombie
that its own parent has not reaped yet). A parent killed by SIGTERM, SIGKILL (the
out-of-memory killer) or SIGHUP (a closed terminal) runs no clean-up of its own: without
the watch, its workers (children of a fork server, whose own parent-death signal would not
reach them) wait on their pipes for ever, holding a rank's memory each.
``end_workers(pool)`` ends a pool's processes at once (Ctrl-C: not waiting for the items
running). ``starting_children()`` wraps a pool's creation and first submissions: the
processes started in it (the fork server, the resource tracker, the workers) begin with
SIGINT blocked, so that a Ctrl-C that reaches them before ``worker_start`` runs (a fork
server still importing its preloaded modules) prints no traceback of theirs.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

_WATCH_S = 0.5
_END_S = 5.0  # the longest end_workers waits on one process, then on the pool


def worker_start(parent: int) -> None:
    """A pool worker's set-up (see the module's docstring)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch = threading.Thread(target=_exit_after, args=(parent,), name="steptrace-parent")
    watch.daemon = True
    watch.start()


@contextmanager
def starting_children(forked: bool = False) -> Iterator[None]:
    """Processes started in the block begin with SIGINT blocked (a signal mask is inherited
    across fork and exec), and a Ctrl-C in the block is raised here once it ends: never
    while a child is half started (one whose parent is gone dies in a traceback).

    ``forked``: only forked workers start in the block. Their pool's semaphores are
    unlinked at once, and nothing else of theirs needs multiprocessing's resource tracker, so
    it is not started: an interpreter of its own (20 ms of CPU), beside the first pieces'
    decoding on two cores."""
    if threading.current_thread() is not threading.main_thread():
        yield  # another thread's children: its caller's to handle
        return
    from multiprocessing import resource_tracker

    if not forked:  # started first: starting it unblocks SIGINT in the thread that spawns it
        resource_tracker.ensure_running()
    caught: list[int] = []
    handler = signal.signal(signal.SIGINT, lambda number, frame: caught.append(number))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, handler)
    if caught and callable(handler):  # Python's own, or the command's (``ctrl_c``)
        handler(signal.SIGINT, None)


def _exit_after(parent: int) -> None:
    while _alive(parent):
        time.sleep(_WATCH_S)
    os._exit(1)  # no clean-up left to do: the parent that wanted the results is gone


def _alive(pid: int) -> bool:
    """The process runs: it exists, is ours, and is not a zombie (dead, not yet reaped)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or the pid reused by another user
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (macOS): existing is all that can be told
        return True
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def end_workers(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's processes now, then let it go (its items are dropped). Each
    wait is bounded (``_END_S``): a worker that outlives SIGTERM is killed, and a pool
    whose manager thread does not end is left to the process's exit, so that Ctrl-C never
    waits on a stuck pool (one run in a full test suite once hung there, silently)."""
    processes = dict(getattr(pool, "_processes", None) or {})  # before shutdown forgets them
    for process in processes.values():
        process.terminate()
    for process in processes.values():
        process.join(_END_S)
        if process.is_alive():
            process.kill()
            process.join(_END_S)
    manager = getattr(pool, "_executor_manager_thread", None)  # before shutdown forgets it
    pool.shutdown(wait=False, cancel_futures=True)
    if manager is not None:
        manager.join(_END_S)  # its queues closed: nothing said leaked
