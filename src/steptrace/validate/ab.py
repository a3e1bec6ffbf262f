"""``compare``: is B faster than A, outside the profiler, from the same state, and correct?

1. Same start: ``make_state()`` is called once; A and B each get a deep copy of it (model,
   optimizer and the rest), and the same RNG seed before they run. ``make_state_b``,
   ``batches_b`` and ``loop_batches_b`` give B its own (another optimizer flag, pinned
   batches, a loader with workers): the result lists what differed by design.
2. Correctness first: each side runs ``check_steps`` steps on its batches; outputs,
   gradients, parameters and buffers are compared with dtype tolerances. A mismatch is
   the verdict (``outputs-differ``, saying by how much and what to try) unless
   ``accept_difference=True``.
3. Timing: fresh copies, warm-up kept apart, A and B interleaved in randomized blocks,
   synchronized at step boundaries only, within the time budget (an upper bound).
4. Statistics: raw values, median, IQR, min, max per side; the ratio B/A with its CI from
   the estimator that fits the noise (``estimators``: the medians on a quiet machine, the
   blocks' fastest steps under interference); a paired rank test; the verdict in words.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec
import numpy as np
import torch

from steptrace.errors import CaptureError
from steptrace.validate.agreement import check_both, guarded
from steptrace.validate.correctness import explain, flatten
from steptrace.validate.estimators import MIN_PAIRS, Interference, decide
from steptrace.validate.results import Comparison, LoopCheck
from steptrace.validate.sides import by_design, checked_batches, checked_state, copies
from steptrace.validate.stats import SideStats, sentence, summarize, verdict
from steptrace.validate.timing import (
    CheckPlan,
    Clock,
    Instruments,
    Samples,
    Sides,
    Step,
    Sync,
    TimingPlan,
    run_blocks,
)


def compare(
    baseline: Step,
    candidate: Step,
    *,
    make_state: Callable[[], Mapping[str, Any]],
    batches: Sequence[Any],
    device: str | torch.device = "cpu",
    check: CheckPlan | None = None,
    plan: TimingPlan | None = None,
    loop_batches: Callable[[], Iterable[Any]] | None = None,
    instruments: Instruments | None = None,
    make_state_b: Callable[[], Mapping[str, Any]] | None = None,
    batches_b: Sequence[Any] | None = None,
    loop_batches_b: Callable[[], Iterable[Any]] | None = None,
    **legacy: Any,
) -> Comparison:
    """Compare two step functions ``step(state, batch) -> outputs`` from the same state.

    ``check`` says how correctness is checked first, ``plan`` how the steps are timed and
    in which unit; ``loop_batches`` also times the whole loop. ``make_state_b``,
    ``batches_b`` and ``loop_batches_b`` give B its own state, batches or loop (the
    result's ``by_design`` lists what differed). The keyword arguments of earlier
    versions (``rtol=``, ``unit=``, ``seed=``, ``clock=``, ...) still work.
    """
    check, plan, instruments = _plans(check, plan, instruments, legacy)
    target = torch.device(device)
    sync = instruments.synchronize or _synchronizer(target)
    origin_a = checked_state(make_state, "A", "make_state")
    origin_b = None if make_state_b is None else checked_state(make_state_b, "B", "make_state_b")
    feeds = (
        checked_batches(batches, "A", "batches"),
        checked_batches(batches if batches_b is None else batches_b, "B", "batches_b"),
    )
    loops = (loop_batches, loop_batches_b or loop_batches)
    designed = by_design(origin_a, origin_b, batches_b is not None, loops)
    origins = (origin_a, origin_a if origin_b is None else origin_b)
    correctness, pair_s = check_both(
        (baseline, candidate), origins, feeds, check, seed=plan.seed, clock=instruments.clock,
        synchronize=sync,
    )  # fmt: skip
    untimed = Comparison(
        verdict="outputs-differ", sentence=explain(correctness), ratio=None, ci=None,
        p_value=None, estimate=None, other_estimate=None, interference=None, band=plan.band,
        unit=plan.unit, batch_size=plan.batch_size or _batch_size(feeds[0][0]), baseline=None,
        candidate=None, correctness=correctness, accepted_difference=not correctness.ok,
        by_design=designed, noise_warning=None, samples=None, loop=None, device=str(target),
    )  # fmt: skip
    if not correctness.ok and not check.accept_difference:
        return untimed
    state_a, state_b = copies(origins[0], "A"), copies(origins[1], "B")
    step_a, step_b = guarded(baseline, "A", "while timed"), guarded(candidate, "B", "while timed")
    sides = Sides(lambda x: step_a(state_a, x), lambda x: step_b(state_b, x), *feeds)
    samples = run_blocks(
        sides, plan, clock=instruments.clock, synchronize=sync, pair_s=pair_s,
        before_block=instruments.before_block or (lambda side: None),
    )  # fmt: skip
    loop = _loop((baseline, candidate), origins, loops, plan, instruments.clock, sync)
    if len(samples.order) < MIN_PAIRS:
        too_few = _too_few(plan, pair_s, samples)
        return msgspec.structs.replace(
            untimed, verdict="too-few-samples", sentence=too_few, samples=samples, loop=loop
        )
    if min(min(samples.a), min(samples.b)) <= 0:
        raise CaptureError("the clock is too coarse for these steps: a step took 0 ms")
    deciding, other, measured = decide(samples.a, samples.b, samples.block_steps)
    outcome = verdict(deciding, plan.band)
    a_stats, b_stats = summarize(samples.a), summarize(samples.b)
    return msgspec.structs.replace(
        untimed, verdict=outcome, sentence=sentence(outcome, deciding, plan.band, plan.unit),
        ratio=deciding.ratio, ci=deciding.ci, p_value=deciding.p_value, estimate=deciding,
        other_estimate=other, interference=measured, baseline=a_stats, candidate=b_stats,
        noise_warning=_noise(a_stats, b_stats, measured), samples=samples, loop=loop,
    )  # fmt: skip


# The keyword arguments of earlier versions, and where each one now lives.
_LEGACY = {
    "check_steps": ("check", "steps"), "rtol": ("check", "rtol"), "atol": ("check", "atol"),
    "accept_difference": ("check", "accept_difference"), "unit": ("plan", "unit"),
    "batch_size": ("plan", "batch_size"), "band": ("plan", "band"), "seed": ("plan", "seed"),
    "loop_repeats": ("plan", "loop_repeats"), "clock": ("instruments", "clock"),
    "synchronize": ("instruments", "synchronize"),
}  # fmt: skip


def _plans(
    check: CheckPlan | None,
    plan: TimingPlan | None,
    instruments: Instruments | None,
    legacy: dict[str, Any],
) -> tuple[CheckPlan, TimingPlan, Instruments]:
    """The three values, with the keyword arguments of earlier versions applied to them."""
    unknown = sorted(set(legacy) - set(_LEGACY))
    if unknown:
        raise TypeError(f"compare() got unexpected keyword argument(s): {', '.join(unknown)}")
    changes: dict[str, dict[str, Any]] = {"check": {}, "plan": {}, "instruments": {}}
    for name, value in legacy.items():
        where, field = _LEGACY[name]
        changes[where][field] = value
    return (
        msgspec.structs.replace(check or CheckPlan(), **changes["check"]),
        msgspec.structs.replace(plan or TimingPlan(), **changes["plan"]),
        msgspec.structs.replace(instruments or Instruments(), **changes["instruments"]),
    )


def _synchronizer(device: torch.device) -> Sync:
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def _batch_size(batch: Any) -> int | None:
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


def _too_few(plan: TimingPlan, pair_s: float, samples: Samples) -> str:
    needed = (1 + MIN_PAIRS) * pair_s
    blocks = len(samples.order)
    warm_s = (sum(samples.warmup_a) + sum(samples.warmup_b)) / 1000
    ran = f"only {blocks} block(s) ran" if blocks else "nothing was timed"
    if warm_s > plan.budget_s / 2:
        ran += f"; the warm-up alone took {warm_s:.1f} s"
    return (
        f"No verdict: a step of A and one of B take about {1000 * pair_s:.0f} ms together, "
        f"and a budget of {plan.budget_s:g} s fits fewer than the {MIN_PAIRS} blocks (and the "
        f"warm-up) a confidence interval needs ({ran}); allow at least "
        f"{max(needed, warm_s + needed):.1f} s (TimingPlan(budget_s=...), --budget)."
    )


def _loop(
    steps: tuple[Step, Step],
    origins: tuple[Mapping[str, Any], Mapping[str, Any]],
    loops: tuple[Callable[[], Iterable[Any]] | None, Callable[[], Iterable[Any]] | None],
    plan: TimingPlan,
    clock: Clock,
    sync: Sync,
) -> LoopCheck | None:
    """The whole loop (data included) per side, a few times, in a random order."""
    if loops[0] is None and loops[1] is None:
        return None
    coin = np.random.default_rng(plan.seed + 1)
    times: dict[str, list[float]] = {"A": [], "B": []}
    sides = list(zip("AB", steps, origins, loops, strict=True))
    for _ in range(plan.loop_repeats):
        for name, step, origin, loop in sides if coin.integers(2) else reversed(sides):
            if loop is None:
                raise CaptureError(f"{name}: a whole loop needs loop_batches for both sides")
            state = copies(origin, name)
            run = guarded(step, name, "in the whole loop")
            sync()
            start = clock()
            for batch in loop():
                run(state, batch)
            sync()
            times[name].append((clock() - start) * 1000)
    a_median, b_median = float(np.median(times["A"])), float(np.median(times["B"]))
    return LoopCheck(tuple(times["A"]), tuple(times["B"]), a_median, b_median, b_median / a_median)
