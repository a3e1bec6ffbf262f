"""The intra-op threads both sides of a CPU comparison run with.

With more intra-op threads than the cores other processes leave free, each parallel
operator ends by waiting for a thread the scheduler put aside: on this project's 2-core
machine with two other processes spinning, both sides of an A/B took one scheduler
quantum per step (16 ms), whatever their work, and ``compare`` read "no detectable
difference" within 99.1-101.0% between a 3.1 ms step and a 1.2 ms one
(``steptrace.process.machine``).
So on the CPU, ``TimingPlan(threads="fit")`` (the default) runs both sides with at most the
free cores' worth of threads (at least one) and says so in ``by_design``; ``"as-is"`` keeps
torch's setting; a number sets it. The user's setting is put back afterwards.
``validate.checks.fewer_threads`` is the A/B of the threads themselves (thread-oversubscription).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import torch

from steptrace.process.machine import CpuLoad, cpu_load

Threads = int | Literal["fit", "as-is"]


@contextmanager
def threads_for(threads: Threads, device: torch.device) -> Iterator[str | None]:
    """Run the body with the threads ``threads`` asks for; yields what was changed, in words
    (None: nothing)."""
    before = torch.get_num_threads()
    chosen, said = _chosen(threads, device, before)
    if chosen != before:
        torch.set_num_threads(chosen)
    try:
        yield said
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def _chosen(threads: Threads, device: torch.device, before: int) -> tuple[int, str | None]:
    if threads == "as-is":
        return before, None
    if isinstance(threads, int):
        if threads < 1:
            raise ValueError(f"TimingPlan(threads={threads}): at least 1 thread")
        changed = threads != before
        return (
            threads,
            f"threads: both sides ran with {threads} (set by the plan)" if changed else None,
        )
    if device.type != "cpu":
        return before, None
    load = cpu_load()
    fitted = load.fitting_threads(before)
    return fitted, None if fitted == before else _fitted_words(fitted, before, load)


def _fitted_words(fitted: int, before: int, load: CpuLoad) -> str:
    return (
        f"threads: both sides ran with {fitted} intra-op thread{'s' * (fitted > 1)}, not "
        f"{before}: {load.cores} cores and {load.others_running} other runnable task(s); "
        "more threads than free cores make each parallel operator wait for a time slice, "
        "and the timing measures the scheduler (TimingPlan(threads='as-is') keeps them)"
    )
