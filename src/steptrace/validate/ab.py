"""``compare``: is B faster than A, outside the profiler, from the same state, and correct?

1. Same start: ``make_state()`` is called once; A and B each get a deep copy of it (model,
   optimizer and the rest), and the same RNG seed before they run. ``CandidateInputs``
   gives B its own state, batches or whole loop (another optimizer flag, pinned batches,
   a loader with workers): the result lists what differed by design.
2. Correctness first: each side runs ``CheckPlan.steps`` steps on its batches; outputs,
   gradients, parameters and buffers are compared with dtype tolerances. A mismatch is
   the result (``OutputsDiffer``, saying by how much and what to try) unless
   ``CheckPlan(accept_difference=True)``.
3. Timing: fresh copies, warm-up kept apart, A and B interleaved in randomized blocks,
   synchronized at step boundaries only, within the time budget (an upper bound).
4. Statistics: raw values, median, IQR, min, max per side; the ratio B/A with its CI from
   the estimator that fits the noise (``estimators``: the medians on a quiet machine, the
   blocks' fastest steps under interference); a paired rank test; the verdict in words.
   The result's type is its verdict (``steptrace.validate.results``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import msgspec
import numpy as np
import torch

from steptrace.errors import CaptureError
from steptrace.paired import MIN_PAIRS
from steptrace.process.clocks import RunningClock, wall_of
from steptrace.process.watchdog import Overrun, watchdog
from steptrace.validate.agreement import check_both, guarded
from steptrace.validate.correctness import explain, flatten
from steptrace.validate.estimators import Interference, decide
from steptrace.validate.inputs import Batch, CandidateInputs, MakeLoop, MakeState, Step
from steptrace.validate.results import (
    TIMED,
    Comparison,
    Correctness,
    LoopCheck,
    OutputsDiffer,
    TooFewSamples,
)
from steptrace.validate.sides import Start, copies, start
from steptrace.validate.stats import SideStats, sentence, summarize, verdict
from steptrace.validate.threads import threads_for
from steptrace.validate.timing import (
    BeforeBlock,
    CheckPlan,
    Clock,
    Instruments,
    Samples,
    Sides,
    Sync,
    TimingPlan,
    run_blocks,
)

GRACE = 0.25  # the watchdog's share of the budget beyond it


def compare(
    baseline: Step,
    candidate: Step,
    *,
    make_state: MakeState,
    batches: Sequence[Batch],
    device: str | torch.device = "cpu",
    check: CheckPlan | None = None,
    plan: TimingPlan | None = None,
    instruments: Instruments | None = None,
    loop_batches: MakeLoop | None = None,
    candidate_inputs: CandidateInputs | None = None,
) -> Comparison:
    """Compare two step functions ``step(state, batch) -> outputs`` from the same state.

    ``check`` says how correctness is checked first, ``plan`` how the steps are timed and
    in which unit, ``instruments`` the clock and synchronizer; ``loop_batches`` also times
    the whole loop. ``candidate_inputs`` gives B its own state, batches or loop (the
    result's ``by_design`` lists what differed).
    """
    check, plan = check or CheckPlan(), plan or TimingPlan()
    instruments = instruments or Instruments()
    steps = (baseline, candidate)
    inputs = (make_state, batches, loop_batches, candidate_inputs or CandidateInputs())
    target = torch.device(device)
    try:
        with watchdog(deadline_s(plan.budget_s)), threads_for(plan.threads, target) as threads:
            return _compared(steps, inputs, target, (check, plan, threads), instruments)
    except Overrun:  # between two steps: the steps themselves name the side (``guarded``)
        raise CaptureError(
            f"the comparison outlived its budget ({plan.budget_s:g} s) and was stopped"
        ) from None


def deadline_s(budget_s: float) -> float:
    """When the watchdog stops a comparison: past its budget, with some grace (the blocks
    are sized to end within the budget; what runs past it is a step that hangs)."""
    return budget_s * (1 + GRACE) + 1.0


def _compared(
    steps: tuple[Step, Step],
    inputs: tuple[MakeState, Sequence[Batch], MakeLoop | None, CandidateInputs],
    target: torch.device,
    plans: tuple[CheckPlan, TimingPlan, str | None],
    instruments: Instruments,
) -> Comparison:
    """``compare``'s work, its correctness steps counted inside the budget; ``plans``: the
    correctness and timing plans and what was said of the threads (None: left as set)."""
    check, plan, threads_said = plans
    clock = instruments.clock or _clock(target)
    wall = wall_of(clock)  # the budget is wall time
    began = wall()
    sync = instruments.synchronize or _synchronizer(target)
    begun = start(*inputs)
    correctness, pair_s = check_both(
        steps,
        begun.origins,
        begun.feeds,
        check,
        seed=plan.seed,
        clock=clock,
        synchronize=sync,
    )
    designed = (*begun.by_design, *([threads_said] if threads_said else []))
    said = _Said(correctness, designed, str(target))
    if not correctness.ok and not check.accept_difference:
        return OutputsDiffer(
            sentence=explain(correctness),
            correctness=correctness,
            by_design=said.by_design,
            device=said.device,
        )
    spent_s = wall() - began
    timing = msgspec.structs.replace(plan, budget_s=max(plan.budget_s - spent_s, 0.0))
    samples = _timed_blocks(steps, begun, timing, (clock, sync, instruments.before_block), pair_s)
    loop = _loop(steps, begun, plan, clock, sync)
    said = said._replace(by_design=(*said.by_design, *_waited(clock, samples)))
    if len(samples.order) < MIN_PAIRS:
        return TooFewSamples(
            sentence=_too_few(plan, pair_s, samples, spent_s),
            correctness=correctness,
            by_design=said.by_design,
            device=said.device,
            accepted_difference=not correctness.ok,
            samples=samples,
            loop=loop,
        )
    if min(min(samples.a), min(samples.b)) <= 0:
        raise CaptureError("the clock is too coarse for these steps: a step took 0 ms")
    return _verdict(samples, loop, plan, said, plan.batch_size or _batch_size(begun.feeds[0][0]))


class _Said(NamedTuple):
    """What every result says, whatever the timing: correctness, design, device."""

    correctness: Correctness
    by_design: tuple[str, ...]
    device: str


def _timed_blocks(
    steps: tuple[Step, Step],
    begun: Start,
    plan: TimingPlan,
    how: tuple[Clock, Sync, BeforeBlock | None],
    pair_s: float,
) -> Samples:
    """Both sides timed in interleaved blocks, each on fresh copies of its start; ``how``:
    the clock, the synchronizer and the hook before each block."""
    state_a, state_b = copies(begun.origins[0], "A"), copies(begun.origins[1], "B")
    step_a, step_b = guarded(steps[0], "A", "while timed"), guarded(steps[1], "B", "while timed")
    sides = Sides(lambda x: step_a(state_a, x), lambda x: step_b(state_b, x), *begun.feeds)
    clock, sync, before_block = how
    return run_blocks(
        sides,
        plan,
        clock=clock,
        synchronize=sync,
        pair_s=pair_s,
        before_block=before_block or (lambda side: None),
    )


def _verdict(
    samples: Samples, loop: LoopCheck | None, plan: TimingPlan, said: _Said, batch_size: int | None
) -> Comparison:
    """The verdict from the raw samples: the deciding estimate, both sides' summaries."""
    deciding, other, measured = decide(samples.a, samples.b, samples.block_steps)
    outcome = verdict(deciding, plan.band)
    a_stats, b_stats = summarize(samples.a), summarize(samples.b)
    return TIMED[outcome](
        sentence=sentence(outcome, deciding, plan.band, plan.unit),
        correctness=said.correctness,
        by_design=said.by_design,
        device=said.device,
        accepted_difference=not said.correctness.ok,
        samples=samples,
        loop=loop,
        ratio=deciding.ratio,
        ci=deciding.ci,
        p_value=deciding.p_value,
        estimate=deciding,
        other_estimate=other,
        interference=measured,
        band=plan.band,
        unit=plan.unit,
        batch_size=batch_size,
        baseline=a_stats,
        candidate=b_stats,
        noise_warning=_noise(a_stats, b_stats, measured),
    )


def _clock(device: torch.device) -> Clock:
    """The wall clock; on the CPU, less the time this thread waited for a CPU."""
    return RunningClock() if device.type == "cpu" else time.perf_counter


def _waited(clock: Clock, samples: Samples) -> list[str]:
    """What the clock removed from the timed steps, in words, when it is worth saying."""
    waited_s = clock.waited_s if isinstance(clock, RunningClock) else 0.0
    timed_s = (sum(samples.a) + sum(samples.b)) / 1000
    if waited_s <= 0.01 * (timed_s + waited_s):
        return []
    return [
        f"clock: {waited_s:.2f} s of waiting for a CPU (other processes running) left out of "
        f"the {timed_s + waited_s:.1f} s of timing: each step's time is the wall clock less "
        "the time its thread waited in the scheduler's queue (steptrace.process.clocks)"
    ]


def _synchronizer(device: torch.device) -> Sync:
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def _batch_size(batch: Batch) -> int | None:
    first = next((v for _, v in flatten(batch, "batch") if isinstance(v, torch.Tensor)), None)
    return int(first.shape[0]) if first is not None and first.dim() > 0 else None


def _noise(a: SideStats, b: SideStats, measured: Interference) -> str | None:
    worst = max(a, b, key=lambda s: s.spread)
    if measured.detected:
        return (
            f"{measured.sentence()}: the verdict comes from the blocks' fastest steps, which "
            "interference cannot make faster; closing other work would narrow the interval"
        )
    if worst.noise == "ok":
        return None
    level = (
        "very noisy (IQR > 25% of the median)"
        if worst.noise == "gross"
        else "noisy (IQR > 10% of the median)"
    )
    return f"the timings are {level}: the verdict is less reliable; close other work and repeat"


def _too_few(plan: TimingPlan, pair_s: float, samples: Samples, spent_s: float) -> str:
    pairs = len(samples.warmup_a) + len(samples.a)  # a loaded machine: slower than the first
    if pairs and samples.elapsed_s / pairs > pair_s:
        pair_s = samples.elapsed_s / pairs
    needed = spent_s + (1 + MIN_PAIRS) * pair_s  # the correctness steps count in the budget
    blocks = len(samples.order)
    warm_s = (sum(samples.warmup_a) + sum(samples.warmup_b)) / 1000
    ran = f"only {blocks} block(s) ran" if blocks else "nothing was timed"
    if warm_s > plan.budget_s / 2:
        ran += f"; the warm-up alone took {warm_s:.1f} s"
    return (
        f"No verdict: a step of A and one of B take about {1000 * pair_s:.0f} ms together, "
        f"and a budget of {plan.budget_s:g} s fits fewer than the {MIN_PAIRS} blocks (and the "
        f"warm-up) a confidence interval needs after the correctness steps ({spent_s:.1f} s; "
        f"{ran}); allow at least "
        f"{max(needed, warm_s + needed):.1f} s (TimingPlan(budget_s=...), --budget)."
    )


def _loop(
    steps: tuple[Step, Step], begun: Start, plan: TimingPlan, clock: Clock, sync: Sync
) -> LoopCheck | None:
    """The whole loop (data included) per side, a few times, in a random order."""
    if begun.loops[0] is None and begun.loops[1] is None:
        return None
    coin = np.random.default_rng(plan.seed + 1)
    times: dict[str, list[float]] = {"A": [], "B": []}
    sides = list(zip("AB", steps, begun.origins, begun.loops, strict=True))
    for _ in range(plan.loop_repeats):
        for name, step, origin, loop in sides if coin.integers(2) else reversed(sides):
            if loop is None:
                raise CaptureError(f"{name}: a whole loop needs loop_batches for both sides")
            state = copies(origin, name)
            run = guarded(step, name, "in the whole loop")
            sync()
            began = clock()
            for batch in loop():
                run(state, batch)
            sync()
            times[name].append((clock() - began) * 1000)
    a_median, b_median = float(np.median(times["A"])), float(np.median(times["B"]))
    return LoopCheck(tuple(times["A"]), tuple(times["B"]), a_median, b_median, b_median / a_median)
