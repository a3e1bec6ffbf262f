"""Helpers the rules share: medians over steps, shares of the step, evidence, where to look.

Every rule's severity is a share of the step's wall time (``steptrace.hypotheses.claims``
states the definition): ``step_share`` for a figure measured in each step, ``trace_share``
for one measured over the whole trace. ``idle_causes`` hands each step's GPU idle time to
one cause each, so that the four rules that explain idle time never claim the same time.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from steptrace.analysis.measure import StepResult, TraceAnalysis
from steptrace.analysis.time.parts import part_of
from steptrace.hypotheses.finding import Evidence, Figure, FigureUnit, Value, Where

__all__ = [
    "IdleCauses",
    "carries_the_batch",
    "evidence",
    "idle_causes",
    "median",
    "step_share",
    "trace_share",
    "where",
]


def median(values: Iterable[float]) -> float:
    data = list(values)
    return float(statistics.median(data)) if data else 0.0


def step_share(steps: Iterable[tuple[StepResult, float]]) -> float:
    """Median over steps of ``ms / wall``, from ``(step, ms)`` pairs; steps of no time skipped."""
    return median(ms / step.wall_ms for step, ms in steps if step.wall_ms > 0)


def trace_share(ms: float, analysis: TraceAnalysis) -> float:
    """``ms`` measured over the whole trace, as a share of the steps' summed wall time."""
    wall = sum(s.wall_ms for s in analysis.steps)
    return ms / wall if wall > 0 else 0.0


def operator_figures(analysis: TraceAnalysis) -> tuple[list[float], list[float]]:
    """Per step: the CPU operators' median duration (µs, where known) and their count."""
    durations = [s.cpu.operator_us.median for s in analysis.steps if s.cpu.operator_us]
    return durations, [float(s.cpu.operators) for s in analysis.steps]


def carries_the_batch(label: str | None) -> bool:
    """Is ``label`` read as reading the batch or moving it to the device?"""
    return label is not None and part_of(label) in ("data_read", "transfer")


class IdleCauses(NamedTuple):
    """A step's GPU idle time (ms), each piece handed to one cause."""

    reading: float  # while the batch was read: input-pipeline
    after_sync: float  # after a blocking call, outside the reading: sync-in-step
    launches: float  # waiting for launches of kernels shorter than their launch: small-launches
    other: float  # the rest: the host's pace, cpu-bound


def idle_causes(step: StepResult) -> IdleCauses | None:
    """The step's GPU idle time by cause, in this order; None when the GPU was not observed.

    The analysis gives each cause's total, not its intervals, so a later cause gives up
    the whole of what the earlier ones took: what it keeps is a lower bound, and the four
    never add up to more than the idle time. Waiting on the host counts for small launches
    in proportion to the kernels that ran shorter than their launch call.
    """
    gpu = step.gpu
    if gpu is None:
        return None
    idle = max(gpu.idle_ms, 0.0)
    read_idle = step.reading.gpu_idle_ms if step.reading is not None else None
    reading = min(read_idle or 0.0, idle)
    after_sync = max(0.0, min(gpu.idle_after_sync_ms, idle) - reading)
    kernels = gpu.kernels
    short = kernels.shorter_than_launch / kernels.count if kernels.count else 0.0
    waiting = gpu.idle_waiting_on_host_ms or 0.0
    launches = short * max(0.0, min(waiting, idle) - reading - after_sync)
    other = max(0.0, idle - reading - after_sync - launches)
    return IdleCauses(reading, after_sync, launches, other)


def where(analysis: TraceAnalysis, steps: Sequence[StepResult] | None = None) -> Where:
    """Which steps, and their time range as written in the trace (µs), for a viewer."""
    chosen = list(steps) if steps is not None else list(analysis.steps)
    first, last = chosen[0], chosen[-1]
    streams = sorted({x for s in chosen if s.gpu for x in s.gpu.streams})
    return Where(
        steps=tuple(s.name for s in chosen),
        time_us=(first.start_us, last.start_us + last.wall_ms * 1000),
        thread=first.thread,
        streams=tuple(streams) or None,
    )


def evidence(place: Where, *figures: tuple[str, Value, FigureUnit]) -> Evidence:
    """Evidence from ``(name, value, unit)`` triples, in the order given."""
    return Evidence(tuple(Figure(name, value, unit) for name, value, unit in figures), place)


# Profiler options that add host time to every operator (kept in this order when named).
INFLATING = ("with_stack", "record_shapes", "profile_memory", "with_flops", "with_modules")


def recorded_options(analysis: TraceAnalysis) -> tuple[str, ...]:
    """The options the trace was recorded with that inflate the host's time: those its
    metadata names, and those its content shows (Python events, input shapes, memory
    events)."""
    trace = analysis.trace
    said = {k for k, v in trace.options.items() if v not in ("0", "False", "false", "")}
    if trace.python_functions:
        said.add("with_stack")
    if trace.shapes_recorded:
        said.add("record_shapes")
    if trace.memory_events:
        said.add("profile_memory")
    return tuple(k for k in INFLATING if k in said)


def record_again_first(analysis: TraceAnalysis, then: str) -> str:
    """A host-side check, led by recording again without the options that inflate the
    host (when the trace was recorded with any): ``then`` is the check, capitalized."""
    options = recorded_options(analysis)
    if not options:
        return then
    return (
        f"First record again without {', '.join(options)} (each adds host time to every "
        f"operator) and see whether the host's share holds. Then {then[:1].lower()}{then[1:]}"
    )
