"""Step-to-step variation: are there enough steps for a per-step figure to mean anything?

Contract: ``step_variation(analysis, limits) -> str | None``: a warning, in words, when the
complete steps' wall times differ by more than ``limits.step_spread`` (slowest / fastest),
else None. With fewer than two steps there is nothing to compare. A median over a few
unlike steps describes none of them well: the warning says to profile more active steps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace import units

if TYPE_CHECKING:
    from steptrace.analysis.measure import TraceAnalysis
    from steptrace.hypotheses.thresholds import Thresholds


def step_variation(analysis: TraceAnalysis, limits: Thresholds) -> str | None:
    """The warning when the steps' wall times spread beyond ``limits.step_spread``."""
    steps = [s for s in analysis.steps if not s.partial] or list(analysis.steps)
    if len(steps) < 2:
        return None
    fastest = min(steps, key=lambda s: s.wall_ms)
    slowest = max(steps, key=lambda s: s.wall_ms)
    if fastest.wall_ms <= 0:
        ratio = float("inf") if slowest.wall_ms > 0 else 1.0
    else:
        ratio = slowest.wall_ms / fastest.wall_ms
    if ratio <= limits.step_spread:
        return None
    shown = f"{ratio:.2f}×" if ratio != float("inf") else "more than any ratio"
    return (
        f"the {len(steps)} steps differ by {shown} (slowest {slowest.name} "
        f"{units.ms(slowest.wall_ms)} ms, fastest {fastest.name} {units.ms(fastest.wall_ms)} "
        f"ms; threshold step_spread={limits.step_spread:g}): the per-step figures rest on "
        "few, unlike steps; profile more active steps (Window(active=...), --active) before "
        "trusting a median"
    )
