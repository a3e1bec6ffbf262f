"""Memory per step and device, from the ``[memory]`` instants of ``profile_memory``.

Contract: ``memory_per_step(events, instants, windows, tree) -> MemoryAnalysis | None``
(``FIGURE``: the figure ``memory``). ``None`` when the trace holds no ``[memory]`` event
with ``Total Allocated`` (no ``profile_memory``; or a 2021 trace, which writes ``Bytes``
alone: its peak is not observed, never 0). Per device, events in time order: each one's
``Total Allocated`` is the device's allocated bytes after it (the previous one plus its
``Bytes``). A step is ``[start, end)`` of its ``ProfilerStep`` span:

- ``start_allocated_bytes``: the first event's ``Total Allocated`` minus its ``Bytes``;
  ``peak_allocated_bytes``: the most allocated at any moment of the step (the start
  included); ``end_allocated_bytes``: after the last event; ``peak_reserved_bytes``: the
  largest ``Total Reserved`` the step's events say (0 on the CPU, which reserves nothing);
  ``allocations`` and ``allocated_bytes``: the events with ``Bytes`` > 0;
- what holds the peak (``PeakHolders``): the bytes alive at the peak are those alive at the
  step's start that the step had not freed by then, plus those allocated in the step before
  it and not freed by then, matched by ``Addr``: the two add up to the peak, to the byte.
  The latter are grouped by the innermost operator that allocated them (an allocation-only
  operator such as ``aten::empty`` counts under its parent) and by the innermost label;
  with a steptrace capture's inventory, both parts by what they are (parameters,
  gradients, optimizer state, batch, activations and temporaries: ``categories``); the
  matching by address is ``holders``;
- per label of the step: the most allocated while it ran and its net growth.

A device with a step but no event in it keeps the step, its figures from the level the
device was at (no allocation, no growth). ``growth_bytes_per_step`` is the median over the
complete steps of end minus start: a leak is growth in every step.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.memory.categories import Listed
from steptrace.analysis.memory.holders import (
    DeviceEvents,
    PeakHolders,
    categorized,
    holders,
    name_of,
)
from steptrace.analysis.time.links import CpuTree
from steptrace.analysis.time.steps import StepWindow, label_rows
from steptrace.scenario import Inventory
from steptrace.trace.fields import ABSENT
from steptrace.trace.nesting import parents
from steptrace.trace.table import EventTable, InstantTable

Ints = NDArray[np.int64]
_ALLOCATION_ONLY = re.compile(
    r"^aten::(empty|empty_like|empty_strided|new_empty|new_empty_strided|resize_)$"
)
_DEVICE_TYPES = {0: "cpu", 1: "cuda"}


class LabelMemory(msgspec.Struct, frozen=True):
    """A label in one step, on one device: the most allocated while it ran, its growth."""

    name: str
    peak_allocated_bytes: int
    growth_bytes: int  # allocated at its end minus at its start, summed over its instances


class MemoryStep(msgspec.Struct, frozen=True):
    step: str
    start_allocated_bytes: int
    peak_allocated_bytes: int
    peak_reserved_bytes: int
    end_allocated_bytes: int
    allocations: int  # events with Bytes > 0
    allocated_bytes: int  # their bytes
    peak_at_us: float  # same frame as steps[].start_us
    peak_label: str | None  # the innermost label around the allocation that made the peak
    peak_operator: str | None  # the operator that made it
    held: PeakHolders
    labels: tuple[LabelMemory, ...]

    @property
    def growth_bytes(self) -> int:
        return self.end_allocated_bytes - self.start_allocated_bytes


class DeviceMemory(msgspec.Struct, frozen=True):
    device: str  # "cpu", "cuda:0", ...
    steps: tuple[MemoryStep, ...]
    growth_bytes_per_step: float  # median over the complete steps of end minus start


class MemoryAnalysis(msgspec.Struct, frozen=True):
    devices: tuple[DeviceMemory, ...]


def memory_per_step(
    events: EventTable,
    instants: InstantTable | None,
    windows: tuple[StepWindow, ...],
    tree: CpuTree,
    counted: tuple[StepWindow, ...] | None = None,
    inventory: Inventory | None = None,
) -> MemoryAnalysis | None:
    """Every device's steps (see module); ``counted``: the complete steps (default all);
    ``inventory``: a steptrace capture's tensors, to say what holds each peak."""
    if instants is None:
        return None
    rows = np.flatnonzero(
        instants.named("[memory]") & (instants.column("total_allocated") != ABSENT)
    )
    if rows.size == 0:
        return None
    kind = instants.column("device_type")[rows]
    index = instants.column("device_id")[rows]
    labels = label_rows(events)
    operator, label = _allocators(events, instants, rows, tree, labels)
    complete = {(w.name, w.start_us) for w in (counted or windows)}
    devices = []
    for device_type, device_id in sorted(set(zip(kind.tolist(), index.tolist(), strict=True))):
        mine = (kind == device_type) & (index == device_id)
        found = _device_events(instants, rows[mine], operator[mine], label[mine])
        name = _device_name(device_type, device_id)
        steps = tuple(
            _step(events, found, labels, w, Listed.of(inventory, name, w.name), name == "cpu")
            for w in windows
        )
        growth = [
            s.growth_bytes
            for s, w in zip(steps, windows, strict=True)
            if (w.name, w.start_us) in complete
        ]
        devices.append(
            DeviceMemory(
                device=name,
                steps=steps,
                growth_bytes_per_step=float(np.median(growth)) if growth else 0.0,
            )
        )
    return MemoryAnalysis(tuple(devices))


