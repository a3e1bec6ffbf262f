"""``trace_handler``: a drop-in for ``torch.profiler.tensorboard_trace_handler`` that keeps
the question with each trace.

    with torch.profiler.profile(
        schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1),
        on_trace_ready=steptrace.capturing.trace_handler("traces", scenario=scenario),
    ) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()

Each call (each saved cycle, and the profiler's stop when it cuts a cycle short) writes
``<dir>/rank<R>.<time_ns>.pt.trace.json.gz`` (R from torch.distributed when it is
initialised; else ``<worker>.<time_ns>...``, the worker name given or ``host_pid`` as
torch's handler does) and its ``.scenario.json`` sidecar. Nothing is ever overwritten: the
names are created exclusively. The scenario and the capture facts (the schedule read from
the profiler, its options, the torch version, the step a stop cut short) are embedded in
the trace as its ``steptrace`` block and written to the sidecar. A schedule that repeats
forever (``repeat=0``, Accelerate's ``schedule_option`` without ``repeat``) is warned
about once: every cycle is one more file, and the stop writes the last partial one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from isal import igzip

from steptrace.capturing import files
from steptrace.capturing.schedule_probe import ScheduleShape, probe
from steptrace.errors import CaptureError, CaptureWarning
from steptrace.process import outputs
from steptrace.scenario import (
    OPTION_COSTS,
    TRACE_METADATA_KEY,
    CaptureFacts,
    Scenario,
    record_payload,
    sidecar_path,
)
from steptrace.window import Window

TRACE_SUFFIX = ".pt.trace.json.gz"
_HEAD_BYTES = 64 * 1024
_UNSAFE = re.compile(r"[^\w.-]")


def worker_label(worker_name: str | None = None) -> str:
    """``rank<R>`` when torch.distributed is initialised, else the worker name, else host_pid."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return f"rank{dist.get_rank()}"
    name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
    return _UNSAFE.sub("_", name)


def free_trace_path(directory: Path, label: str) -> Path:
    """``<directory>/<label>.<time_ns>.pt.trace.json.gz``, a name neither it nor its sidecar has.

    Free when returned; ``files.reserve_trace`` (a ``Capture``) takes it exclusively.
    """
    stamp = time.time_ns()
    for attempt in range(1000):
        path = directory / f"{label}.{stamp + attempt}{TRACE_SUFFIX}"
        if not path.exists() and not sidecar_path(path).exists():
            return path
    raise CaptureError(f"{directory}: no free trace name for {label} (1000 tried)")


def new_trace_path(directory: Path, label: str) -> Path:
    """Reserve a free trace name (``free_trace_path``) and its sidecar, exclusively."""
    for _ in range(100):
        path = free_trace_path(directory, label)
        try:
            files.reserve_trace(path)
        except CaptureError:
            if path.exists() or sidecar_path(path).exists():
                continue  # taken between the check and the creation: try the next name
            raise
        return path
    raise CaptureError(f"{directory}: no free trace name for {label}")


class TraceHandler:
    """The ``on_trace_ready`` callable ``trace_handler`` returns; ``written`` lists its files."""

    def __init__(self, directory: Path, scenario: Scenario, worker_name: str | None) -> None:
        self.directory = directory
        self.scenario = scenario
        self.worker_name = worker_name
        self.written: list[Path] = []
        self._shape: ScheduleShape | None = None

    def __call__(self, prof: Any) -> None:
        """Export ``prof``'s trace with the scenario embedded, and its sidecar."""
        if self._shape is None:
            self._shape = probe(prof.schedule)
            if self._shape.forever:
                warnings.warn(_forever_warning(self._shape.window), CaptureWarning, stacklevel=2)
        path = new_trace_path(self.directory, worker_label(self.worker_name))
        try:
            facts = self._facts(prof, path)
            payload = json.dumps(record_payload(self.scenario, facts))
            _export_with(prof, path, payload)
            text = json.dumps(json.loads(payload), indent=2) + "\n"
            outputs.replace(sidecar_path(path), text.encode())
        except BaseException:
            files.release(path)
            files.release(sidecar_path(path))
            raise
        self.written.append(path)

    def _facts(self, prof: Any, path: Path) -> CaptureFacts:
        import torch

        assert self._shape is not None
        window = _with_options(self._shape.window, prof)
        cut = _cut_step(prof)
        said = [_forever_warning(self._shape.window)] if self._shape.forever else []
        if cut is not None:
            said.append(
                f"the profiler stopped inside ProfilerStep#{cut}: the analysis marks it "
                "partial and leaves it out of the step figures"
            )
        options = window.options if window is not None else {}
        said += [
            f"{name} was on: {cost}" for name, cost in OPTION_COSTS.items() if options.get(name)
        ]
        return CaptureFacts(
            traces=(str(path),),
            sidecar=str(sidecar_path(path)),
            window=window,
            torch_version=str(torch.__version__),
            partial_step=cut,
            warnings=tuple(said),
        )


