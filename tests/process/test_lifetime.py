"""Worker processes end with the process that started them and leave Ctrl-C to it, with
real processes (``lifetime``)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from steptrace.process import lifetime
from steptrace.process.lifetime import end_workers, worker_start

_ORPHANING = """
import multiprocessing, os, signal, sys, time
from concurrent.futures import ProcessPoolExecutor
from steptrace.process.lifetime import worker_start
pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context(sys.argv[1]),
                           initializer=worker_start, initargs=(os.getpid(),))
futures = [pool.submit(time.sleep, 60) for _ in range(2)]
time.sleep(1.0)  # both workers started and busy
print(*pool._processes, flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # as the out-of-memory killer would
"""


def _running(pid: int) -> bool:
    """Alive and not a zombie (a container's init may not reap orphans)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_workers_end_when_their_parent_is_killed() -> None:
    for method in ("fork", "forkserver"):
        done = subprocess.run(
            [sys.executable, "-c", _ORPHANING, method],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == -signal.SIGKILL, done.stderr
        workers = [int(pid) for pid in done.stdout.split()]
        assert len(workers) == 2
        deadline = time.monotonic() + 10
        while any(map(_running, workers)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(map(_running, workers)), (method, workers)


def test_workers_leave_ctrl_c_to_their_parent_and_end_at_once_when_asked() -> None:
    context = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(
        1, mp_context=context, initializer=worker_start, initargs=(os.getpid(),)
    )
    assert pool.submit(os.getpid).result() != os.getpid()
    (worker,) = list(pool._processes)
    os.kill(worker, signal.SIGINT)  # what a terminal's Ctrl-C sends the whole group
    assert pool.submit(sum, [1, 2]).result() == 3  # still working: no KeyboardInterrupt
    busy = pool.submit(time.sleep, 60)
    started = time.monotonic()
    end_workers(pool)  # not waiting for the minute of work
    assert time.monotonic() - started < 10 and not _running(worker)
    assert busy.cancelled() or busy.exception() is not None


def _deaf_to_sigterm() -> int:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return os.getpid()


def test_a_worker_that_outlives_sigterm_is_killed_within_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lifetime, "_END_S", 1.0)
    pool = ProcessPoolExecutor(
        1,
        mp_context=multiprocessing.get_context("fork"),
        initializer=worker_start,
        initargs=(os.getpid(),),
    )
    worker = pool.submit(_deaf_to_sigterm).result()
    busy = pool.submit(time.sleep, 60)
    started = time.monotonic()
    end_workers(pool)
    assert time.monotonic() - started < 5  # one second for SIGTERM, then SIGKILL
    assert not _running(worker)
    assert busy.cancelled() or busy.exception() is not None


def test_ctrl_c_while_children_start_is_held_then_raised() -> None:
    """Inside the block a Ctrl-C raises nothing, even with another thread to receive it,
    and a process started there has SIGINT blocked (what a pool's fork server, a Dask
    cluster's workers inherit); it is raised when the block ends, not lost."""
    from steptrace.process.lifetime import starting_children

    idle = threading.Event()
    other = threading.Thread(target=idle.wait, daemon=True)  # another thread SIGINT may reach
    other.start()
    reached_the_end = False
    try:
        with pytest.raises(KeyboardInterrupt), starting_children():
            os.kill(os.getpid(), signal.SIGINT)
            child = subprocess.run(
                [sys.executable, "-c", "print(open('/proc/self/status').read())"],
                capture_output=True,
                text=True,
                check=True,
            )
            time.sleep(0.2)  # time for a signal that was not held to be raised here
            reached_the_end = True
    finally:
        idle.set()
    assert reached_the_end
    blocked = next(line for line in child.stdout.splitlines() if line.startswith("SigBlk:"))
    assert int(blocked.split()[1], 16) & (1 << (signal.SIGINT - 1))


_CTRL_C_AT_START = """
import os, signal, sys
from concurrent import futures
from steptrace.across.ranks.reading.executors import ProcessPool
from steptrace.trace.read import parallel

made = futures.ProcessPoolExecutor

class Interrupted(made):  # Ctrl-C the moment the pool exists, inside starting_children
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)

where = sys.argv[1]
try:
    if where == "ranks":
        import steptrace.across.ranks.reading.executors as executors
        executors.ProcessPoolExecutor = Interrupted
        list(ProcessPool(2).run(abs, [1, 2, 3]))
    else:
        parallel.ProcessPoolExecutor = Interrupted
        with parallel.worker_pool(2):
            pass
except KeyboardInterrupt:
    sys.stdout.flush()
    os._exit(130)  # as steptrace's Ctrl-C leaves: no finalizer runs
os._exit(0)
"""


@pytest.mark.parametrize("where", ["ranks", "trace"])
def test_ctrl_c_while_a_pool_starts_leaves_no_semaphore(where: str) -> None:
    """A Ctrl-C held while a pool starts is raised when the block ends: the pool made by
    then is ended (its queues closed), or the resource tracker warns of leaked
    semaphores after the command's last line (a full suite saw it once)."""
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_AT_START, where],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 130, done.stderr
    assert "leaked" not in done.stderr and "resource_tracker" not in done.stderr, done.stderr


def test_leaving_with_multiprocessing_objects_alive_leaks_no_semaphore() -> None:
    """An interruption's traceback may still hold a pool's queues when the command leaves
    (``os._exit``: no interpreter teardown); their named semaphores are released all the
    same, so that the resource tracker has nothing to warn of once the process is gone.
    Seen once in a full suite: "5 leaked semaphore objects" after a Ctrl-C in a job."""
    code = (
        "import multiprocessing\n"
        "from steptrace.process import ctrl_c\n"
        "context = multiprocessing.get_context('forkserver')\n"
        "alive = context.Queue(), context.Lock()  # a pool's queues, held by a traceback\n"
        "ctrl_c.leave(130)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130
    assert "leaked" not in done.stderr and "resource_tracker" not in done.stderr, done.stderr
