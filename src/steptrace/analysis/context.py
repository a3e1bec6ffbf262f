"""``TraceContext``: one loaded trace and what its figures share, each computed once.

Contract: ``TraceContext(trace, partial_step=None, kinds=DEFAULT, peaks=None,
inventory=None)`` holds the shared intermediates as properties, each computed on first use
and kept: the steps (``steps.find_steps``), which of them are partial and which counted,
the operator tree (``links.cpu_tree``), the launch calls and links of the GPU work
(``links``), the GPU's work merged (``gpu_busy``), the host's recorded work
(``host_work``) and the long gaps in it while the GPU is idle too (``silences``); each
figure once (``figure(spec)``: the timeline reads the memory figure); and the caller's
settings: the table of kernel kinds (``kernel_kinds``), the device's peaks when they were
given or measured at capture (``hardware``; None: the figures look the device up) and the
capture's inventory of its tensors (``scenario.Inventory``: what holds a memory peak), and
the DataLoader workers' files read beside the trace (``loader.log.LoaderLog``). A
figure module reads what it needs from it (its ``FIGURE``, see ``registry``); ``compose``
decides where and in which order figures run. Nothing here does I/O or finds anything.

Several threads may read one context once what they read is computed (``compose``
computes the intermediates a side reads before it starts that side).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, Literal, TypeVar

import numpy as np

from steptrace.analysis.communication.collectives import gloo_rows
from steptrace.analysis.compiler.events import compiler_rows
from steptrace.analysis.efficiency.hardware import DevicePeaks
from steptrace.analysis.efficiency.kernel_kinds import DEFAULT, KernelKinds
from steptrace.analysis.loader.log import LoaderLog
from steptrace.analysis.time.gpu_busy import GpuBusy, gpu_busy
from steptrace.analysis.time.links import (
    CpuTree,
    GpuLaunches,
    GpuLinks,
    cpu_tree,
    gpu_launches,
    gpu_links,
)
from steptrace.analysis.time.silences import silences, step_edges
from steptrace.analysis.time.steps import Steps, StepWindow, find_steps, label_rows
from steptrace.scenario import Inventory
from steptrace.trace import heap
from steptrace.trace import intervals as iv
from steptrace.trace.kinds import HOST_WORK
from steptrace.trace.table import EventTable, Trace

T = TypeVar("T")
# What a figure reads of the context beyond the events: "tree" (the operator tree) and
# "links" (GPU work -> its operator, which needs the tree) decide where it can run.
Need = Literal["steps", "gpu_busy", "tree", "links"]


class TraceContext:
    """A trace and its shared intermediates (see module)."""

    def __init__(
        self,
        trace: Trace,
        *,
        partial_step: int | None = None,
        kinds: KernelKinds = DEFAULT,
        peaks: DevicePeaks | None = None,
        inventory: Inventory | None = None,
        what_if: tuple[tuple[str, float], ...] = (),
        loader: LoaderLog | None = None,
    ) -> None:
        self.trace = trace
        self.events: EventTable = trace.events
        self.partial_step = partial_step  # a ProfilerStep its capture cut short
        self.kinds = kinds  # kernel name -> kind of work
        self.peaks = peaks  # given or measured at capture; None: the device table's
        self.inventory = inventory  # the capture's tensors by address; None: not listed
        self.what_if = what_if  # the user's what-if targets (name, speedup): critical_path
        self.loader = loader  # the DataLoader workers' files, read; None: none beside it
        self._figures: dict[str, Any] = {}

    def figure(self, spec: FigureSpec[T]) -> T:
        """``spec``'s result on this trace, computed once: a figure may read another's."""
        if spec.name not in self._figures:
            self._figures[spec.name] = self._given_back(spec.compute(self))
        result: T = self._figures[spec.name]
        return result

    def _given_back(self, part: T) -> T:
        """``part`` as it is; on a large table (``heap.TRIM_ROWS`` rows and more) the
        memory its making freed is given back to the system first, before the next part
        allocates its own (``analysis.compose``)."""
        if len(self.events) >= heap.TRIM_ROWS:
            heap.release_freed_memory()
        return part

    @cached_property
    def steps(self) -> Steps:
        return self._given_back(find_steps(self.events))

    @property
    def windows(self) -> tuple[StepWindow, ...]:
        return self.steps.windows

    @cached_property
    def partial(self) -> tuple[bool, ...]:
        """Per step: cut short by the profiler's stop: its capture said which, or, said
        nothing of, the last of several ``ProfilerStep``s, short and with nothing recorded
        in it (``empty_last``)."""
        marked = self.steps.from_markers and self.partial_step is not None
        cut = [marked and w.number == self.partial_step for w in self.windows]
        if not marked and self.empty_last:
            cut[-1] = True
        return tuple(cut)

    @cached_property
    def empty_last(self) -> bool:
        """The last of several ``ProfilerStep`` markers is shorter than every other and
        holds nothing, no work and no label: the marker ``profiler.step()`` opened and
        the profiler's stop closed at once (a long silent last step is a finding, not a
        cut)."""
        windows = self.windows
        if not self.steps.from_markers or len(windows) < 2:
            return False
        last = windows[-1]
        if last.wall_ms >= min(w.wall_ms for w in windows[:-1]):
            return False
        lo, hi = np.array([last.start_us]), np.array([last.end_us])
        if any(iv.covered(work, lo, hi)[0] > 0 for work in self.recorded):
            return False
        events = self.events  # a label inside (a sleep under record_function) is a step's
        labels = label_rows(events)
        inside = (events.start_us[labels] < last.end_us) & (events.end_us[labels] > last.start_us)
        return not inside.any()

    @cached_property
    def counted(self) -> tuple[StepWindow, ...]:
        """The complete steps (all of them when every one is partial): the summary's."""
        kept = tuple(w for w, cut in zip(self.windows, self.partial, strict=True) if not cut)
        return kept or self.windows

    @cached_property
    def tree(self) -> CpuTree:
        return self._given_back(cpu_tree(self.events, compiler_rows(self.events)))

    @cached_property
    def launches(self) -> GpuLaunches:
        """Each GPU activity's launch call (no tree needed)."""
        return self._given_back(gpu_launches(self.events))

    @cached_property
    def links(self) -> GpuLinks:
        """Each GPU activity's launch call and operator (needs the tree)."""
        return self._given_back(gpu_links(self.events, self.tree, self.launches))

    @cached_property
    def gpu_busy(self) -> GpuBusy | None:
        """The GPU work merged; None: the GPU was not observed."""
        return self._given_back(gpu_busy(self.events, self.launches))

    @cached_property
    def host_work(self) -> iv.Intervals:
        """When the host is recorded working: a host event (``kinds.HOST_WORK``) or a gloo
        collective, on any thread (the table's order is by start: no sort)."""
        events = self.events
        working = events.mask(*HOST_WORK)
        working[gloo_rows(events)] = True
        return self._given_back(iv.union(events.start_us[working], events.end_us[working]))

    @property
    def recorded(self) -> tuple[iv.Intervals, ...]:
        """The recorded work: the host's, and the GPU's busy time when it was observed."""
        gpu = self.gpu_busy
        return (self.host_work,) if gpu is None else (self.host_work, gpu.busy)

    @cached_property
    def silences(self) -> iv.Intervals:
        """The gaps of at least ``silences.SILENCE_US`` in which neither the host nor the
        GPU is recorded working, over the trace and its steps, the loop's turn at each
        step's edges apart (``analysis.silences``)."""
        windows = self.windows
        lo = min([w.start_us for w in windows], default=0.0)
        hi = max([w.end_us for w in windows], default=0.0)
        for starts, ends in self.recorded:
            if starts.size:
                lo, hi = min(lo, float(starts[0])), max(hi, float(ends[-1]))
        events = self.events
        labels = label_rows(events)
        host = iv.union(
            np.concatenate((self.host_work[0], events.start_us[labels])),
            np.concatenate((self.host_work[1], events.end_us[labels])),
        )
        edges = step_edges(
            np.array([w.start_us for w in windows]), np.array([w.end_us for w in windows]), host
        )
        return self._given_back(silences((*self.recorded, edges), lo, hi))


@dataclass(frozen=True)
class FigureSpec(Generic[T]):
    """One figure of a trace: its name, how it is computed from the context, what it reads.

    ``on_demand`` figures (the steps' lanes that only HTML draws, heavy analyses) are
    computed only when asked for by name. ``groups``: the trace's field groups it reads
    beyond ``core`` (``trace.fields``), which loading then decodes."""

    name: str
    compute: Callable[[TraceContext], T]
    needs: frozenset[Need]
    on_demand: bool = False
    groups: frozenset[str] = frozenset()

    @property
    def reads_tree(self) -> bool:
        return bool(self.needs & {"tree", "links"})
