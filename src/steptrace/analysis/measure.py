"""``measure``: one loaded trace -> its ``TraceAnalysis``, the registry's figures composed.

Contract: ``measure(trace) -> TraceAnalysis``, pure (no I/O, no findings): steps, labels,
CPU and GPU per step, GPU work outside the steps, operators, kernels, copies, the
roofline per operator and the collectives by type, as frozen typed results. It mirrors
the ``analysis`` object of the JSON report (``docs/json-schema.md``).
The figures are those of ``registry`` over one ``TraceContext``, computed by ``compose``;
``analysis_of`` assembles them when the caller computed them (with figures on demand).
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from steptrace.analysis.communication.summary import CollectiveKind
from steptrace.analysis.compiler.steps import COMPILING, StepCompile
from steptrace.analysis.compose import compute
from steptrace.analysis.context import TraceContext
from steptrace.analysis.critical.path import CriticalPath
from steptrace.analysis.efficiency.hardware import DevicePeaks
from steptrace.analysis.efficiency.roofline import Roofline, RooflineCoverage, RooflineRow
from steptrace.analysis.graphs.replays import GraphReplay, GraphReplays, ReplayedWork
from steptrace.analysis.loader.figure import LoaderAnalysis
from steptrace.analysis.memory.usage import MemoryAnalysis, memory_warnings
from steptrace.analysis.registry import figures
from steptrace.analysis.spread import Spread
from steptrace.analysis.time.categories import CategorySummary, summarize
from steptrace.analysis.time.copies import CopyPattern
from steptrace.analysis.time.cpu import CpuStep
from steptrace.analysis.time.gpu import GpuStep
from steptrace.analysis.time.kernels import KernelStat
from steptrace.analysis.time.operators import OperatorStat
from steptrace.analysis.time.outside import GpuOutsideSteps, outside_warnings
from steptrace.analysis.time.phases import Phase, Reading, StepPhases
from steptrace.analysis.time.steps import marker_warnings, overlap_warnings
from steptrace.trace.kinds import Kind
from steptrace.trace.table import Device, Trace

# The first step is shown apart when its wall time is this far (relative) from the others'.
FIRST_STEP_TOLERANCE = 0.10


class TraceSummary(msgspec.Struct, frozen=True):
    """What was analyzed, and whether the GPU was observed at all."""

    path: str
    rank: int | None
    world_size: int | None
    backend: str | None
    gpu_observed: bool
    devices: tuple[Device, ...] | None
    events: int
    steps_from_markers: bool
    options: dict[str, str]
    memory_events: int
    fwdbwd_flows: int
    launch_calls: int  # CUDA/HIP runtime and driver calls
    warnings: tuple[str, ...]  # what loading skipped and measuring noticed, in words
    base_time_ns: int | None = None  # absolute time of ts 0 (baseTimeNanoseconds), if known
    origin_ns: int = 0  # the first event's ts, in ns: every ``*_us`` time counts from it
    python_functions: int = 0  # python_function events: recorded with_stack
    shapes_recorded: bool = False  # an operator's Input Dims: recorded with record_shapes


class StepResult(msgspec.Struct, frozen=True):
    """One step: its wall time, labels, and what the CPU and the GPU did in it."""

    name: str
    number: int | None
    start_us: float  # as written in the trace, to find the step in a viewer
    thread: str | None  # the thread the step ran on (pid/tid, and its name when known)
    wall_ms: float
    phases: tuple[Phase, ...]
    unlabeled_ms: float | None
    reading: Reading | None  # reading the batch (data-read labels), when labelled
    cpu: CpuStep
    gpu: GpuStep | None  # None: GPU not observed
    partial: bool = False  # cut short by the profiler's stop: listed, left out of the summary
    # what torch.compile did in it; None: it ran no compiled region and compiled nothing
    compile: StepCompile | None = None
    # the CUDA/HIP graphs whose launch call started in it, each with the work it replayed
    graph_replays: tuple[GraphReplay, ...] = ()

    @property
    def compiling(self) -> bool:
        """Compiled for ``COMPILING`` of its wall time or more: left out of the steady
        figures, shown apart with what it compiled."""
        return self.compile is not None and self.compile.compile_ms >= COMPILING * self.wall_ms

    @property
    def said_name(self) -> str:
        """Its name, and why it is apart: cut short, or compiling (with what, how long)."""
        if self.partial:
            return f"{self.name} (partial)"
        if self.compile is not None and self.compiling:
            ids = ", ".join(self.compile.compiled) or "a backward graph"
            return f"{self.name} (compiled {ids}: {self.compile.compile_ms:,.2f} ms)"
        return self.name


class FirstStep(msgspec.Struct, frozen=True):
    """The first step beside the median of the others: shown apart when it differs."""

    name: str
    wall_ms: float
    others_median_ms: float
    ratio: float | None  # first / median of the others; None when they take no time
    differs: bool


class PhaseSummary(msgspec.Struct, frozen=True):
    """One label across the steps in which it appears."""

    name: str
    steps: int  # in how many steps it appears
    exclusive_ms: Spread
    share: Spread
    gpu_idle_ms: Spread | None


class StepSummary(msgspec.Struct, frozen=True):
    """The steps together: wall time and GPU figures as median [min–max], labels; the
    first step left out of them when it differs (``first_step.differs``: shown apart)."""

    count: int  # the complete steps, the first included (operators' per-step divisor)
    wall_ms: Spread
    gpu_busy_ms: Spread | None
    gpu_idle_ms: Spread | None
    first_step: FirstStep | None
    phases: tuple[PhaseSummary, ...]
    # GPU busy time by kind of work (GEMM, ...), per step; None: GPU not observed
    gpu_categories: tuple[CategorySummary, ...] | None = None
    # the steps that compiled (``StepResult.compiling``), left out of the figures above
    # while steps that did not remain
    compiling: tuple[str, ...] = ()


class TraceAnalysis(msgspec.Struct, frozen=True):
    """Everything measured on one trace: what it is, its steps, operators, kernels, copies.

    Figures only: no findings (``steptrace.hypotheses``) and no scenario (the report
    carries both). ``None`` in a GPU figure means *not observed*, never zero.
    """

    trace: TraceSummary
    summary: StepSummary
    steps: tuple[StepResult, ...]
    operators: tuple[OperatorStat, ...]  # by self time; may be cut to the top N
    operators_total: int  # how many operator names exist
    kernels: tuple[KernelStat, ...]  # by total time; may be cut to the top N
    kernels_total: int
    copies: tuple[CopyPattern, ...]  # device copies grouped by direction, size and operator
    gpu_outside_steps: GpuOutsideSteps | None = None  # None: GPU not observed
    memory: MemoryAnalysis | None = None  # None: no [memory] events (profile_memory off)
    # per operator and recorded inputs, by time: FLOPs, bytes, achieved and peak figures
    roofline: tuple[RooflineRow, ...] = ()  # (): no shapes recorded; may be cut to the top N
    roofline_peaks: DevicePeaks | None = None  # the roofs used; None: not known
    # the share of the operators' GPU time on the roofline (all rows, before any cut);
    # None: no rows, or the GPU not observed
    roofline_coverage: RooflineCoverage | None = None
    critical_path: CriticalPath | None = None  # None: not computed (``critical_path``)
    # collectives by type (all_reduce, all_to_all, ...): sizes, bandwidth, exposed time per
    # step; (): no collective in the trace
    communication: tuple[CollectiveKind, ...] = ()
    # the graph replays of the whole trace whose launch has no operator above it: work the
    # operator tables cannot attribute; None: no such replay
    graph_work_without_operator: ReplayedWork | None = None
    # the DataLoader's workers (their files beside the trace): each one's load, the batch
    # each step waited for, the slow samples; None: no worker files
    loader: LoaderAnalysis | None = None

    def top(self, n: int) -> TraceAnalysis:
        """The same analysis listing only the first ``n`` operators, kernels and roofline
        rows."""
        return msgspec.structs.replace(
            self,
            operators=self.operators[:n],
            kernels=self.kernels[:n],
            roofline=self.roofline[:n],
        )


def measure(trace: Trace, *, partial_step: int | None = None) -> TraceAnalysis:
    """Every figure of a loaded trace; ``partial_step`` is the number of a ProfilerStep
    known to be cut short (its capture says so): it is marked ``partial``."""
    context = TraceContext(trace, partial_step=partial_step)
    return analysis_of(context, compute(context, figures()))


def analysis_of(context: TraceContext, computed: dict[str, Any]) -> TraceAnalysis:
    """The ``TraceAnalysis`` of the registry's figures, computed (``compose.compute``)."""
    trace, events = context.trace, context.events
    windows = context.windows
    phases: tuple[StepPhases, ...] = computed["phases"]
    cpu: tuple[CpuStep, ...] = computed["cpu"]
    gpu: tuple[GpuStep | None, ...] = computed["gpu"]
    compiled: tuple[StepCompile | None, ...] = computed["compile"]
    outside: GpuOutsideSteps | None = computed["gpu_outside_steps"]
    graphs: GraphReplays | None = computed.get("graph_replays")  # None: not computed
    replays = graphs.steps if graphs is not None else tuple(() for _ in windows)
    steps = tuple(
        StepResult(
            name=w.name,
            number=w.number,
            start_us=w.start_us,
            thread=_thread_label(trace, w.thread),
            wall_ms=w.wall_ms,
            phases=p.phases,
            unlabeled_ms=p.unlabeled_ms,
            reading=p.reading,
            cpu=c,
            gpu=g,
            partial=cut,
            compile=made,
            graph_replays=replayed,
        )
        for w, p, c, g, cut, made, replayed in zip(
            windows, phases, cpu, gpu, context.partial, compiled, replays, strict=True
        )
    )
    info = trace.info
    dist = info.distributed
    noticed = [
        *info.warnings,
        *marker_warnings(events),
        *overlap_warnings(windows),
        *outside_warnings(outside),
        *memory_warnings(trace.instants, computed["memory"]),
        *_partial_warnings(steps, context.empty_last),
    ]
    operators: tuple[OperatorStat, ...] = computed["operators"]
    kernels: tuple[KernelStat, ...] = computed["kernels"]
    rooflined: Roofline = computed["roofline"]
    return TraceAnalysis(
        trace=TraceSummary(
            path=info.url or str(info.path),
            rank=dist.rank if dist else None,
            world_size=dist.world_size if dist else None,
            backend=dist.backend if dist else None,
            gpu_observed=context.gpu_busy is not None,
            devices=info.devices,
            events=info.events_total,
            steps_from_markers=context.steps.from_markers,
            options=info.options,
            memory_events=info.memory_events,
            fwdbwd_flows=info.fwdbwd_flows,
            launch_calls=int(context.tree.launches.size),
            warnings=tuple(noticed),
            base_time_ns=info.base_time_ns,
            origin_ns=events.origin_ns,
            python_functions=int(np.count_nonzero(events.kind == Kind.PYTHON_FUNCTION)),
            shapes_recorded=_shapes_recorded(context),
        ),
        summary=_summary(steps),
        steps=steps,
        operators=operators,
        operators_total=len(operators),
        kernels=kernels,
        kernels_total=len(kernels),
        copies=computed["copies"],
        gpu_outside_steps=outside,
        memory=computed["memory"],
        roofline=rooflined.rows,
        roofline_peaks=rooflined.peaks,
        roofline_coverage=rooflined.coverage,
        critical_path=computed.get("critical_path"),
        communication=computed["communication"],
        graph_work_without_operator=graphs.without_operator if graphs is not None else None,
        loader=computed.get("loader"),
    )


