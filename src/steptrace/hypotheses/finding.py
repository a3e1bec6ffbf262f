"""A finding: what was observed, the evidence, one hypothesis, and the next controlled check.

Findings are possible readings of a trace, never verdicts: no duration or speed-up is
promised. ``severity`` is a share (0 to 1) of what ``basis`` names: of the step's wall time
for the findings about time (defined in ``steptrace.hypotheses.claims``), of a device's
memory peak for the findings about memory, never mixed; it ranks findings within their
basis, and ``level`` puts it in words. The evidence is typed: figures that carry
their unit, and ``Where`` to look on the timeline.
"""

from __future__ import annotations

from typing import Literal

import msgspec

Level = Literal["high", "medium", "low"]
# what a severity is a share of: the step's wall time, a device's memory peak (allocated,
# or reserved), or the bytes a step allocated
Basis = Literal["step time", "memory peak", "reserved memory", "allocated bytes"]
HIGH, MEDIUM = 0.20, 0.05  # shares of step time
# A finding about time that explains less of the step than this is noise: listed apart, as
# minor, and never in the verdict. Findings that explain no time by design (``NO_TIME``)
# say what limits the others, and stay.
NOISE_FLOOR = 0.005
NO_TIME = frozenset({"clock-skew"})
# ms, µs; share (0 to 1 of something named); ratio (x times); count; bytes; tflops (TFLOP/s);
# gbps (GB/s); names; text
FigureUnit = Literal[
    "ms", "us", "share", "ratio", "count", "bytes", "tflops", "gbps", "names", "text"
]
Value = int | float | str | tuple[int | str, ...] | None


class Figure(msgspec.Struct, frozen=True):
    """One piece of evidence: a named value and its unit (``None``: not known)."""

    name: str
    value: Value
    unit: FigureUnit


class Where(msgspec.Struct, frozen=True):
    """Where to look in the trace: which steps, their time range as written, thread, streams."""

    steps: tuple[str, ...]
    time_us: tuple[float, float]  # start of the first step, end of the last (from origin_ns)
    thread: str | None  # the thread the steps ran on, when known
    streams: tuple[int, ...] | None  # GPU streams with work in those steps; None: no GPU


class Evidence(msgspec.Struct, frozen=True):
    """The numbers behind a finding, and where they are on the timeline."""

    figures: tuple[Figure, ...]
    where: Where

    def values(self) -> dict[str, Value]:
        """The figures' values by name."""
        return {f.name: f.value for f in self.figures}


class OnCriticalPath(msgspec.Struct, frozen=True):
    """How much of a finding's time lies on the critical path (``hypotheses.on_path``)."""

    on_path_ms: float  # the path's time in what the finding names, median over its steps
    share: float | None  # of the finding's own time; None: it claims no time


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """One rule that fired: observation, evidence, one hypothesis, the next check, caveats."""

    rule: str  # a stable id: input-pipeline, repeated-copy, ... (docs/findings.md)
    severity: float  # a share of ``basis``, 0 to 1: of the step's wall time by default
    level: Level
    observation: str
    evidence: Evidence
    hypothesis: str
    next_check: str
    caveats: tuple[str, ...]
    basis: Basis = "step time"
    critical_path: OnCriticalPath | None = None  # None: not known (no path computed)

    @property
    def minor(self) -> bool:
        """Explains under ``NOISE_FLOOR`` of the step: listed apart, out of the verdict."""
        return (
            self.basis == "step time" and self.severity < NOISE_FLOOR and self.rule not in NO_TIME
        )


def finding(
    rule: str,
    severity: float,
    *,
    observation: str,
    evidence: Evidence,
    hypothesis: str,
    next_check: str,
    caveats: tuple[str, ...] = (),
    basis: Basis = "step time",
) -> Finding:
    """Build a finding; severity is clipped to [0, 1] and given a level."""
    share = min(max(severity, 0.0), 1.0)
    level: Level = "high" if share >= HIGH else "medium" if share >= MEDIUM else "low"
    return Finding(
        rule=rule,
        severity=share,
        level=level,
        observation=observation,
        evidence=evidence,
        hypothesis=hypothesis,
        next_check=next_check,
        caveats=caveats,
        basis=basis,
    )