def memory_warnings(instants: InstantTable | None, analysis: MemoryAnalysis | None) -> list[str]:
    """What the trace's memory events could not say."""
    if instants is None or analysis is not None:
        return []
    memory = instants.named("[memory]")
    if not memory.any():
        return []
    return [
        f"{int(memory.sum())} [memory] events carry no Total Allocated (an older trace): "
        "the memory per step is not observed"
    ]


def _device_name(device_type: int, device_id: int) -> str:
    kind = _DEVICE_TYPES.get(device_type, f"device-type-{device_type}")
    return kind if kind == "cpu" else f"{kind}:{device_id}"


def _device_events(instants: InstantTable, rows: Ints, operator: Ints, label: Ints) -> DeviceEvents:
    column = instants.column
    return DeviceEvents(
        at_us=instants.at_us[rows],
        addr=column("addr")[rows],
        moved=np.where(column("bytes")[rows] == ABSENT, 0, column("bytes")[rows]),
        allocated=column("total_allocated")[rows],
        reserved=np.where(
            column("total_reserved")[rows] == ABSENT, 0, column("total_reserved")[rows]
        ),
        operator=operator,
        label=label,
    )


def _allocators(
    events: EventTable, instants: InstantTable, rows: Ints, tree: CpuTree, labels: Ints
) -> tuple[Ints, Ints]:
    """Per memory event: the name id of the operator that allocated (an allocation-only one
    climbed to its parent) and of the innermost label around it, on its thread; -1 if none."""
    allocations = rows[instants.column("bytes")[rows] > 0]  # a free's allocator is not read
    at, thread = instants.at_us[allocations], instants.thread_id[allocations]
    op = _innermost_operator(events, tree, at, thread)  # indices into tree.ops
    allocation_only = np.array([bool(_ALLOCATION_ONLY.match(n)) for n in events.names], dtype=bool)
    while (climb := (op >= 0) & allocation_only[_names_at(events, tree.ops, op)]).any():
        op[climb] = tree.op_parent[op[climb]]
    operator = np.full(rows.size, -1, dtype=np.int64)
    label = np.full(rows.size, -1, dtype=np.int64)
    placed = np.searchsorted(rows, allocations)
    operator[placed] = np.where(op >= 0, _names_at(events, tree.ops, op), -1)
    inside = _innermost_of(events, labels, at, thread)
    label[placed] = np.where(inside >= 0, _names_at(events, labels, inside), -1)
    return operator, label


def _innermost_operator(
    events: EventTable, tree: CpuTree, at: NDArray[np.float64], thread: NDArray[np.int32]
) -> Ints:
    """Per time (on its thread): the index into ``tree.ops`` of the innermost operator open
    at it, or -1: the last operator of the thread begun by then, climbed up the tree while
    it had ended (an operator open at a time contains every later-begun one still open)."""
    found = np.full(at.size, -1, dtype=np.int64)
    ops = tree.ops
    if ops.size == 0:  # a trace of labels alone
        return found
    for each in np.unique(thread).tolist():
        mine = np.flatnonzero(events.thread_id[ops] == each)  # by start, as the table is
        points = np.flatnonzero(thread == each)
        if mine.size == 0:
            continue
        begun = np.searchsorted(events.start_us[ops[mine]], at[points], side="right") - 1
        found[points] = np.where(begun >= 0, mine[np.maximum(begun, 0)], -1)
    ended = events.end_us[ops]
    while (climb := (found >= 0) & (ended[np.maximum(found, 0)] <= at)).any():
        found[climb] = tree.op_parent[found[climb]]
    return found


def _innermost_of(
    events: EventTable, rows: Ints, at: NDArray[np.float64], thread: NDArray[np.int32]
) -> Ints:
    """``_innermost`` among the ``rows`` on the times' threads only (the others can contain
    none of them): indices into ``rows``, or -1."""
    if rows.size == 0 or thread.size == 0:
        return np.full(at.size, -1, dtype=np.int64)
    on = np.flatnonzero(np.isin(events.thread_id[rows], np.unique(thread)))
    found = _innermost(events, rows[on], at, thread)
    return np.where(found >= 0, on[np.maximum(found, 0)], -1) if on.size else found


def _names_at(events: EventTable, rows: Ints, index: Ints) -> Ints:
    """The name id of ``rows[index]`` (any where ``index`` is -1, to be masked)."""
    if rows.size == 0:
        return np.zeros(index.size, dtype=np.int64)
    found: Ints = events.name_id[rows[np.maximum(index, 0)]].astype(np.int64)
    return found


