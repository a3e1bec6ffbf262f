"""What the rules examine: one trace's measurements and what its capture recorded."""

from __future__ import annotations

import msgspec

from steptrace.analysis.measure import StepResult, TraceAnalysis
from steptrace.scenario import CaptureFacts, Scenario


class Case(msgspec.Struct, frozen=True):
    """The analysis of a trace, the scenario it was captured for, and the capture's facts."""

    analysis: TraceAnalysis
    scenario: Scenario | None = None  # None: no question was recorded
    capture: CaptureFacts | None = None  # None: not captured by steptrace, or unknown
    # the steps that compiled, left out of ``analysis.steps`` for the rules (``find``)
    compiled_apart: tuple[StepResult, ...] = ()
