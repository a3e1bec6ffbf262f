"""Memory per step as a section: each device's steps, what holds the peak, the labels.

``memory(report)`` reads ``analysis.memory``: a table of every device and step (allocated
at the start, at the peak and where, reserved, growth, allocations and how many times the
peak they moved), then for each device the step of its largest peak and what holds it (alive
since the step began, allocated in the step and still alive: by kind of tensor when
steptrace's capture listed them, by operator and by label), then
each label's peak and growth. Without ``[memory]`` events it says memory was not observed
and how to record it.
"""

from __future__ import annotations

from steptrace.analysis.memory.usage import DeviceMemory, MemoryStep
from steptrace.analysis.spread import Spread
from steptrace.report.document import Cell, Column, Paragraph, Section, Table
from steptrace.report.model import Report
from steptrace.units import size

KEY = "memory"
SHOWN_FROM_BYTES = 2**20  # what holds a device's peak is shown from this peak on
HEADING = "Memory per step (allocated bytes, profile_memory)"
NOT_RECORDED = (
    "Memory: not observed: the trace holds no [memory] events with Total Allocated "
    "(capture with profile_memory=True: steptrace profile or investigate --memory)."
)


def memory(report: Report) -> Section:
    found = report.analysis.memory
    if found is None:
        return Section(KEY, HEADING, (Paragraph(NOT_RECORDED),))
    blocks: list[Paragraph | Table] = [_steps_table(found.devices)]
    for device in (d for d in found.devices if _peak(d) >= SHOWN_FROM_BYTES):
        blocks += _held(device)
    labels = _labels_table(tuple(d for d in found.devices if _peak(d) >= SHOWN_FROM_BYTES))
    return Section(KEY, HEADING, (*blocks, *((labels,) if labels else ())))


def _peak(device: DeviceMemory) -> int:
    return max((s.peak_allocated_bytes for s in device.steps), default=0)


def _steps_table(devices: tuple[DeviceMemory, ...]) -> Table:
    rows = tuple(_step_row(d, s) for d in devices for s in d.steps)
    cpu = any(d.device == "cpu" for d in devices)
    caption = (
        "Allocated bytes as the allocator counts them, per device, each step [start, end) of its "
        "ProfilerStep span; the peak includes the start; growth is end minus start"
    )
    if cpu:
        caption += (
            "; on the CPU the counts start with the profiler (what was allocated before, the "
            "parameters, is in no figure) and nothing is reserved"
        )
    return Table(
        (
            Column("device", "text"),
            Column("step", "name"),
            Column("start", "bytes"),
            Column("peak", "bytes"),
            Column("peak in", "name"),
            Column("reserved", "bytes"),
            Column("growth", "bytes"),
            Column("allocations", "count"),
            Column("allocated", "bytes"),
            Column("× peak", "ratio"),
        ),
        rows,
        caption=caption + ".",
    )


def _step_row(device: DeviceMemory, step: MemoryStep) -> tuple[Cell, ...]:
    where = " / ".join(n for n in (step.peak_label, step.peak_operator) if n) or "the step's start"
    moved = (
        step.allocated_bytes / step.peak_allocated_bytes if step.peak_allocated_bytes > 0 else None
    )
    return (
        device.device,
        step.step,
        step.start_allocated_bytes,
        step.peak_allocated_bytes,
        where,
        step.peak_reserved_bytes,
        step.growth_bytes,
        step.allocations,
        step.allocated_bytes,
        moved,
    )


def _held(device: DeviceMemory) -> list[Paragraph | Table]:
    """What holds the device's largest peak: a sentence, then its holders by operator."""
    top = max(device.steps, key=lambda s: s.peak_allocated_bytes)
    if not top.allocations:
        return []
    held = top.held
    labels = ", ".join(f"{h.name} {size(h.bytes)}" for h in held.by_label[:4]) or "none"
    sentence = (
        f"{device.device}: its largest peak, {size(top.peak_allocated_bytes)} in {top.step}, "
        f"is {size(held.alive_from_start_bytes)} alive since the step began and "
        f"{size(held.allocated_in_step_bytes)} allocated in the step and still alive (by "
        f"label: {labels}). Growth per step: {size(device.growth_bytes_per_step)} (median "
        "over the complete steps)."
    )
    kinds = _by_kind(top)
    found: list[Paragraph | Table] = [Paragraph(sentence), *((kinds,) if kinds else ())]
    if not held.by_operator:
        return found
    shown = len(held.by_operator)
    table = Table(
        (Column("operator that allocated", "name"), Column("alive at the peak", "bytes")),
        tuple((h.name, h.bytes) for h in held.by_operator),
        caption=(
            f"Allocated in {top.step} and alive at its peak, by operator (an allocation-only "
            f"operator such as aten::empty under its parent); {shown} of {held.operators_total}."
        ),
    )
    return [*found, table]


def _by_kind(step: MemoryStep) -> Table | None:
    """What holds the peak by kind of tensor, from steptrace's capture (None without it)."""
    held = step.held
    if not held.by_category:
        return None
    rows = tuple(
        (part, h.name, h.bytes, h.bytes / step.peak_allocated_bytes)
        for part, holders in (
            ("since the step began", held.from_start_by_category),
            ("allocated in the step", held.by_category),
        )
        for h in holders
    )
    caption = (
        f"What holds the peak of {step.step}, by kind: the tensors steptrace's capture listed "
        "(parameters and optimizer state after the window, each step's gradients and batch at "
        "its end), matched by address; allocated in the step and freed before its end: "
        "activations and temporaries"
    )
    if not held.from_start_by_category:
        caption += "; what was alive since the step began is not split (a CPU's counts start "
        caption += "with the profiler, or the listed tensors exceed them)"
    return Table(
        (
            Column("part", "text"),
            Column("kind", "name"),
            Column("alive at the peak", "bytes"),
            Column("of the peak", "share"),
        ),
        rows,
        caption=caption + ".",
    )


def _labels_table(devices: tuple[DeviceMemory, ...]) -> Table | None:
    """Each label's peak (the most over the steps) and growth (median [min-max])."""
    rows = []
    for device in devices:
        peaks: dict[str, int] = {}
        growth: dict[str, list[float]] = {}
        for step in device.steps:
            for label in step.labels:
                peaks[label.name] = max(
                    peaks.get(label.name, label.peak_allocated_bytes), label.peak_allocated_bytes
                )
                growth.setdefault(label.name, []).append(label.growth_bytes)
        rows += [(device.device, n, peaks[n], Spread.of(growth[n])) for n in peaks]
    if not rows:
        return None
    return Table(
        (
            Column("device", "text"),
            Column("label", "name"),
            Column("peak while it ran", "bytes"),
            Column("growth", "bytes"),
        ),
        tuple(rows),
        caption="Per label, over the steps: the most allocated while it ran; its growth (end "
        "minus start).",
    )
