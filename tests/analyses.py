"""Small ``TraceAnalysis`` values built by hand, for unit tests of the rules.

Every builder has defaults that make its figure inert (nothing waits, nothing is copied),
so a test states only the figures the rule under test reads::

    analysis(steps(10.0, 10.0, gpu=gpu_step(4.0)), operators=[operator("aten::mm")])

``step`` completes what follows from its wall time: each phase's ``share`` and the GPU's
``idle_ms`` and ``utilization``. ``analysis`` derives the summary from the steps (medians
with ``statistics``) and, unless told, says the GPU was observed when a step has GPU
figures. Times are ms, except ``start_us`` and the figures named ``_us``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import msgspec

from steptrace.analysis.communication.summary import CollectiveKind, KindStep
from steptrace.analysis.efficiency.roofline import RooflineRow, coverage_of
from steptrace.analysis.measure import (
    FirstStep,
    PhaseSummary,
    StepResult,
    StepSummary,
    TraceAnalysis,
    TraceSummary,
)
from steptrace.analysis.memory.usage import MemoryAnalysis
from steptrace.analysis.spread import Spread
from steptrace.analysis.time.copies import CopyPattern
from steptrace.analysis.time.cpu import CpuStep
from steptrace.analysis.time.gpu import CommunicationSummary as Communication
from steptrace.analysis.time.gpu import CopySummary, GpuStep, KernelSummary, SetSummary, SyncSummary
from steptrace.analysis.time.kernels import KernelStat
from steptrace.analysis.time.operators import OperatorStat
from steptrace.analysis.time.parts import part_of
from steptrace.analysis.time.phases import Phase, Reading
from steptrace.trace.table import Device

THREAD = "pid 1 tid 1 (python)"


def spread(values: Sequence[float]) -> Spread | None:
    """Median, min and max of ``values`` (``None`` when there are none)."""
    if not values:
        return None
    return Spread(float(statistics.median(values)), float(min(values)), float(max(values)))


def cpu(
    busy_ms: float = 0.0,
    *,
    operators: int = 0,
    operator_us: float | None = None,
    grad_recording: int = 0,
    outer_operators: int = 0,
    leaf_work_ms: float = 0.0,
    unrecorded_ms: float | None = None,
) -> CpuStep:
    """CPU figures of a step; ``operator_us`` is the median operator duration."""
    durations = None if operator_us is None else Spread(operator_us, operator_us, operator_us)
    return CpuStep(
        busy_ms, operators, durations, grad_recording, outer_operators, leaf_work_ms, unrecorded_ms
    )


def copy(
    direction: str = "HtoD",
    *,
    count: int = 1,
    busy_ms: float = 0.0,
    nbytes: int | None = None,
    pageable: int = 0,
    pinned: int = 0,
    pageable_bytes: int | None = None,
    pageable_busy_ms: float | None = None,
) -> CopySummary:
    """The copies of one direction in one step. When all of them are pageable, their bytes
    and time are the pageable ones unless given; otherwise none are, unless given."""
    every = pageable == count
    derived = nbytes if every else 0 if not pageable else None
    return CopySummary(
        direction,
        count,
        busy_ms,
        nbytes,
        pageable,
        pinned,
        pageable_bytes if pageable_bytes is not None else derived,
        pageable_busy_ms if pageable_busy_ms is not None else (busy_ms if every else 0.0),
    )


def sync(name: str, count: int = 1) -> SyncSummary:
    return SyncSummary(name, count, 0.01 * count)


def gpu_step(
    busy_ms: float = 0.0,
    *,
    kernels: int = 0,
    shorter_than_launch: int = 0,
    memcpy: Sequence[CopySummary] = (),
    communication_ms: float = 0.0,
    overlap_ms: float = 0.0,
    sync_calls: Sequence[SyncSummary] = (),
    waiting_on_host_ms: float | None = None,
    idle_after_sync_ms: float = 0.0,
    streams: Sequence[int] = (7,),
) -> GpuStep:
    """GPU figures of a step (one communication kernel when ``communication_ms`` > 0)."""
    return GpuStep(
        busy_ms=busy_ms,
        idle_ms=0.0,  # set by ``step``
        utilization=0.0,  # set by ``step``
        kernels=KernelSummary(kernels, busy_ms, None, shorter_than_launch),
        memcpy=tuple(memcpy),
        memset=SetSummary(0, 0.0),
        communication=Communication(int(communication_ms > 0), communication_ms, overlap_ms),
        launch_delay_us=None,
        sync_calls=tuple(sync_calls),
        idle_waiting_on_host_ms=waiting_on_host_ms,
        idle_after_sync_ms=idle_after_sync_ms,
        streams=tuple(streams),
    )


def phase(
    name: str,
    inclusive_ms: float,
    *,
    gpu_launches: int | None = None,
    grad_recording: int = 0,
    operators: int = 0,
    unrecorded_ms: float | None = None,
) -> Phase:
    """One label in one step, with no nested label (exclusive = inclusive)."""
    return Phase(
        name,
        1,
        inclusive_ms,
        inclusive_ms,
        0.0,
        None,
        None,
        gpu_launches,
        part_of(name),
        grad_recording,
        operators,
        unrecorded_ms,
    )


def reading(
    ms: float, *, gpu_idle_ms: float | None = None, labels: Sequence[str] = ("read_batch",)
) -> Reading:
    return Reading(ms, gpu_idle_ms, tuple(labels))


def step(
    name: str,
    wall_ms: float,
    *,
    start_us: float = 0.0,
    thread: str | None = THREAD,
    phases: Sequence[Phase] = (),
    reading: Reading | None = None,
    cpu: CpuStep | None = None,
    gpu: GpuStep | None = None,
) -> StepResult:
    """One step; ``gpu=None`` means the GPU was not observed."""
    if gpu is not None:
        utilization = gpu.busy_ms / wall_ms if wall_ms else 0.0
        gpu = msgspec.structs.replace(gpu, idle_ms=wall_ms - gpu.busy_ms, utilization=utilization)
    own = [msgspec.structs.replace(p, share=p.exclusive_ms / wall_ms) for p in phases]
    number = name.rpartition("#")[2]
    return StepResult(
        name,
        int(number) if number.isdigit() else None,
        start_us,
        thread,
        wall_ms,
        tuple(own),
        None,
        reading,
        cpu or CpuStep(0.0, 0, None, 0),
        gpu,
    )


def steps(*walls_ms: float, start_us: float = 1000.0, **common: Any) -> list[StepResult]:
    """Steps ``ProfilerStep#1..n`` back to back from ``start_us``, with ``step``'s keywords.

    A keyword given as a ``list`` holds one value per step (give shared phases as a tuple).
    """
    made, at = [], start_us
    for k, wall in enumerate(walls_ms):
        if any(isinstance(v, list) and len(v) != len(walls_ms) for v in common.values()):
            raise ValueError("a list keyword needs one value per step")
        mine = {n: v[k] if isinstance(v, list) else v for n, v in common.items()}
        made.append(step(f"ProfilerStep#{k + 1}", wall, start_us=at, **mine))
        at += wall * 1000
    return made


def operator(
    name: str,
    *,
    calls: int = 1,
    self_ms: float = 0.0,
    gpu_ms: float | None = None,
    input_shapes: str | None = None,
) -> OperatorStat:
    return OperatorStat(name, calls, self_ms, self_ms, gpu_ms, None, input_shapes, None)


def kernel(name: str, total_ms: float, *, calls: int = 1) -> KernelStat:
    mean_us = total_ms * 1000 / calls
    return KernelStat(name, calls, total_ms, mean_us, mean_us, mean_us)


def copy_pattern(
    operator: str,
    label: str | None,
    *,
    per_step: Sequence[int] = (1, 1, 1),
    direction: str = "HtoD",
    nbytes: int | None = 4096,
    total_ms: float = 0.3,
) -> CopyPattern:
    """A recurring copy; it appears in the steps where ``per_step`` is not 0."""
    appears = sum(n > 0 for n in per_step)
    return CopyPattern(
        direction, nbytes, operator, label, "Pageable", appears, tuple(per_step), total_ms
    )


def collective(
    kind: str,
    *per_step: tuple[float, float],
    calls: int = 2,
    nbytes: int | None = 1 << 20,
    busbw_gbps: float | None = 10.0,
    waiting_ms: float = 0.0,
) -> CollectiveKind:
    """One collective type over ``steps`` named as ``steps()`` names them: per step its
    (ms, exposed ms), ``calls`` issued in each."""
    total = sum(ms for ms, _ in per_step)
    return CollectiveKind(
        kind=kind,
        calls=calls * len(per_step),
        total_ms=total,
        longest_ms=max((ms for ms, _ in per_step), default=0.0) / max(calls, 1),
        bytes_per_call=nbytes,
        group_size=8,
        algbw_gbps=busbw_gbps,
        busbw_gbps=busbw_gbps,
        waiting_calls=1 if waiting_ms else 0,
        waiting_ms=waiting_ms,
        per_step=tuple(
            KindStep(f"ProfilerStep#{k + 1}", calls, ms, exposed)
            for k, (ms, exposed) in enumerate(per_step)
        ),
    )


def device(
    name: str = "NVIDIA H100",
    compute_capability: str | None = "9.0",
    memory_bytes: int | None = None,
) -> Device:
    return Device(0, name, compute_capability, memory_bytes)


def analysis(
    steps: Sequence[StepResult],
    *,
    operators: Sequence[OperatorStat] = (),
    kernels: Sequence[KernelStat] = (),
    copies: Sequence[CopyPattern] = (),
    gpu_observed: bool | None = None,
    devices: Sequence[Device] | None = None,
    fwdbwd_flows: int = 0,
    launch_calls: int = 0,
    communication: Sequence[CollectiveKind] = (),
    roofline: Sequence[RooflineRow] = (),
    memory: MemoryAnalysis | None = None,
) -> TraceAnalysis:
    """An analysis of ``steps`` (at least one); the summary is derived from them."""
    observed = any(s.gpu for s in steps) if gpu_observed is None else gpu_observed
    trace = TraceSummary(
        path="synthetic.json",
        rank=None,
        world_size=None,
        backend=None,
        gpu_observed=observed,
        devices=None if devices is None else tuple(devices),
        events=0,
        steps_from_markers=True,
        options={},
        memory_events=0,
        fwdbwd_flows=fwdbwd_flows,
        launch_calls=launch_calls,
        warnings=(),
    )
    return TraceAnalysis(
        trace,
        summary(steps),
        tuple(steps),
        tuple(operators),
        len(operators),
        tuple(kernels),
        len(kernels),
        tuple(copies),
        communication=tuple(communication),
        roofline=tuple(roofline),
        roofline_coverage=coverage_of(list(roofline)) if observed else None,
        memory=memory,
    )


def summary(steps: Sequence[StepResult]) -> StepSummary:
    """Wall and GPU time as median [min–max], the first step apart, each label's figures."""
    gpus = [s.gpu for s in steps if s.gpu is not None]
    first = None
    if len(steps) >= 2:
        others = statistics.median(s.wall_ms for s in steps[1:])
        ratio = steps[0].wall_ms / others if others > 0 else None
        differs = ratio is not None and abs(ratio - 1) > 0.10
        first = FirstStep(steps[0].name, steps[0].wall_ms, others, ratio, differs)
    by_name: dict[str, list[Phase]] = {}
    for p in (p for s in steps for p in s.phases):
        by_name.setdefault(p.name, []).append(p)
    phases = tuple(
        PhaseSummary(
            name,
            len(ps),
            spread([p.exclusive_ms for p in ps]),  # type: ignore[arg-type]
            spread([p.share for p in ps]),
            None,
        )  # type: ignore[arg-type]
        for name, ps in by_name.items()
    )
    wall = spread([s.wall_ms for s in steps])
    assert wall is not None, "an analysis has at least one step"
    busy, idle = spread([g.busy_ms for g in gpus]), spread([g.idle_ms for g in gpus])
    return StepSummary(len(steps), wall, busy, idle, first, phases)
