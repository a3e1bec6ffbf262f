"""The profiler's cost, measured as ``compare`` measures a change (``measure_overhead``).

After the window, the same steps run in pairs of blocks, one with ``torch.profiler``
recording (a fresh session with the window's options, started before the block and
stopped after it, both outside the timed steps) and one bare, in a seeded random order.
Each pair gives the log-ratio of its blocks' median steps; the ratio profiled/bare is
their Hodges–Lehmann estimate with the signed-rank CI (``steptrace.paired``). Steps are
timed on the running clock on the CPU (``steptrace.process.clocks``: another process's turns
left out), synchronized at step boundaries on a GPU.

Measured before this way, three profiled steps against three bare ones taken afterwards
gave 5.59×, 1.82× and 0.93× for the same workload in three runs: whatever changed between
the two moments (another process, the caches) was read as the profiler's cost.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
from torch.profiler import profile

from steptrace import devices
from steptrace.paired import MIN_PAIRS, paired_ratio
from steptrace.process.clocks import RunningClock
from steptrace.process.quiet import without_usdt_lines
from steptrace.scenario import ProfilerCost
from steptrace.window import Window

PAIRS = 8  # pairs of blocks (6 at least give a 95% CI)
BLOCK_STEPS = 2  # steps per block
LONG_STEP_S = 0.25  # from this step time on, blocks of one step and the fewest pairs


def profiler_cost(
    run_step: Callable[[], object], window: Window, device: torch.device, *, seed: int = 0
) -> ProfilerCost:
    """``run_step()`` (one step on the next batch) in interleaved profiled and bare blocks."""
    clock = RunningClock() if device.type == "cpu" else time.perf_counter
    first = _timed(run_step, 1, device, clock)[0]  # sizes the blocks (and warms up)
    long = first / 1000 >= LONG_STEP_S
    block, pairs = (1, MIN_PAIRS) if long else (BLOCK_STEPS, PAIRS)
    coin = np.random.default_rng(seed)
    timed: dict[str, list[float]] = {"P": [], "B": []}
    order = []
    for _ in range(pairs):
        sides = "PB" if coin.integers(2) else "BP"
        for side in sides:
            session = _started(window, device) if side == "P" else None
            timed[side] += _timed(run_step, block, device, clock)
            if session is not None:
                with without_usdt_lines():
                    session.stop()
        order.append(sides)
    logs = [
        np.log(statistics.median(p) / statistics.median(b))
        for p, b in zip(_blocks(timed["P"], block), _blocks(timed["B"], block), strict=True)
    ]
    found = paired_ratio(logs)
    return ProfilerCost(
        ratio=found.ratio,
        ci=found.ci,
        confidence=found.confidence,
        block_steps=block,
        order=tuple(order),
        profiled_ms=tuple(timed["P"]),
        bare_ms=tuple(timed["B"]),
    )


def _started(window: Window, device: torch.device) -> profile:
    session = profile(
        activities=devices.activities(device),
        record_shapes=window.record_shapes,
        profile_memory=window.profile_memory,
        with_stack=window.with_stack,
        with_flops=window.with_flops,
    )
    with without_usdt_lines():  # kineto's start and stop lines (steptrace.process.quiet)
        session.start()
    return session


def _timed(
    run_step: Callable[[], object], count: int, device: torch.device, clock: Callable[[], float]
) -> list[float]:
    times = []
    for _ in range(count):
        devices.synchronize(device)
        began = clock()
        run_step()
        devices.synchronize(device)
        times.append((clock() - began) * 1000)
    return times


def _blocks(values: list[float], size: int) -> list[list[float]]:
    return [values[k : k + size] for k in range(0, len(values), size)]
