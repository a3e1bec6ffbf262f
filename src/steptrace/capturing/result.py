"""What a capture produced: the scenario it answered and the facts stored beside its traces."""

from __future__ import annotations

import msgspec

from steptrace.scenario import CaptureFacts, Scenario


class CaptureResult(msgspec.Struct, frozen=True):
    """One capture: the question it was made for, and what it wrote and measured."""

    scenario: Scenario
    facts: CaptureFacts

    @property
    def trace(self) -> str:
        """The (first) trace file."""
        return self.facts.traces[0]
