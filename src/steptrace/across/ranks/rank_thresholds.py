"""Every threshold of the cross-rank analysis and its findings, named, with its reason.

A balanced run on a busy machine (8 processes on 2 cores) shows real scheduling noise:
a rank is called a straggler only when its excess is consistent across steps, above a
floor in absolute and relative terms, and corroborated by the others' waiting.
"""

from __future__ import annotations

from typing import Any

import msgspec

from steptrace.assignments import assigned


class RankThresholds(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    # straggler: the rank's excess in a phase over the other ranks' median, per step, must
    # pass this floor (ms) ...
    straggler_floor_ms: float = 1.0
    # ... and this share of the median step wall time (noise scales with the step),
    straggler_step_share: float = 0.05
    # ... in at least this share of the steps compared,
    straggler_consistency: float = 0.75
    # ... and the others must wait at collectives at least this share of the excess
    # (a late rank makes the others wait for it; noise does not).
    straggler_corroboration: float = 0.5
    # clock-skew: arrival order is not trusted when the residual spread of collective end
    # differences after alignment exceeds this many µs (an arrival gap smaller than the
    # clocks' own disagreement cannot be told).
    clock_residual_us: float = 200.0
    # clock-skew: offsets this large (ms) are reported even when they are consistent
    # (different hosts' clocks, or traces recorded at different times).
    clock_offset_ms: float = 5.0
    # exposed-communication: communication not overlapped by compute takes at least this
    # share of the step (the single-trace comm-overlap rule's 10%).
    exposed_comm_share: float = 0.10
    # collective-imbalance: one rank's message sizes, or its transfer time, differ from the
    # group's median by at least this ratio.
    imbalance_ratio: float = 1.5
    # ... and the instances involved take at least this share of the step.
    imbalance_step_share: float = 0.05
    # memory-imbalance: a rank's peak allocated (median over its steps) exceeds the other
    # ranks' median by at least this ratio (ranks that run the same model should not) ...
    memory_imbalance_ratio: float = 1.2
    # ... and by at least this many bytes (a few MB differ with any logging).
    memory_imbalance_bytes: int = 64 * 2**20

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data

    def replace(self, assignments: list[str]) -> RankThresholds:
        """``["straggler_floor_ms=2", ...]`` -> a copy with those values (validated)."""
        return assigned(self, assignments)
