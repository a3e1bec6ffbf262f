"""``profiler_check`` (profiler-distortion): the step while ``torch.profiler`` records (A)
against the bare step (B), to know how much the trace's own figures are inflated.

How A is recorded, and why (measured on this project's CPU with torch 2.13, a step of 300
tiny operators, 1.7 ms bare):

- the profiler is started and stopped *between* A's blocks, never inside a timed step:
  ``Instruments.before_block`` starts a session before A's steps and stops it before B's,
  outside the timed interval. A stop is the costly part (Kineto processes every event:
  about 25-35 µs per recorded operator here, 7-11 s for 300k events) and a step with a
  stop inside it would look several times slower than profiling makes it;
- one session per run of A's steps (at most two blocks, AB then BA; starting and stopping
  an empty session costs about 0.7 ms, the first one in a process 1.7 s), not one session kept
  open with collection toggled off for B: a session open for the whole comparison keeps
  every event in memory (about 1.2 KB per operator: gigabytes over thousands of steps)
  and its stop would cost seconds per 100k events at once. Per run, memory stays bounded
  by two blocks' events whatever the number of steps. A fresh session's first step is no
  slower than its second (2.59 against 2.56 ms, medians of 30), so the restarts do not
  inflate A;
- B runs with no session at all: truly bare (a session with collection toggled off was
  within noise of bare, 1.72 against 1.71 ms, but no session is simpler and certain).

The stops take part of the time budget (outside the timed steps), so fewer blocks fit
than for a bare A/B of the same steps. A's steps are labelled ``ProfilerStep#N`` as in a
capture. The profiler's options (``record_shapes``, ``profile_memory``, ``with_stack``,
``with_flops``) come from ``window`` (the capture's), each adding its own cost. Outputs
must agree: recording changes no value. With ``loop_batches`` the whole loop of A also
times one start, and B's one stop (no hook runs there). Kineto prints two lines on stderr
per session (``profiler_start``, ``profiler_stop``); no setting of torch 2.13 silences them.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import torch
from torch.profiler import profile, record_function

from steptrace.devices import activities
from steptrace.process.quiet import without_usdt_lines
from steptrace.validate.ab import compare
from steptrace.validate.checks.factory import said, strict
from steptrace.validate.inputs import Batch, MakeState, Output, State, Step
from steptrace.validate.results import Comparison
from steptrace.validate.timing import CheckPlan, Instruments, TimingPlan
from steptrace.window import Window


class Recorder:
    """One ``torch.profiler`` session at a time, started for A and stopped for B."""

    def __init__(self, device: torch.device, window: Window) -> None:
        self.activities = activities(device)
        self.window = window
        self.session: profile | None = None
        self.sessions = 0  # started so far
        self.steps = 0  # A steps recorded so far
        self.longest = 0  # the most A steps one session recorded (memory's bound)
        self._in_session = 0

    def before_block(self, side: str) -> None:
        """Compare's hook, outside the timed interval: record for A, bare for B."""
        self.start() if side == "A" else self.stop()

    def start(self) -> None:
        if self.session is None:
            self.session = profile(
                activities=self.activities,
                record_shapes=self.window.record_shapes,
                profile_memory=self.window.profile_memory,
                with_stack=self.window.with_stack,
                with_flops=self.window.with_flops,
            )
            with without_usdt_lines():  # kineto's start and stop lines (steptrace.process.quiet)
                self.session.start()
            self.sessions += 1
            self._in_session = 0

    def stop(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            with without_usdt_lines():
                session.stop()

    def profiled(self, step: Step) -> Step:
        """A's step: recorded, as in a capture (a session is started only if none runs:
        in the correctness steps, which have no hook)."""

        def recorded(state: State, batch: Batch) -> Output:
            self.start()
            self.steps += 1
            self._in_session += 1
            self.longest = max(self.longest, self._in_session)
            with record_function(f"ProfilerStep#{self.steps}"):
                return step(state, batch)

        return recorded

    def bare(self, step: Step) -> Step:
        """B's step: no session (already stopped by the hook, outside the timing)."""

        def plain(state: State, batch: Batch) -> Output:
            self.stop()
            return step(state, batch)

        return plain


def profiler_check(
    step: Step,
    *,
    make_state: MakeState,
    batches: Sequence[Batch],
    device: str | torch.device = "cpu",
    window: Window | None = None,
    check: CheckPlan | None = None,
    plan: TimingPlan | None = None,
    instruments: Instruments | None = None,
) -> Comparison:
    """The step under ``torch.profiler`` (A) against the bare step (B); ``window``: the
    profiler's options (the capture's)."""
    target = torch.device(device)
    recorder = Recorder(target, window or Window())
    hooked = msgspec.structs.replace(
        instruments or Instruments(), before_block=recorder.before_block
    )
    try:
        result = compare(
            recorder.profiled(step),
            recorder.bare(step),
            make_state=make_state,
            batches=batches,
            device=target,
            check=strict(check, "profiler_check"),
            plan=plan,
            instruments=hooked,
        )
    finally:
        recorder.stop()
    names = "+".join(str(a).rpartition(".")[2] for a in recorder.activities)
    shown = [k for k, v in recorder.window.options.items() if v]
    return said(
        result,
        f"profiler: A recorded by torch.profiler ({names}"
        + (f", {', '.join(shown)}" if shown else "")
        + f"), {recorder.sessions} sessions started and stopped between blocks, "
        f"at most {recorder.longest} steps each; B bare",
    )
