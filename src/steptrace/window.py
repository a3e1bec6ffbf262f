"""``Window``: which steps a capture records, with which profiler options, and what it
measures around them. Plain data (no torch): every capture entry point and the command
line take one, and the capture facts stored beside a trace carry it.

    steptrace.profile_training(..., window=steptrace.Window(active=5, record_shapes=True))

The schedule is torch.profiler's: ``wait`` steps skipped, ``warmup`` steps profiled and
discarded, ``active`` steps recorded, the cycle run ``repeat`` times; ``cold_steps`` run
and are timed before the profiler starts (the cold start, reported apart).
"""

from __future__ import annotations

import msgspec

from steptrace.errors import CaptureError


class Window(msgspec.Struct, frozen=True, kw_only=True):
    """The profiling window and what is measured around it."""

    cold_steps: int = 1  # run and timed before the profiler starts
    wait: int = 1
    warmup: int = 1
    active: int = 2
    repeat: int = 1
    record_shapes: bool = False  # profiler options: each one adds overhead
    profile_memory: bool = False
    with_stack: bool = False
    with_flops: bool = False
    measure_overhead: bool = False  # the same steps again without the profiler (training)
    count_flops: bool = False  # FLOPs per step, achieved TFLOP/s, MFU (training)

    def __post_init__(self) -> None:
        if min(self.wait, self.warmup, self.cold_steps) < 0 or self.active < 1 or self.repeat < 1:
            raise CaptureError(
                "the schedule needs cold_steps >= 0, wait >= 0, warmup >= 0, active >= 1, "
                "repeat >= 1"
            )

    @property
    def cycle(self) -> int:
        """Steps in one cycle of the schedule (wait + warm-up + active)."""
        return self.wait + self.warmup + self.active

    @property
    def profiled_steps(self) -> int:
        """Steps run under the profiler, every cycle."""
        return self.cycle * self.repeat

    @property
    def needed_steps(self) -> int:
        """Batches (or inputs) the whole capture consumes: the cold start and every cycle."""
        return self.cold_steps + self.profiled_steps

    @property
    def options(self) -> dict[str, bool]:
        """The profiler options, as ``torch.profiler.profile`` takes them."""
        return {
            "record_shapes": self.record_shapes,
            "profile_memory": self.profile_memory,
            "with_stack": self.with_stack,
            "with_flops": self.with_flops,
        }

    def describe(self) -> str:
        """The schedule in words, for refusals: what a loader must provide."""
        return (
            f"cold start ({self.cold_steps}) + (wait {self.wait} + warmup {self.warmup} + "
            f"active {self.active}) x repeat {self.repeat} need {self.needed_steps}"
        )