def _innermost(
    events: EventTable, rows: Ints, at: NDArray[np.float64], thread: NDArray[np.int32]
) -> Ints:
    """Per time (on its thread): the index into ``rows`` of the innermost of them open at
    it, or -1: each time is nested among them as an event of no duration (``nesting``)."""
    start = np.concatenate((events.start_us[rows], at))
    end = np.concatenate((events.end_us[rows], at))
    threads = np.concatenate((events.thread_id[rows], thread))
    found = parents(start, end, threads)[rows.size :]
    return np.where(found < rows.size, found, -1)  # a point is never a container


def _step(
    events: EventTable,
    found: DeviceEvents,
    labels: Ints,
    window: StepWindow,
    listed: Listed | None,
    cpu: bool,
) -> MemoryStep:
    lo, hi = np.searchsorted(found.at_us, [window.start_us, window.end_us], side="left")
    moved, allocated = found.moved[lo:hi], found.allocated[lo:hi]
    start = int(allocated[0] - moved[0]) if hi > lo else _level_before(found, lo)
    if hi == lo:  # nothing moved on this device in the step
        return _quiet_step(window, start, found, lo)
    peak_at = int(np.argmax(allocated))  # the first event reaching the most
    peak = int(allocated[peak_at])
    if start >= peak:  # the step began as high as it ever got: the start is its peak
        peak_at, peak = -1, start
    held = holders(events, found, (lo, lo + peak_at + 1, hi), start)
    if listed is not None:
        held = categorized(held, found, (lo, lo + peak_at + 1, hi), listed, cpu)
    grew = moved > 0
    return MemoryStep(
        step=window.name,
        start_allocated_bytes=start,
        peak_allocated_bytes=peak,
        peak_reserved_bytes=int(found.reserved[lo:hi].max()),
        end_allocated_bytes=int(allocated[-1]),
        allocations=int(grew.sum()),
        allocated_bytes=int(moved[grew].sum()),
        peak_at_us=float(found.at_us[lo + peak_at]) if peak_at >= 0 else window.start_us,
        peak_label=name_of(events, int(found.label[lo + peak_at])) if peak_at >= 0 else None,
        peak_operator=name_of(events, int(found.operator[lo + peak_at])) if peak_at >= 0 else None,
        held=held,
        labels=_labels(events, found, labels, window, start),
    )


def _level_before(found: DeviceEvents, at: int) -> int:
    """The device's allocated bytes before event ``at`` (0 with no event before it)."""
    return int(found.allocated[at - 1]) if at > 0 else 0


def _quiet_step(window: StepWindow, level: int, found: DeviceEvents, at: int) -> MemoryStep:
    reserved = int(found.reserved[at - 1]) if at > 0 else 0
    return MemoryStep(
        step=window.name,
        start_allocated_bytes=level,
        peak_allocated_bytes=level,
        peak_reserved_bytes=reserved,
        end_allocated_bytes=level,
        allocations=0,
        allocated_bytes=0,
        peak_at_us=window.start_us,
        peak_label=None,
        peak_operator=None,
        held=PeakHolders(level, 0, (), (), 0),
        labels=(),
    )


def _labels(
    events: EventTable, found: DeviceEvents, labels: Ints, window: StepWindow, start: int
) -> tuple[LabelMemory, ...]:
    """Each label that began in the step (on its thread): the most allocated while it ran,
    its net growth; a name's instances together (the largest peak, the summed growth)."""
    rows = labels[
        (events.start_us[labels] >= window.start_us) & (events.start_us[labels] < window.end_us)
    ]
    if window.thread >= 0:
        rows = rows[events.thread_id[rows] == window.thread]
    if rows.size == 0:
        return ()
    allocated = found.allocated
    lo = np.searchsorted(found.at_us, events.start_us[rows])
    hi = np.searchsorted(found.at_us, events.end_us[rows])
    first = allocated[0] - found.moved[0] if allocated.size else start
    before = np.where(lo > 0, allocated[np.maximum(lo - 1, 0)], first)
    ran = hi > lo
    after = np.where(ran, allocated[np.maximum(hi - 1, 0)], before)
    top = before.copy()
    if ran.any():  # the most during each label that saw events: segments lo:hi
        bounds = np.stack((lo[ran], hi[ran]), axis=1).reshape(-1)
        during = np.maximum.reduceat(np.append(allocated, 0), bounds)[::2]
        top[ran] = np.maximum(top[ran], during)
    peaks: dict[int, int] = {}
    growth: dict[int, int] = {}
    names = events.name_id[rows].tolist()
    for name, most, grew in zip(names, top.tolist(), (after - before).tolist(), strict=True):
        peaks[name] = max(peaks.get(name, most), most)
        growth[name] = growth.get(name, 0) + grew
    return tuple(LabelMemory(events.names[n], peaks[n], growth[n]) for n in peaks)


def _figure(context: TraceContext) -> MemoryAnalysis | None:
    return memory_per_step(
        context.events,
        context.trace.instants,
        context.windows,
        context.tree,
        context.counted,
        context.inventory,
    )


FIGURE = FigureSpec("memory", _figure, frozenset({"steps", "tree"}), groups=frozenset({"instants"}))
