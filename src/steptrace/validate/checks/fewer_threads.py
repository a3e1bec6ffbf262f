"""``fewer_threads_check`` (thread-oversubscription): the step with torch's intra-op threads
as set (A) against as many as the cores other processes leave free (B).

Both sides run the same step on copies of the same state; only ``torch.set_num_threads``
differs, set before each side's blocks, outside the timed steps. Unlike every other
comparison, the wall clock times it and the threads are not fitted
(``TimingPlan(threads="as-is")``): waiting for a CPU is what is measured here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import msgspec
import torch

from steptrace.errors import NotTestable
from steptrace.process.machine import cpu_load
from steptrace.validate.ab import compare
from steptrace.validate.checks.factory import said, strict
from steptrace.validate.inputs import Batch, MakeState, Step
from steptrace.validate.results import Comparison
from steptrace.validate.timing import CheckPlan, Instruments, TimingPlan


def fewer_threads_check(
    step: Step,
    *,
    make_state: MakeState,
    batches: Sequence[Batch],
    device: str | torch.device = "cpu",
    check: CheckPlan | None = None,
    plan: TimingPlan | None = None,
    instruments: Instruments | None = None,
) -> Comparison:
    """The step with torch's intra-op threads as set (A) against as many as the cores other
    processes leave free now (B), on the wall clock: the wait for a CPU is the point here.

    The threads are set before each side's blocks, outside the timed steps; the
    correctness steps run with A's (the same maths, whatever the threads, on one side).
    """
    threads = torch.get_num_threads()
    load = cpu_load()
    fewer = load.fitting_threads(threads)
    if fewer >= threads:
        raise NotTestable(
            f"torch's {threads} intra-op thread(s) fit the {load.free_cores} free core(s) now "
            f"({load.cores} cores, {load.others_running} other runnable task(s)): nothing "
            "fewer to try",
            "time the step with torch.set_num_threads(N) for a few N while the machine is as "
            "loaded as when the trace was taken (steptrace compare)",
        )

    def set_threads(side: str) -> None:
        torch.set_num_threads(threads if side == "A" else fewer)

    given = instruments or Instruments()
    hooked = msgspec.structs.replace(
        given, before_block=set_threads, clock=given.clock or time.perf_counter
    )
    try:
        result = compare(
            step,
            step,
            make_state=make_state,
            batches=batches,
            device=device,
            check=strict(check, "fewer_threads_check"),
            plan=msgspec.structs.replace(plan or TimingPlan(), threads="as-is"),
            instruments=hooked,
        )
    finally:
        torch.set_num_threads(threads)
    return said(
        result,
        f"threads: A with torch's {threads} intra-op threads, B with {fewer} ({load.cores} "
        f"cores, {load.others_running} other runnable task(s) when the check began); timed "
        "on the wall clock, the wait for a CPU included",
    )
