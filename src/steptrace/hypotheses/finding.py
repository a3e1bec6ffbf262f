"""A finding: what was observed, the evidence, one hypothesis, and the next controlled check.

Findings are possible readings of a trace, never verdicts: no duration or speed-up is
promised. ``severity`` is the share of step time the observation involves (0 to 1), used
to rank findings; ``level`` puts it in words.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Level = Literal["high", "medium", "low"]
HIGH, MEDIUM = 0.20, 0.05  # shares of step time


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    rule: str  # a stable id: input-pipeline, repeated-copy, ... (docs/findings.md)
    severity: float
    level: Level
    observation: str
    evidence: dict[str, Any]  # the numbers, and where to look: steps, time range, thread
    hypothesis: str
    next_check: str
    caveats: tuple[str, ...]


def finding(
    rule: str,
    severity: float,
    *,
    observation: str,
    evidence: dict[str, Any],
    hypothesis: str,
    next_check: str,
    caveats: tuple[str, ...] = (),
) -> Finding:
    """Build a finding; severity is clipped to [0, 1] and given a level."""
    share = min(max(severity, 0.0), 1.0)
    level: Level = "high" if share >= HIGH else "medium" if share >= MEDIUM else "low"
    return Finding(
        rule=rule, severity=share, level=level, observation=observation, evidence=evidence,
        hypothesis=hypothesis, next_check=next_check, caveats=caveats,
    )  # fmt: skip


def pct(share: float) -> str:
    return f"{100 * share:.1f}%"
