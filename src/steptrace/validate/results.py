"""What validation produces, without torch: the report reads it on any machine.

``Comparison`` (an A/B: correctness, timing, verdict, every raw value) is one of five
results, by verdict: ``Faster``, ``Slower`` and ``NoDetectableDifference`` (``Timed``:
every timing figure present), ``OutputsDiffer`` (no timing ran) and ``TooFewSamples``
(the raw samples, no estimate). In JSON they are one object whose ``verdict`` says which.
Their parts (``Correctness``, ``Difference``, ``LoopCheck``), ``OperatorTiming`` (one
operator timed alone), ``OperatorShare`` (operators timed alone against the step) and
``CheckResult``: a finding's controlled check and what it says
of the finding's hypothesis (``steptrace investigate``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar, Literal, TypeAlias

import msgspec

from steptrace.hypotheses.finding import Figure
from steptrace.process.outputs import write_new
from steptrace.validate.estimators import Estimate, Interference
from steptrace.validate.stats import SideStats, Verdict
from steptrace.validate.timing import Samples

COMPARE_SCHEMA = "steptrace.compare/4"  # /4: one shape per verdict, no null timing figure
TimingUnit = Literal["ms/step", "samples/s"]  # as TimingPlan.unit
Row = tuple[str, str, int, float]  # side, phase, index, ms: one line of ``write_csv``
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


class _Compared(msgspec.Struct, frozen=True, kw_only=True, tag_field="verdict"):
    """What every comparison holds, whatever its verdict (the JSON tag ``verdict``)."""

    verdict: ClassVar[Verdict]
    schema: str = COMPARE_SCHEMA
    sentence: str  # the verdict in words, with its interval or what to try
    correctness: Correctness
    by_design: tuple[str, ...]  # what differed between the sides because it was asked for
    device: str

    def write_json(self, path: str | Path) -> Path:
        """Write every figure and raw value to a new file (never overwrites; whole or not at
        all: ``outputs``); strict JSON
        (a value that is not a number, such as an infinite spread, is written as null)."""
        data = msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n"
        return write_new(Path(path), data)

    def write_csv(self, path: str | Path) -> Path:
        """Raw values, one row per timed step: side, phase, index, ms (never overwrites)."""
        text = io.StringIO(newline="")
        writer = csv.writer(text)
        writer.writerow(["side", "phase", "index", "ms"])
        writer.writerows(self.rows())
        return write_new(Path(path), text.getvalue().encode())

    def rows(self) -> Iterable[Row]:
        """Every raw ms (none: no timing ran)."""
        return ()


class OutputsDiffer(_Compared, frozen=True, kw_only=True, tag="outputs-differ"):
    """B's outputs differ from A's beyond tolerance: no timing ran, no speed verdict.

    ``sentence`` says which value differs most, by how much, and what to try.
    """

    verdict: ClassVar[Literal["outputs-differ"]] = "outputs-differ"


class _Ran(_Compared, frozen=True, kw_only=True):
    """A comparison whose timing ran: its raw samples, and the whole loop when asked."""

    accepted_difference: bool  # the outputs differed and were accepted: timed anyway
    samples: Samples  # every raw ms per step, warm-up apart
    loop: LoopCheck | None  # None: no whole loop was asked for

    def rows(self) -> Iterable[Row]:
        """Every raw ms: warm-up and steady steps per side, then the whole loops."""
        loop_a, loop_b = (self.loop.a_ms, self.loop.b_ms) if self.loop else ((), ())
        s = self.samples
        for side, phase, values in (
            ("A", "warmup", s.warmup_a),
            ("B", "warmup", s.warmup_b),
            ("A", "steady", s.a),
            ("B", "steady", s.b),
            ("A", "loop", loop_a),
            ("B", "loop", loop_b),
        ):
            yield from ((side, phase, i, v) for i, v in enumerate(values))


class TooFewSamples(_Ran, frozen=True, kw_only=True, tag="too-few-samples"):
    """The budget fits too few blocks for a confidence interval: the samples, no estimate.

    ``sentence`` says the budget a verdict would need.
    """

    verdict: ClassVar[Literal["too-few-samples"]] = "too-few-samples"


class Timed(_Ran, frozen=True, kw_only=True):
    """A verdict from the timing: ``Faster``, ``Slower`` or ``NoDetectableDifference``.

    Every figure comes from the raw ``samples``: ``baseline`` and ``candidate`` summarize
    each side's steady steps; ``ratio``, ``ci`` and ``p_value`` are B/A from ``estimate``
    (the estimator that decided); ``other_estimate`` is the other one, ``interference``
    what the machine added to the steps.
    """

    ratio: float  # B / A of the step time (below 1: B is faster)
    ci: tuple[float, float]
    p_value: float | None  # None: fewer than 6 block pairs differ at all, no rank test
    estimate: Estimate
    other_estimate: Estimate
    interference: Interference
    band: float  # a difference is only called beyond this (±)
    unit: TimingUnit  # the unit the sentence speaks in
    batch_size: int | None  # for samples/s; None: unknown
    baseline: SideStats  # A's steady steps (ms)
    candidate: SideStats  # B's
    noise_warning: str | None  # None: the timings were quiet enough

    def throughput(self, side: Literal["baseline", "candidate"]) -> float | None:
        """Samples per second from the median step time (None: no batch size known)."""
        stats = self.baseline if side == "baseline" else self.candidate
        return self.batch_size / (stats.median / 1000) if self.batch_size else None


class Faster(Timed, frozen=True, kw_only=True, tag="faster"):
    """B is faster: the whole CI of B/A lies below ``1 - band``."""

    verdict: ClassVar[Literal["faster"]] = "faster"


class Slower(Timed, frozen=True, kw_only=True, tag="slower"):
    """B is slower: the whole CI of B/A lies above ``1 + band``."""

    verdict: ClassVar[Literal["slower"]] = "slower"


class NoDetectableDifference(Timed, frozen=True, kw_only=True, tag="no-detectable-difference"):
    """The CI of B/A reaches into the noise band: no difference is called."""

    verdict: ClassVar[Literal["no-detectable-difference"]] = "no-detectable-difference"


# An A/B's result, one type per verdict: ``isinstance(result, Timed)`` has every figure.
Comparison: TypeAlias = Faster | Slower | NoDetectableDifference | OutputsDiffer | TooFewSamples
TIMED: dict[Verdict, type[Faster | Slower | NoDetectableDifference]] = {
    "faster": Faster,
    "slower": Slower,
    "no-detectable-difference": NoDetectableDifference,
}


class Prediction(msgspec.Struct, frozen=True):
    """What the critical path's graph predicted for a check's change, beside what the
    check measured (``investigation.predicted``)."""

    targets: tuple[str, ...]  # the work the change removes (what-if targets)
    saved_ms: float  # the predicted saving per step (median over the finding's steps)
    ratio: float  # predicted B/A: 1 - saved / the step's time outside the profiler, >= 0
    within_ci: bool  # the check's measured CI meets the range ratio..ratio_scaled
    # predicted B/A if the profiler inflated the removed work as much as the whole step:
    # 1 - saved / the profiled path's length (None: no unprofiled steps to tell them apart)
    ratio_scaled: float | None = None


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
    predicted: Prediction | None = None  # the graph's prediction (a removal check)


class OperatorCall(msgspec.Struct, frozen=True, kw_only=True):
    """An operator on one set of recorded inputs, and how often a step calls it."""

    operator: str  # aten::mm
    input_shapes: str  # as recorded (JSON: a list per input)
    input_types: str | None  # as recorded ("float", "Scalar", ...)
    calls_per_step: float  # its calls in the trace's steps, over the steps


class CallTiming(msgspec.Struct, frozen=True, kw_only=True):
    """One ``OperatorCall`` timed alone: its time per call (median over the blocks)."""

    call: OperatorCall
    alone_ms_per_call: float


class OperatorShare(msgspec.Struct, frozen=True, kw_only=True):
    """What an operator (and those that do the same work) takes of the step, measured.

    Every recorded set of inputs of the operators ``calls`` names, each run alone on
    random values as many times as a step calls it, against the step itself: both timed
    in the same interleaved blocks, outside the profiler. ``share`` is the median
    ratio (the operators' time per step over the step's) with its CI
    (``steptrace.paired``); ``script`` runs the same calls by hand.
    """

    operator: str  # the finding's
    operators: tuple[str, ...]  # those measured with it (the same work: mm, addmm, ...)
    calls: tuple[CallTiming, ...]
    alone_ms_per_step: float  # median over the blocks
    step_ms: float  # the step's median over the same blocks
    share: float  # alone / step (Hodges-Lehmann over the blocks)
    ci: tuple[float, float]
    confidence: float
    blocks: int
    script: str


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
