"""Each rule's controlled check: rule id -> how to run it for the user, or why it can't be.

``CHECKS`` holds one entry per rule id (``steptrace.hypotheses.RULES`` and the multi-rank
rules); a test keeps it complete. An entry with ``run`` is automated: it makes an A/B
(``compare`` from the same deep-copied state, correctness first) where B is the change the
hypothesis points to, or a measurement. An entry without it says why it cannot be
automated; the finding's own ``next_check`` is then the steps to follow by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from steptrace.analysis.measure import TraceAnalysis
from steptrace.hypotheses.finding import Figure, Finding
from steptrace.hypotheses.thresholds import Thresholds
from steptrace.investigation.subject import Subject
from steptrace.validate.results import Comparison, Outcome


@dataclass(frozen=True)
class Context:
    """What a check is run with."""

    subject: Subject
    finding: Finding
    analysis: TraceAnalysis
    limits: Thresholds
    options: Mapping[str, Any] = field(default_factory=dict)  # plan=, check= for compare
    timeout_s: float = 60.0  # for checks that run outside compare (a subprocess)


@dataclass(frozen=True)
class Measured:
    """A check that is a measurement rather than an A/B: its outcome and figures."""

    outcome: Outcome
    sentence: str
    figures: tuple[Figure, ...]


Runner = Callable[[Context], Comparison | Measured]


@dataclass(frozen=True)
class Check:
    """One rule's check."""

    name: str
    change: str  # what A and B are, in words (or what is measured)
    run: Runner | None = None  # None: it cannot be automated (``manual`` says why)
    manual: str = ""
    needs_gpu: bool = False
    kinds: tuple[str, ...] = ("training", "inference")


def _prepared_batch(context: Context) -> Comparison:
    from steptrace.validate.checks import prepared_batch_check

    subject = context.subject
    assert subject.loader is not None  # training subjects have one (kinds)
    return prepared_batch_check(
        subject.step, make_state=subject.make_state, loader=subject.loader,
        device=subject.device, **context.options,
    )  # fmt: skip


def _pinned(context: Context) -> Comparison:
    from steptrace.devices import to_device
    from steptrace.validate.checks import pinned_memory_check

    subject = context.subject
    on_host = [to_device(b, torch.device("cpu")) for b in subject.batches]
    return pinned_memory_check(
        subject.step, make_state=subject.make_state, batches=on_host, device=subject.device,
        **context.options,
    )  # fmt: skip


_BY_HAND = "the change depends on code steptrace cannot rewrite for you"
_RANKS = "it needs the job's ranks: run the check across the ranks, as the finding says"

CHECKS: dict[str, Check] = {
    "input-pipeline": Check(
        "prepared-batch", "A: batches from the loader; B: one batch prepared in advance",
        _prepared_batch, kinds=("training",),
    ),
    "pageable-memcpy": Check(
        "pinned-memory", "A: copies from pageable memory; B: pinned memory, non_blocking",
        _pinned, needs_gpu=True,
    ),
    **{
        rule: Check("pending", "an automated check", manual="not written yet")
        for rule in ("repeated-copy", "small-launches", "dominant-op", "cpu-bound",
                     "inference-autograd", "precision", "optimizer-kernels",
                     "profiler-distortion")
    },
    "sync-in-step": Check(
        "sync-moved-out", "A: the step; B: the step without its synchronizing call",
        manual=f"which call synchronizes is in your code: {_BY_HAND}",
    ),
    "comm-overlap": Check(
        "bucketing", "A: DDP as configured; B: another bucket_cap_mb", manual=_RANKS,
    ),
    "gpu-not-observed": Check(
        "capture-again", "a capture with GPU activity collected",
        manual="nothing about the GPU can be measured until GPU activity is collected",
    ),
    "straggler": Check("prepared-batch-on-rank", "the late rank's phase replaced", manual=_RANKS),
    "exposed-communication": Check("bucketing", "DDP bucketing changed", manual=_RANKS),
    "collective-imbalance": Check("even-split", "the split evened out", manual=_RANKS),
    "clock-skew": Check(
        "clock-sync", "the hosts' clocks checked",
        manual="it is about the hosts' clocks, not the step: nothing to time",
    ),
}  # fmt: skip