def trace_handler(
    dir_name: str | Path, *, scenario: Scenario, worker_name: str | None = None
) -> TraceHandler:
    """An ``on_trace_ready`` for torch.profiler that writes steptrace-ready traces.

    A drop-in for ``torch.profiler.tensorboard_trace_handler(dir_name, worker_name,
    use_gzip=True)``: ``<dir_name>/rank<R>.<time_ns>.pt.trace.json.gz`` (the rank from
    torch.distributed when initialised, else ``worker_name`` or host_pid), never
    overwriting, with ``scenario`` and the capture facts embedded and in a
    ``.scenario.json`` sidecar. Warns (``CaptureWarning``) when the schedule repeats
    forever. ``steptrace analyze <dir_name>`` reads the files: one job's ranks (each says
    its rank) as one job, the files of one process (cycles) one report each.
    """
    return TraceHandler(Path(dir_name), scenario, worker_name)


def _with_options(window: Window | None, prof: Any) -> Window | None:
    if window is None:
        return None
    import msgspec

    return msgspec.structs.replace(
        window,
        record_shapes=bool(prof.record_shapes),
        profile_memory=bool(prof.profile_memory),
        with_stack=bool(prof.with_stack),
        with_flops=bool(prof.with_flops),
    )


def _cut_step(prof: Any) -> int | None:
    """N of the ProfilerStep#N the profiler's stop cut short, when this call is the stop's.

    At a cycle's end (``step()``) the step before the current one saved the cycle; at the
    stop the current step is still recording and the one before did not save. (A stop in
    the first step of a cycle without wait and warm-up is not told apart.)
    """
    from torch.profiler import ProfilerAction

    recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
    if prof.current_action not in recording:
        return None
    if prof.step_num > 0 and prof.schedule(prof.step_num - 1) == ProfilerAction.RECORD_AND_SAVE:
        return None
    return int(prof.step_num)


def _forever_warning(window: Window | None) -> str:
    cycle = f" of {window.cycle} steps" if window is not None else ""
    return (
        f"the profiler's schedule repeats its cycle{cycle} forever (repeat=0; Accelerate's "
        "schedule_option without 'repeat'): each cycle is written as one more trace and the "
        "profiler's stop writes the last, partial cycle too; set repeat=1 for one window"
    )


def _export_with(prof: Any, path: Path, payload: str) -> None:
    """Export ``prof``'s trace to ``path`` (gzip) with ``payload`` as its steptrace block."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".steptrace-", suffix=".part")
    os.close(handle)
    try:
        prof.export_chrome_trace(temporary)
        with Path(temporary).open("rb") as source, igzip.open(path, "wb", compresslevel=1) as out:
            head = source.read(_HEAD_BYTES)
            brace = head.find(b"{")
            if brace >= 0:  # a Kineto document: the block becomes its first key
                block = json.dumps(TRACE_METADATA_KEY).encode() + b": " + payload.encode()
                head = head[: brace + 1] + block + b"," + head[brace + 1 :]
            out.write(head)
            shutil.copyfileobj(source, out, 1024 * 1024)
    finally:
        Path(temporary).unlink(missing_ok=True)
