"""``Capture``: one labelled profiling window, the core of every capture.

It refuses before anything runs (an existing output, a GPU that cannot be observed), runs
torch.profiler with a schedule (wait / warm-up / active) and minimal options unless asked,
writes the scenario into the trace and beside it, and after the window checks that a GPU
that was asked for really appears in the trace (on the CPU with shapes recorded, it then
measures the CPU's roofs for the roofline: ``capturing.peaks``). A loop that stops
before the schedule's end is warned about: the facts record the active steps run and the
step the profiler's stop cut short (``partial_step``, which the analysis marks partial);
a window in which no active step completed is not kept (none at all is an error).
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Any

import msgspec
import torch
from torch.profiler import profile, record_function, schedule

from steptrace import devices
from steptrace.capturing import files
from steptrace.capturing.measured.compiles import CompileLog
from steptrace.capturing.measured.peaks import measure_cpu_peaks
from steptrace.capturing.result import CaptureResult
from steptrace.errors import CaptureError, CaptureWarning
from steptrace.process import ctrl_c, outputs
from steptrace.process.machine import cpu_load
from steptrace.process.quiet import without_usdt_lines
from steptrace.scenario import (
    OPTION_COSTS,
    TRACE_METADATA_KEY,
    CaptureFacts,
    CpuFacts,
    MeasuredPeaks,
    Scenario,
    record_payload,
    sidecar_path,
)
from steptrace.trace.kinds import GPU_WORK
from steptrace.trace.load import load_trace
from steptrace.window import Window


class Capture(AbstractContextManager["Capture"]):
    """A profiling window for any loop (Lightning, Hugging Face, hand-written).

        with steptrace.capture(scenario, out="run/trace.json") as run:
            for batch in loader:
                with run.phase("read_batch"):
                    ...
                run.step()
                if run.done:
                    break
        print(run.result)

    ``steptrace.capture`` is this class; ``profile_training`` and ``profile_inference`` use
    it too.
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        out: str | Path,
        window: Window | None = None,
        sync_steps: bool = False,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        """``window``: the schedule and options (``Window()`` by default); ``sync_steps``
        waits for the device at each step boundary."""
        self.scenario = scenario
        self.window = window or Window()
        self.device = devices.resolve(scenario.device)
        self._activities = devices.activities(self.device)  # refuses an unobservable GPU
        self.total_steps = self.window.profiled_steps
        self._active_from = self.window.wait + self.window.warmup
        self._paths = [files.cycle_path(Path(out), k) for k in range(self.window.repeat)]
        self._sync_steps = sync_steps
        self._clock = clock
        self.steps_done = 0
        self.step_ms: list[float] = []  # active steps, wall clock
        self._exported = 0
        self._profiler: profile | None = None
        self._last = 0.0
        self.result: CaptureResult | None = None
        self._cpu: CpuFacts | None = None
        self._compiles = CompileLog()  # from here: the cold steps compile first

    # -- the window -------------------------------------------------------------------
    def __enter__(self) -> Capture:
        self._cpu = cpu_facts()
        self._reserve()
        try:
            self._start()
        except BaseException:  # Ctrl-C too
            self._release()  # nothing was recorded: leave no placeholder behind
            raise
        return self

    def _start(self) -> None:
        window = self.window
        self._profiler = profile(
            activities=self._activities,
            schedule=schedule(
                wait=window.wait, warmup=window.warmup, active=window.active, repeat=window.repeat
            ),
            on_trace_ready=self._export,
            record_shapes=window.record_shapes,
            profile_memory=window.profile_memory,
            with_stack=window.with_stack,
            with_flops=window.with_flops,
        )
        with (
            without_usdt_lines()
        ):  # kineto's "USDT: ... profiler_start" (see steptrace.process.quiet)
            self._profiler.__enter__()
        self._label_window()
        self._mark()

    def _label_window(self) -> None:
        """Write the scenario into the trace; kineto keeps it only once recording began."""
        if self.active_now and self.steps_done % self.window.cycle == self._active_from:
            assert self._profiler is not None
            payload = record_payload(self.scenario, self._facts())
            self._profiler.add_metadata_json(TRACE_METADATA_KEY, json.dumps(payload))

    @property
    def first_trace(self) -> Path:
        """The trace of the first active window (what is written beside it is named after
        it)."""
        return self._paths[0]

    @property
    def active_now(self) -> bool:
        """Is the step about to run inside an active (recorded) window?"""
        return self.steps_done % self.window.cycle >= self._active_from and not self.done

    @property
    def recording(self) -> bool:
        """Inside the with-block, in a step the profiler records."""
        return self._profiler is not None and self.active_now

    @property
    def profiler_step(self) -> int:
        """N of the ``ProfilerStep#N`` running now (the profiler's label of this step)."""
        return self._profiler.step_num if self._profiler is not None else -1

    @property
    def done(self) -> bool:
        """All scheduled steps have run: a custom loop can stop."""
        return self.steps_done >= self.total_steps

    def phase(self, name: str) -> AbstractContextManager[Any]:
        """Label a part of the step (``record_function``)."""
        return record_function(name)

    def step(self) -> None:
        """End a step: time it, and advance the profiler's schedule."""
        if self._profiler is None:
            raise CaptureError("step() called outside the capture's with-block")
        was_active = self.active_now
        if self._sync_steps:
            devices.synchronize(self.device)
        now = self._clock()
        if was_active:
            self.step_ms.append((now - self._last) * 1000)
        ctrl_c.check()  # a Ctrl-C the step caught for itself stops the capture all the same
        self.steps_done += 1
        profiler = self._profiler
        if profiler.current_action != profiler.schedule(profiler.step_num + 1):
            with without_usdt_lines():  # recording starts or stops in this call
                profiler.step()
        else:
            profiler.step()
        self._label_window()
        self._last = self._clock()

    def _mark(self) -> None:
        if self._sync_steps:
            devices.synchronize(self.device)
        self._last = self._clock()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        try:
            self._end(kind, error, trace)
        except BaseException:  # the loop's error, Ctrl-C, a trace that could not be written
            self._release()
            raise

    def _end(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        assert self._profiler is not None
        cut = self.steps_done if error is None and self.active_now else None
        if cut is not None:  # the loop ended inside an active step: say so in the trace too
            self._profiler.add_metadata_json(
                TRACE_METADATA_KEY, json.dumps(record_payload(self.scenario, self._ended(cut)))
            )
        with without_usdt_lines():
            self._profiler.__exit__(kind, error, trace)
        if error is not None:
            self._release()
            return
        if self._exported > 0 and self._completed_in_last() == 0:
            self._drop_last()  # it holds only the step the stop cut short
            cut = None
        if self._exported == 0:
            self._release()
            raise CaptureError(
                f"the loop ran {self.steps_done} of the {self.total_steps} scheduled steps "
                f"(wait {self.window.wait} + warmup {self.window.warmup} + active "
                f"{self.window.active}): no active step completed, so no trace was kept"
            )
        self.result = self._finish(cut)

    def _ended(self, cut: int | None) -> CaptureFacts:
        """The facts known when the window ends: active steps run, the step cut short."""
        return self._facts(active_steps_run=len(self.step_ms), partial_step=cut)

    def _completed_in_last(self) -> int:
        """Active steps completed in the last window written."""
        return len(self.step_ms) - (self._exported - 1) * self.window.active

    def _drop_last(self) -> None:
        self._exported -= 1
        path = self._paths[self._exported]
        files.release(path)
        files.release(sidecar_path(path))

    # -- files --------------------------------------------------------------------------
    def _reserve(self) -> None:
        reserved: list[Path] = []
        try:
            for path in self._paths:
                reserved += files.reserve_trace(path)
        except BaseException:  # a name taken, Ctrl-C: only what this capture created goes
            for path in reserved:
                files.release(path)
            raise

    def _release(self) -> None:
        for path in self._paths:
            files.release(path)
            files.release(sidecar_path(path))

    def _export(self, prof: profile) -> None:
        if self._exported < len(self._paths):
            path = self._paths[self._exported]
            partial = Path(f"{path}.tmp")  # kineto writes there, then renames
            ours = not partial.exists()
            try:
                prof.export_chrome_trace(str(path))
            finally:
                if ours:  # left by a write that failed (a full disk)
                    partial.unlink(missing_ok=True)
        self._exported += 1

    def _facts(self, **fields: Any) -> CaptureFacts:
        return CaptureFacts(
            window=self.window, torch_version=str(torch.__version__), cpu=self._cpu, **fields
        )

    def _finish(self, cut: int | None) -> CaptureResult:
        written = self._paths[: self._exported]
        for path in written:
            if path.stat().st_size == 0:  # kineto says why on stderr, and goes on
                raise CaptureError(f"{path}: the profiler could not write the trace (disk full?)")
        for path in self._paths[self._exported :]:
            files.release(path)
            files.release(sidecar_path(path))
        warned = [] if self.done else [self._ended_early(cut)]
        gpu_requested = devices.wants_gpu(self.device)
        gpu_observed = all(load_trace(p, groups=()).events.mask(*GPU_WORK).any() for p in written)
        if gpu_requested and not gpu_observed:
            warned.append(
                f"the scenario asked for {self.device} but a trace holds no GPU event: GPU "
                "collection failed, and nothing about the GPU can be concluded from it"
            )
        options = self.window.options
        warned += [f"{name} was on: {cost}" for name, cost in OPTION_COSTS.items() if options[name]]
        facts = msgspec.structs.replace(
            self._ended(cut),
            traces=tuple(str(p) for p in written),
            sidecar=str(sidecar_path(written[0])),
            gpu_requested=gpu_requested,
            gpu_observed=gpu_observed,
            profiled_step_ms=tuple(self.step_ms),
            peaks=self._cpu_peaks(gpu_requested),
            compiles=self._compiles.records(),
            graph_break_reasons=self._compiles.break_reasons(),
        )
        return self.amend(CaptureResult(self.scenario, facts), warnings=tuple(warned))

    def _cpu_peaks(self, gpu_requested: bool) -> MeasuredPeaks | None:
        """On the CPU with shapes recorded (the roofline needs them): its roofs, measured
        now that the window is over (``capturing.peaks``)."""
        if gpu_requested or not self.window.record_shapes:
            return None
        return measure_cpu_peaks()

    def _ended_early(self, cut: int | None) -> str:
        """The warning of a loop that stopped before the schedule's end."""
        window = self.window
        planned = window.active * window.repeat
        said = (
            f"the loop ended after {self.steps_done} of the {self.total_steps} scheduled "
            f"steps: {len(self.step_ms)} of the {planned} planned active steps ran"
        )
        if cut is not None:
            said += (
                f"; ProfilerStep#{cut} was cut short by the profiler's stop: the analysis "
                "marks it partial and leaves it out of the step figures"
            )
        if self._exported < window.repeat:
            said += f"; {self._exported} of the {window.repeat} windows were written"
        return said

    def amend(self, result: CaptureResult | None = None, **fields: Any) -> CaptureResult:
        """Add figures measured outside the window; rewrite the sidecars (ours) with them.

        ``fields`` are ``CaptureFacts`` fields. New ``warnings`` are appended to the
        result's and emitted as ``CaptureWarning``.
        """
        result = result or self.result
        if result is None:
            raise CaptureError("the capture has not finished")
        new_warnings = tuple(fields.pop("warnings", ()))
        for message in new_warnings:
            warnings.warn(message, CaptureWarning, stacklevel=3)
        facts = msgspec.structs.replace(
            result.facts, warnings=result.facts.warnings + new_warnings, **fields
        )
        text = json.dumps(record_payload(self.scenario, facts), indent=2) + "\n"
        for trace in facts.traces:
            outputs.replace(sidecar_path(Path(trace)), text.encode())
        self.result = CaptureResult(self.scenario, facts)
        return self.result


def cpu_facts() -> CpuFacts:
    """torch's threads now, the cores this process may use and what else runs on them."""
    load = cpu_load()
    return CpuFacts(
        torch_threads=torch.get_num_threads(),
        interop_threads=torch.get_num_interop_threads(),
        cores=load.cores,
        others_running=load.others_running,
        load_1min=load.load_1min,
    )
