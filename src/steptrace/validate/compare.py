"""``compare``: is B faster than A, outside the profiler, from the same state, and correct?

1. Same start: ``make_state()`` is called once; A and B each get a deep copy of it (model,
   optimizer and the rest), and the same RNG seed before they run.
2. Correctness first: each side runs ``check_steps`` steps on the same batches; outputs,
   gradients, parameters and buffers are compared with dtype tolerances. A mismatch is
   the verdict (``outputs-differ``) unless ``accept_difference=True``.
3. Timing: fresh copies, warm-up kept apart, A and B interleaved in randomized blocks,
   synchronized at step boundaries only, until the ratio is known precisely enough.
4. Statistics: raw values, median, IQR, min, max per side; the ratio B/A with a bootstrap
   CI; a paired rank test; a noise warning; the verdict in words.
"""

from __future__ import annotations

import copy
import csv
import json
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import msgspec
import numpy as np
import torch

from steptrace.errors import CaptureError
from steptrace.validate.correctness import (
    Correctness,
    Difference,
    compare_values,
    flatten,
    same_start,
    snapshot,
)
from steptrace.validate.stats import (
    SideStats,
    Verdict,
    ratio_stats,
    sentence,
    summarize,
    verdict,
)
from steptrace.validate.timing import (
    CheckPlan,
    Clock,
    Instruments,
    Samples,
    Step,
    Sync,
    TimingPlan,
    run_blocks,
)

Unit = Literal["ms/step", "samples/s"]  # as TimingPlan.unit


class LoopCheck(msgspec.Struct, frozen=True):
    """The whole loop (data included) timed per side, a few times: a local gain may vanish."""

    a_ms: tuple[float, ...]
    b_ms: tuple[float, ...]
    a_median_ms: float
    b_median_ms: float
    ratio: float  # median B / median A


