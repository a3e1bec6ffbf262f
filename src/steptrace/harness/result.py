"""What a capture produced: trace files, and the figures measured outside the profiler."""

from __future__ import annotations

from typing import Any

import msgspec

from steptrace.scenario import Scenario


class CaptureResult(msgspec.Struct, frozen=True, kw_only=True):
    """One capture. Times are wall-clock ms measured by the harness, not by the profiler."""

    traces: tuple[str, ...]  # one file per active window (``repeat``)
    sidecar: str
    scenario: Scenario
    settings: dict[str, Any]  # schedule and profiler options, as used
    gpu_requested: bool
    gpu_observed: bool
    cold_start_ms: tuple[float, ...] = ()  # first step(s), before the profiler started
    model_load_ms: float | None = None  # inference: loading, outside every request
    profiled_step_ms: tuple[float, ...] = ()  # active steps under the profiler
    unprofiled_step_ms: tuple[float, ...] | None = None  # same steps, no profiler
    overhead_ratio: float | None = None  # median profiled / median unprofiled
    flops_per_step: int | None = None
    achieved_tflops: float | None = None
    peak_tflops: float | None = None
    mfu: float | None = None
    observed: dict[str, Any] = msgspec.field(default_factory=dict)  # batch, shapes, mode, ...
    warnings: tuple[str, ...] = ()

    @property
    def trace(self) -> str:
        """The (first) trace file."""
        return self.traces[0]

    def facts(self) -> dict[str, Any]:
        """Everything but the scenario, as plain data for the sidecar."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        del data["scenario"]
        return data
