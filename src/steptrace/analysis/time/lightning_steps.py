"""Lightning's training batches as the steps, where the profiler's markers cut through them.

Contract: ``lightning_batches(events, markers) -> tuple[Batch, ...] | None``, pure
(``markers``: the ``(start_us, end_us)`` of every ``ProfilerStep#N``).
Lightning's own ``PyTorchProfiler`` steps torch.profiler at the end of each
``training_step`` (the forward pass), so its ``ProfilerStep#N`` windows begin in the middle
of one batch (before its backward and optimizer step) and end in the middle of the next.
When a trace holds ``[pl][profile]run_training_batch`` labels and a marker boundary falls
strictly inside one of them, the steps are Lightning's batches instead: each runs from the
start of the ``[pl][profile][_TrainingEpochLoop].train_dataloader_next`` label that began
after the previous batch ended on the same thread (reading the batch; moving it to the
device follows) — else from its own start — to the end of its ``run_training_batch``. A
batch is kept only when it lies wholly inside the markers' span (the recorded window): the
last one usually ends after the profiler stopped, its backward unrecorded. Batches come in
time order (``steptrace.analysis.time.steps`` names them ``run_training_batch#k``, k from 1).
None: the markers stand as they are (no Lightning batch label, none cut, or no complete
batch recorded).
"""

from __future__ import annotations

import msgspec
import numpy as np

from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable

BATCH_LABEL = "[pl][profile]run_training_batch"
READ_LABEL = "[pl][profile][_TrainingEpochLoop].train_dataloader_next"
BATCH_NAME = "run_training_batch"
Bounds = tuple[tuple[float, float], ...]


class Batch(msgspec.Struct, frozen=True):
    """One Lightning batch: its thread (index in the event table) and its span (µs)."""

    thread: int
    start_us: float
    end_us: float


def _spans(events: EventTable, label: str) -> list[tuple[int, float, float]]:
    """(thread, start, end) of every CPU annotation named ``label``, in time order."""
    if label not in events.names:
        return []
    name_id = events.names.index(label)
    rows = np.flatnonzero((events.kind == Kind.USER_ANNOTATION) & (events.name_id == name_id))
    found = [
        (int(events.thread_id[r]), float(events.start_us[r]), float(events.end_us[r]))
        for r in rows.tolist()
    ]
    return sorted(found, key=lambda span: span[1])


def _cut(batches: list[tuple[int, float, float]], markers: Bounds) -> bool:
    bounds = {start for start, _ in markers} | {end for _, end in markers}
    return any(start < b < end for _, start, end in batches for b in bounds)


def lightning_batches(events: EventTable, markers: Bounds) -> tuple[Batch, ...] | None:
    """Lightning's batches as step windows, or None (see the module's contract)."""
    batches = _spans(events, BATCH_LABEL)
    if not batches or not markers or not _cut(batches, markers):
        return None
    reads = _spans(events, READ_LABEL)
    first = min(start for start, _ in markers)
    last = max(end for _, end in markers)
    windows: list[Batch] = []
    previous_end: dict[int, float] = {}
    for thread, start, end in batches:
        after = previous_end.get(thread, -np.inf)
        began = [s for t, s, _ in reads if t == thread and after <= s < start]
        begin = began[-1] if began else start
        previous_end[thread] = end
        if begin >= first and end <= last:
            windows.append(Batch(thread, begin, end))
    return tuple(windows) or None