class Comparison(msgspec.Struct, frozen=True, kw_only=True):
    """An A/B outside the profiler: correctness first, then timing, then the verdict.

    ``verdict`` is ``faster``, ``slower``, ``no-detectable-difference`` or
    ``outputs-differ`` (then no timing ran); ``sentence`` says it in words with its
    interval. ``samples`` holds every raw step time; ``ratio`` and ``ci`` are B/A.
    """

    schema: str = "steptrace.compare/2"  # /2: the whole-loop medians in ``loop``
    verdict: Verdict
    sentence: str
    ratio: float | None  # median B / median A of the step time (below 1: B is faster)
    ci: tuple[float, float] | None
    p_value: float | None
    band: float
    unit: Unit
    batch_size: int | None
    baseline: SideStats | None
    candidate: SideStats | None
    correctness: Correctness
    accepted_difference: bool
    noise_warning: str | None
    samples: Samples | None  # every raw value, ms per step
    loop: LoopCheck | None
    device: str

    def throughput(self, side: Literal["baseline", "candidate"]) -> float | None:
        """Samples per second from the median step time (needs ``batch_size``)."""
        stats = self.baseline if side == "baseline" else self.candidate
        if stats is None or not self.batch_size:
            return None
        return self.batch_size / (stats.median / 1000)

    def write_json(self, path: str | Path) -> Path:
        """Write every figure and raw value to a new file (never overwrites)."""
        target = Path(path)
        with target.open("x", encoding="utf-8") as handle:
            handle.write(json.dumps(msgspec.to_builtins(self), indent=2) + "\n")
        return target

    def write_csv(self, path: str | Path) -> Path:
        """Raw values, one row per timed step: side, phase, index, ms (never overwrites)."""
        target = Path(path)
        with target.open("x", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["side", "phase", "index", "ms"])
            if self.samples is not None:
                for side, phase, values in (
                    ("A", "warmup", self.samples.warmup_a), ("B", "warmup", self.samples.warmup_b),
                    ("A", "steady", self.samples.a), ("B", "steady", self.samples.b),
                ):  # fmt: skip
                    writer.writerows((side, phase, i, v) for i, v in enumerate(values))
            if self.loop is not None:
                writer.writerows(("A", "loop", i, v) for i, v in enumerate(self.loop.a_ms))
                writer.writerows(("B", "loop", i, v) for i, v in enumerate(self.loop.b_ms))
        return target


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
    **legacy: Any,
) -> Comparison:
    """Compare two step functions ``step(state, batch) -> outputs`` from the same state.

    ``check`` says how correctness is checked first, ``plan`` how the steps are timed and
    in which unit; ``loop_batches`` also times the whole loop. The keyword arguments of
    earlier versions (``rtol=``, ``unit=``, ``seed=``, ``clock=``, ...) still work.
    """
    check, plan, instruments = _plans(check, plan, instruments, legacy)
    if not batches:
        raise CaptureError("compare needs at least one batch")
    target = torch.device(device)
    sync = instruments.synchronize or _synchronizer(target)
    origin = make_state()
    if "model" not in origin:
        raise CaptureError("make_state() must return a mapping with a 'model'")
    correctness = _check(baseline, candidate, origin, batches, check, plan.seed)
    size = plan.batch_size or _batch_size(batches[0])
    band, unit, seed = plan.band, plan.unit, plan.seed
    if not correctness.ok and not check.accept_difference:
        return Comparison(
            verdict="outputs-differ", sentence=sentence("outputs-differ", None, band),
            ratio=None, ci=None, p_value=None, band=band, unit=unit, batch_size=size,
            baseline=None, candidate=None, correctness=correctness, accepted_difference=False,
            noise_warning=None, samples=None, loop=None, device=str(target),
        )  # fmt: skip
    state_a, state_b = _copies(origin, seed)
    samples = run_blocks(
        lambda batch: baseline(state_a, batch),
        lambda batch: candidate(state_b, batch),
        batches,
        plan,
        clock=instruments.clock,
        synchronize=sync,
    )
    if min(np.median(samples.a), np.median(samples.b)) <= 0:
        raise CaptureError("the clock is too coarse for these steps: median step time is 0")
    ratio = ratio_stats(samples.a, samples.b, block=plan.block_steps, seed=seed)
    outcome = verdict(ratio, band)
    a_stats, b_stats = summarize(samples.a), summarize(samples.b)
    loop = (
        _loop(baseline, candidate, origin, loop_batches, plan, instruments.clock, sync)
        if loop_batches is not None
        else None
    )
    return Comparison(
        verdict=outcome, sentence=sentence(outcome, ratio, band, unit), ratio=ratio.ratio,
        ci=ratio.ci, p_value=ratio.p_value, band=band, unit=unit, batch_size=size,
        baseline=a_stats, candidate=b_stats, correctness=correctness,
        accepted_difference=not correctness.ok, noise_warning=_noise(a_stats, b_stats),
        samples=samples, loop=loop, device=str(target),
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


def _check(
    baseline: Step,
    candidate: Step,
    origin: Mapping[str, Any],
    batches: Sequence[Any],
    check: CheckPlan,
    seed: int,
) -> Correctness:
    state_a, state_b = _copies(origin, seed)
    identical = same_start(state_a, state_b)
    outputs = []
    with _rng_kept():
        for step, state in ((baseline, state_a), (candidate, state_b)):
            _seed_everything(seed)
            results: dict[str, Any] = {}
            for i in range(check.steps):  # batches copied per side: a step may change them in place
                returned = step(state, copy.deepcopy(batches[i % len(batches)]))
                results |= {n: _kept(v) for n, v in flatten(returned, f"step{i}.output")}
            outputs.append((results, snapshot(state)))
    (results_a, after_a), (results_b, after_b) = outputs
    rtol, atol = check.rtol, check.atol
    differences = [
        _pair(name, results_a, results_b, rtol, atol)
        for name in [*results_a, *(n for n in results_b if n not in results_a)]
    ]
    differences += [
        _pair(name, after_a, after_b, rtol, atol)
        for name in sorted(after_a.keys() | after_b.keys())
    ]
    ok = identical and all(d.ok for d in differences)
    return Correctness(
        ok=ok, steps=check.steps, differences=tuple(differences), start_identical=identical
    )


def _pair(
    name: str, a: Mapping[str, Any], b: Mapping[str, Any], rtol: float | None, atol: float | None
) -> Difference:
    """Compare by name: a value on one side only is a difference, never silently dropped."""
    if name not in a or name not in b:
        side = "A" if name in a else "B"
        return Difference(name, False, None, None, rtol, atol, f"only {side} returns it")
    return compare_values(name, a[name], b[name], rtol, atol)


def _kept(value: Any) -> Any:
    """A copy of an output as it is now (a later in-place change must not alter it)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value.copy())
    return copy.deepcopy(value)


@contextmanager
def _rng_kept() -> Iterator[None]:
    """Seed freely inside, and give the caller back the RNG states they had."""
    states = (torch.get_rng_state(), random.getstate(), np.random.get_state())
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        torch.set_rng_state(states[0])
        random.setstate(states[1])
        np.random.set_state(states[2])
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def _copies(origin: Mapping[str, Any], seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two deep copies of the starting state (the optimizer keeps pointing at its copy)."""
    try:
        return copy.deepcopy(dict(origin)), copy.deepcopy(dict(origin))
    except (TypeError, RuntimeError, copy.Error) as exc:
        raise CaptureError(f"the state from make_state() cannot be copied ({exc})") from None


def _seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


def _synchronizer(device: torch.device) -> Sync:
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def _batch_size(batch: Any) -> int | None:
    first = next((v for _, v in flatten(batch, "batch") if isinstance(v, torch.Tensor)), None)
    return int(first.shape[0]) if first is not None and first.dim() > 0 else None


def _noise(a: SideStats, b: SideStats) -> str | None:
    worst = max(a, b, key=lambda s: s.spread)
    if worst.noise == "ok":
        return None
    level = (
        "very noisy (IQR > 25% of the median)"
        if worst.noise == "gross"
        else "noisy (IQR > 10% of the median)"
    )
    return f"the timings are {level}: the verdict is less reliable; close other work and repeat"


def _loop(
    baseline: Step,
    candidate: Step,
    origin: Mapping[str, Any],
    loop_batches: Callable[[], Iterable[Any]],
    plan: TimingPlan,
    clock: Clock,
    sync: Sync,
) -> LoopCheck:
    coin = np.random.default_rng(plan.seed + 1)
    times: dict[str, list[float]] = {"A": [], "B": []}
    for _ in range(plan.loop_repeats):
        sides = [("A", baseline), ("B", candidate)]
        for name, step in sides if coin.integers(2) else reversed(sides):
            state = copy.deepcopy(dict(origin))
            sync()
            start = clock()
            for batch in loop_batches():
                step(state, batch)
            sync()
            times[name].append((clock() - start) * 1000)
    a_median, b_median = float(np.median(times["A"])), float(np.median(times["B"]))
    return LoopCheck(tuple(times["A"]), tuple(times["B"]), a_median, b_median, b_median / a_median)
