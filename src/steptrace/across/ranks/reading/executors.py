"""Where the per-rank work runs: this process, a local process pool, or a Dask cluster.

Contract: an ``Executor`` runs ``work(item)`` once per item and yields ``(index, result)``
as each one finishes, in no particular order; when the machinery fails for one item (its
worker process killed, a Dask worker lost) that item's exception is yielded in place of
its result, never raised, so that the other items are kept. Only results cross process
boundaries: the work receives an item (a location) and returns what it returns.

``executor(jobs, scheduler)`` picks one:

- no scheduler, ``jobs`` 1: ``InProcess``, the work called here, one item after another
  (no pool, no pickling);
- no scheduler, ``jobs`` > 1: ``ProcessPool``, ``jobs`` worker processes, each working on
  one item at a time, so that peak memory is about ``jobs`` times one item's plus this
  process; they leave Ctrl-C to this process and end with it (``lifetime``);
- ``scheduler`` ``"local"``: a Dask ``LocalCluster`` of ``jobs`` single-threaded worker
  processes, started here and stopped when done;
- any other ``scheduler``: the address of a running Dask scheduler (``tcp://host:8786``);
  its workers must import steptrace and read the items' locations.

Dask (``pip install 'steptrace[dask]'``) is imported only for a scheduler; without it, or
when the scheduler cannot be reached, a one-line ``TraceError``.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import socket
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import ExitStack
from typing import Any, Protocol, TypeVar

from steptrace.errors import TraceError
from steptrace.process.lifetime import end_workers, starting_children, worker_start
from steptrace.process.watchdog import Overrun, watchdog

T = TypeVar("T")
Outcome = tuple[int, Any]  # (index of the item, its result or the exception in its place)
_PRELOAD = [
    "steptrace.across.ranks.reading.work"
]  # imported once by the fork server, not per worker
_CONNECT_S = 10
_WORKERS_S = 60


class Executor(Protocol):
    def run(self, work: Callable[[str], T], items: Sequence[str]) -> Iterator[Outcome]:
        """``(index, work(items[index]) or the exception in its place)``, as each finishes."""
        ...


class InProcess:
    """The work called in this process, one item after another."""

    def run(self, work: Callable[[str], T], items: Sequence[str]) -> Iterator[Outcome]:
        for index, item in enumerate(items):
            yield index, work(item)


class ProcessPool:
    """``jobs`` local worker processes (fork server where there is one, else spawn)."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs

    def run(self, work: Callable[[str], T], items: Sequence[str]) -> Iterator[Outcome]:
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        if "forkserver" in methods:
            context.set_forkserver_preload(_PRELOAD)
        workers = max(1, min(self.jobs, len(items)))
        pool: ProcessPoolExecutor | None = None
        try:
            # the workers start with the first submissions; a Ctrl-C meanwhile is raised
            # as the block ends, the pool made: ended below, its queues closed
            with starting_children():
                pool = ProcessPoolExecutor(
                    max_workers=workers,
                    mp_context=context,
                    initializer=worker_start,
                    initargs=(os.getpid(),),
                )
                pending: dict[Future[T], int] = {
                    pool.submit(work, item): k for k, item in enumerate(items)
                }
            for done in as_completed(pending):
                index = pending.pop(done)  # the future goes with its result: nothing piles up
                try:
                    yield index, done.result()
                except Exception as error:  # a killed worker breaks the pool: each item says so
                    yield index, error
        except BaseException:  # Ctrl-C, or the caller gone: not waiting for the items running
            if pool is not None:
                end_workers(pool)
            raise
        pool.shutdown(wait=True)


class DaskCluster:
    """A Dask distributed cluster: a ``LocalCluster`` (``"local"``) or a scheduler's address."""

    def __init__(self, scheduler: str, jobs: int) -> None:
        self.scheduler = scheduler
        self.jobs = jobs

    def run(self, work: Callable[[str], T], items: Sequence[str]) -> Iterator[Outcome]:
        distributed = _dask(self.scheduler)
        with ExitStack() as stack:
            client = self._client(distributed, stack, len(items))
            futures = client.map(work, list(items), pure=False)
            index = {f.key: k for k, f in enumerate(futures)}
            finished = distributed.as_completed(futures, loop=client.loop)
            del futures  # as_completed holds each until it is handed out
            for future in finished:
                try:
                    result = future.result()
                except Exception as error:  # KilledWorker, a lost connection: this item only
                    yield index[future.key], error
                else:
                    yield index[future.key], result
                future.release()

    def _client(self, distributed: Any, stack: ExitStack, items: int) -> Any:
        """The client, closed by ``stack`` (and the local cluster after it). A local cluster
        has no more workers than items; a remote one must have a worker within
        ``_WORKERS_S`` (the tasks would wait for one, silently, for ever)."""
        try:
            if self.scheduler == "local":
                with warnings.catch_warnings(), starting_children():
                    warnings.simplefilter("ignore")  # "port 8787 in use": no dashboard starts
                    cluster = stack.enter_context(
                        distributed.LocalCluster(
                            n_workers=max(1, min(self.jobs, items)),
                            threads_per_worker=1,
                            processes=True,
                            dashboard_address=None,
                            silence_logs=logging.ERROR,
                        )
                    )
                return stack.enter_context(distributed.Client(cluster, set_as_default=False))
            _reachable(distributed, self.scheduler)
            with watchdog(_CONNECT_S + 5):  # a listener that never answers the handshake
                client = distributed.Client(
                    self.scheduler, timeout=_CONNECT_S, set_as_default=False
                )
            stack.enter_context(client)
        except Overrun:
            raise TraceError(
                f"Dask scheduler {self.scheduler}: cannot connect (no answer within "
                f"{_CONNECT_S + 5} s: is it a Dask scheduler?)"
            ) from None
        except (OSError, TimeoutError, ValueError) as error:
            text = " ".join(str(error).split()) or type(error).__name__
            raise TraceError(f"Dask scheduler {self.scheduler}: cannot connect ({text})") from None
        try:
            client.wait_for_workers(1, timeout=_WORKERS_S)
        except TimeoutError:
            raise TraceError(
                f"Dask scheduler {self.scheduler}: no worker joined it within {_WORKERS_S} s "
                f"(start workers with: dask worker {self.scheduler})"
            ) from None
        return client


def _reachable(distributed: Any, scheduler: str) -> None:
    """A TCP scheduler's port tried once first: a refused or unknown address fails at once
    (``Client`` retries a refused connection until its timeout, 10 s of silence); other
    transports (``tls://``, ``ucx://``) are left to ``Client``. Raises ``OSError``."""
    transport, location = distributed.comm.parse_address(scheduler)
    if transport != "tcp":
        return
    host, port = distributed.comm.parse_host_port(location)
    socket.create_connection((host, port), timeout=_CONNECT_S).close()


def executor(jobs: int, scheduler: str | None = None) -> Executor:
    """The executor for ``jobs`` workers, on ``scheduler`` when one is named."""
    if scheduler:
        return DaskCluster(scheduler, jobs)
    return ProcessPool(jobs) if jobs > 1 else InProcess()


def _dask(scheduler: str) -> Any:
    try:
        import distributed
    except ImportError:
        raise TraceError(
            f"a Dask scheduler ({scheduler}) needs Dask: pip install 'steptrace[dask]'"
        ) from None
    return distributed
