"""What every check factory shares: the user's state made once, strict plans, refusals.

A check factory is ``name(step, *, make_state, batches, device="cpu", check=None,
plan=None, instruments=None) -> Comparison`` (``OnBatches``): A is the step as the user
runs it, B the change; ``check``, ``plan`` and ``instruments`` go to ``compare`` (None:
the check's own default). The helpers here make the state once (so that a B built from
it starts from the same weights even when ``make_state`` is not seeded), refuse
``accept_difference`` where a change must not alter any value, and turn a B that cannot
run at all into ``NotTestable``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import msgspec
import torch

from steptrace.errors import CaptureError, NotTestable
from steptrace.validate.inputs import Batch, MakeState, State, Step
from steptrace.validate.results import Comparison
from steptrace.validate.sides import checked_state
from steptrace.validate.timing import CheckPlan, Instruments, TimingPlan

B_FAILED = "B's step raised at correctness step"  # agreement.guarded's words for B's steps


class OnBatches(Protocol):
    """A check factory on the user's step, state and batches."""

    def __call__(
        self,
        step: Step,
        *,
        make_state: MakeState,
        batches: Sequence[Batch],
        device: str | torch.device = ...,
        check: CheckPlan | None = ...,
        plan: TimingPlan | None = ...,
        instruments: Instruments | None = ...,
    ) -> Comparison: ...


def origin(make_state: MakeState) -> tuple[State, MakeState]:
    """The user's state, made once, and a ``make_state`` that returns it (compare copies it)."""
    made = checked_state(make_state, "A", "make_state")
    return made, lambda: made


def strict(check: CheckPlan | None, name: str) -> CheckPlan | None:
    """The correctness plan, refused when it would accept a difference the change must
    not make."""
    if check is not None and check.accept_difference:
        raise CaptureError(
            f"{name} compares outputs: the change must not alter any value, so "
            "accept_difference is not an option here"
        )
    return check


def said(result: Comparison, *lines: str) -> Comparison:
    """The result with more of what differed by design said."""
    return msgspec.structs.replace(result, by_design=(*result.by_design, *lines))


def refused_b(error: CaptureError, what: str, instead: str) -> NotTestable:
    """B's step could not run at all (not slower: impossible): not testable, and why."""
    return NotTestable(f"{what}: {error}", instead)


def one_line(error: BaseException, limit: int = 300) -> str:
    """``Type: message`` on one line, at most ``limit`` characters of the message."""
    text = " ".join(str(error).split()) or "no message"
    return f"{type(error).__name__}: {text[:limit]}"
