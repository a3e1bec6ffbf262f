"""What a rule's check is (``Check``), what it runs with (``Context``), and what a check
that measures rather than compares returns (``Measured``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from steptrace.analysis.measure import TraceAnalysis
from steptrace.hypotheses.finding import Figure, Finding
from steptrace.hypotheses.thresholds import Thresholds
from steptrace.investigation.subject import Subject
from steptrace.validate.results import Comparison, Outcome
from steptrace.validate.timing import TimingPlan
from steptrace.window import Window


@dataclass(frozen=True)
class Context:
    """What a check is run with."""

    subject: Subject
    finding: Finding
    analysis: TraceAnalysis
    limits: Thresholds
    window: Window  # the capture's (the profiler check records with its options)
    step_ms: float  # the step outside the profiler when measured, else the trace's median
    step_from: str  # which: "outside the profiler" or "in the trace (profiled)"
    plan: TimingPlan  # how the A/B is timed, within the check's share
    timeout_s: float = 60.0  # for checks that run outside compare (a subprocess)


@dataclass(frozen=True)
class Measured:
    """A check that is a measurement rather than an A/B: its outcome and figures."""

    outcome: Outcome
    sentence: str
    figures: tuple[Figure, ...]


Runner = Callable[[Context], Comparison | Measured]


@dataclass(frozen=True)
class Check:
    """One rule's check."""

    name: str
    change: str  # what A and B are, in words (or what is measured)
    run: Runner | None = None  # None: it cannot be automated (``manual`` says why)
    manual: str = ""
    needs_gpu: bool = False
    min_s: float = 2.0  # not started with less time than this (a compile needs more)
    kinds: tuple[str, ...] = ("training", "inference")
    first: bool = False  # run before the others: what it finds distorts their timings
