"""What validation produces, without torch: the report reads it on any machine.

``Comparison`` (an A/B: correctness, timing, verdict, every raw value), its parts
(``Correctness``, ``Difference``, ``LoopCheck``), ``OperatorTiming`` (one operator timed
alone), and ``CheckResult``: a finding's controlled
check and what it says of the finding's hypothesis (``steptrace investigate``).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Literal

import msgspec

from steptrace.hypotheses.finding import Figure
from steptrace.validate.estimators import Estimate, Interference
from steptrace.validate.stats import SideStats, Verdict
from steptrace.validate.timing import Samples

Unit = Literal["ms/step", "samples/s"]  # as TimingPlan.unit
# What a check says of its finding's hypothesis. Never "confirmed": a check supports a
# hypothesis at the noise it measured, or does not; a trace alone supports nothing.
# "measured": a measurement without an A/B (the operator alone), its figures in ``measured``.
Outcome = Literal["supported", "not-supported", "outputs-differ", "not-testable", "measured"]


class Difference(msgspec.Struct, frozen=True):
    name: str  # output[0], loss, grad:layer.weight, param:layer.weight, ...
    ok: bool
    max_abs: float | None
    max_rel: float | None
    rtol: float | None
    atol: float | None
    note: str | None = None  # a shape, dtype or type mismatch


class Correctness(msgspec.Struct, frozen=True):
    ok: bool
    steps: int  # how many steps each side ran from the same state before comparing
    differences: tuple[Difference, ...]
    start_identical: bool  # the two starting states were equal, bit for bit


class LoopCheck(msgspec.Struct, frozen=True):
    """The whole loop (data included) timed per side, a few times: a local gain may vanish."""

    a_ms: tuple[float, ...]
    b_ms: tuple[float, ...]
    a_median_ms: float
    b_median_ms: float
    ratio: float  # median B / median A


class Comparison(msgspec.Struct, frozen=True, kw_only=True):
    """An A/B outside the profiler: correctness first, then timing, then the verdict.

    ``verdict`` is ``faster``, ``slower``, ``no-detectable-difference``, ``outputs-differ``
    (then no timing ran) or ``too-few-samples`` (the budget fits too few steps);
    ``sentence`` says it in words with its interval. ``samples`` holds every raw step
    time; ``ratio`` and ``ci`` are B/A from ``estimate`` (the estimator that decided),
    ``other_estimate`` is the other one, ``interference`` what the machine added.
    """

    schema: str = "steptrace.compare/3"  # /3: estimators, interference, by design
    verdict: Verdict
    sentence: str
    ratio: float | None  # B / A of the step time (below 1: B is faster)
    ci: tuple[float, float] | None
    p_value: float | None
    estimate: Estimate | None  # the one that decided
    other_estimate: Estimate | None
    interference: Interference | None
    band: float
    unit: Unit
    batch_size: int | None
    baseline: SideStats | None
    candidate: SideStats | None
    correctness: Correctness
    accepted_difference: bool
    by_design: tuple[str, ...]  # what differed between the sides because it was asked for
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
        """Write every figure and raw value to a new file (never overwrites); strict JSON
        (a value that is not a number, such as an infinite spread, is written as null)."""
        target = Path(path)
        with target.open("xb") as handle:
            handle.write(msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n")
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


class CheckResult(msgspec.Struct, frozen=True, kw_only=True):
    """A finding's controlled check, run outside the profiler, and its outcome.

    ``comparison`` holds the A/B's every figure and raw sample (``None`` when the check
    did not run, or is a measurement: then ``measured`` holds its figures); ``instead``
    says what to run by hand when the check is not testable here.
    """

    rule: str  # the finding it answers
    check: str  # the check's name (prepared-batch, inference-mode, ...)
    change: str  # what A and B are, in words
    outcome: Outcome
    sentence: str  # the outcome in words: the measured ratio and CI, or the reason
    instead: str | None = None
    comparison: Comparison | None = None
    measured: tuple[Figure, ...] = ()
    budget_s: float | None = None  # the time this check was allowed (None: did not run)
    elapsed_s: float | None = None  # the time it took, correctness and timing included


class OperatorTiming(msgspec.Struct, frozen=True, kw_only=True):
    """One operator timed alone, and what the trace says of it.

    The trace's figures are over the whole trace: its self time per call, and its calls
    divided by the trace's steps. Alone, the operator runs with warm caches and no
    neighbours, on random values of the recorded shapes and dtypes: its median is what the
    operator itself costs, to set beside what the trace says it cost inside the step.
    """

    operator: str
    device: str
    median_ms: float  # per call, alone (torch.utils.benchmark's blocked_autorange)
    iqr_ms: float
    runs: int  # calls timed
    trace_self_ms_per_call: float
    trace_calls_per_step: float | None  # None: the trace has no steps
    script: str  # the script that was run, to run again or edit