def _shapes_recorded(context: TraceContext) -> bool:
    """Does an operator carry its Input Dims (the column is loaded with the roofline's)?"""
    dims = context.events.columns.get("input_dims")
    ops = context.tree.ops
    return dims is not None and ops.size > 0 and bool((dims[ops] >= 0).any())


def _thread_label(trace: Trace, thread: int) -> str | None:
    if thread < 0:
        return None
    pid, tid = trace.events.threads[thread]
    name = trace.info.thread_names.get((pid, tid))
    return f"pid {pid} tid {tid}" + (f" ({name})" if name else "")


def _partial_warnings(steps: tuple[StepResult, ...], empty_last: bool) -> list[str]:
    why = (
        "nothing is recorded in it (the marker the profiler's stop closed)"
        if empty_last
        else "the capture's loop ended inside it and the profiler's stop cut it short"
    )
    return [
        f"{s.name} is partial: {why}; it is listed but left out of the step figures"
        for s in steps
        if s.partial
    ]


def _summary(every: tuple[StepResult, ...]) -> StepSummary:
    """Over the complete steps (all of them when every one is partial); the medians and
    ranges leave out the steps that compiled (``compiling``) while others remain, and the
    first of those left when it differs from the others (``first_step``): shown apart, not
    averaged away."""
    steps = tuple(s for s in every if not s.partial) or every
    compiling = tuple(s.name for s in steps if s.compiling)
    quiet = tuple(s for s in steps if not s.compiling) or steps
    first = _first_step(quiet)
    steady = quiet[1:] if first is not None and first.differs else quiet
    observed = [s.gpu for s in steady if s.gpu is not None]
    wall = Spread.of([s.wall_ms for s in steady])
    assert wall is not None  # a trace always has at least one step or one window
    return StepSummary(
        count=len(steps),
        wall_ms=wall,
        gpu_busy_ms=Spread.of([g.busy_ms for g in observed]) if observed else None,
        gpu_idle_ms=Spread.of([g.idle_ms for g in observed]) if observed else None,
        first_step=first,
        phases=_phase_summaries(steady),
        gpu_categories=summarize([g.categories for g in observed]) if observed else None,
        compiling=compiling if len(quiet) < len(steps) else (),
    )


def _phase_summaries(steps: tuple[StepResult, ...]) -> tuple[PhaseSummary, ...]:
    by_name: dict[str, list[Phase]] = {}
    for step in steps:
        for phase in step.phases:
            by_name.setdefault(phase.name, []).append(phase)
    summaries = []
    for name, phases in by_name.items():
        idle = [p.gpu_idle_ms for p in phases if p.gpu_idle_ms is not None]
        exclusive = Spread.of([p.exclusive_ms for p in phases])
        share = Spread.of([p.share for p in phases])
        assert exclusive is not None and share is not None
        summaries.append(PhaseSummary(name, len(phases), exclusive, share, Spread.of(idle)))
    return tuple(summaries)


def _first_step(steps: tuple[StepResult, ...]) -> FirstStep | None:
    if len(steps) < 2:
        return None
    others = Spread.of([s.wall_ms for s in steps[1:]])
    assert others is not None
    first = steps[0]
    ratio = first.wall_ms / others.median if others.median > 0 else None
    return FirstStep(
        name=first.name,
        wall_ms=first.wall_ms,
        others_median_ms=others.median,
        ratio=ratio,
        differs=ratio is not None and abs(ratio - 1) > FIRST_STEP_TOLERANCE,
    )
