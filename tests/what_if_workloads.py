"""A CPU step with a planted region on its critical path and one off it, for the live
what-if tests.

``step(state, batch)``: ``compute`` (one product of known size and a pause: the step's own
work), then ``planted`` (a pause of ``PLANTED_S`` on the step's thread: on the path), and
hands ``side`` work (a sum and a pause) to a helper thread it never waits for (off the
path; work that held the GIL there would slow the step's thread, which no trace shows).
``without_planted`` and ``without_side`` are the same step with that region removed.
Pauses keep the profiler's per-operator cost a small part of the step.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

import torch
from torch.profiler import record_function

PLANTED_S = 0.020
COMPUTE_S = 0.030
SIDE_S = 0.025
SIZE = 128

_jobs: queue.Queue[torch.Tensor] = queue.Queue()
_started = threading.Event()


def _side_worker() -> None:
    while True:
        x = _jobs.get()
        with record_function("side"):
            x.sum()  # the GIL released at once: a side thread holding it would slow the step
            time.sleep(SIDE_S)


def _ensure_worker() -> None:
    if not _started.is_set():
        _started.set()
        threading.Thread(target=_side_worker, name="side-worker", daemon=True).start()


def make_state() -> dict[str, Any]:
    _ensure_worker()
    torch.manual_seed(0)
    return {"model": torch.nn.Linear(SIZE, SIZE, bias=False)}


def make_batches() -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return [torch.randn(SIZE, SIZE, generator=generator) for _ in range(4)]


def _step(state: dict[str, Any], batch: torch.Tensor, planted: bool, side: bool) -> torch.Tensor:
    with record_function("compute"):
        with torch.no_grad():
            out: torch.Tensor = state["model"](batch)
        time.sleep(COMPUTE_S)
    if planted:
        with record_function("planted"):
            time.sleep(PLANTED_S)
    if side:
        _jobs.put(batch)
    return out


def step(state: dict[str, Any], batch: torch.Tensor) -> torch.Tensor:
    return _step(state, batch, planted=True, side=True)


def without_planted(state: dict[str, Any], batch: torch.Tensor) -> torch.Tensor:
    return _step(state, batch, planted=False, side=True)


def without_side(state: dict[str, Any], batch: torch.Tensor) -> torch.Tensor:
    return _step(state, batch, planted=True, side=False)
