"""``inference_mode_check`` (inference-autograd): the step as served (A) against the same
step under ``torch.inference_mode()`` (B).

Autograd records the operators of a forward pass run with gradients enabled even when no
backward follows; ``torch.inference_mode()`` skips that bookkeeping (version counters and
view tracking too) and changes no value. So the outputs must agree within compare's
tolerances, and no difference is accepted. A step that trains (its state holds an
optimizer, or it calls ``backward``) cannot run under inference mode: ``NotTestable``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from steptrace.errors import CaptureError, NotTestable
from steptrace.validate.ab import compare
from steptrace.validate.checks.factory import B_FAILED, origin, refused_b, strict
from steptrace.validate.inputs import Batch, MakeState, Output, State, Step
from steptrace.validate.results import Comparison
from steptrace.validate.timing import CheckPlan, Instruments, TimingPlan

INSTEAD = (
    "serve with model.eval() under torch.inference_mode() by hand, check the outputs are "
    "unchanged, then compare latency outside the profiler (steptrace compare)"
)


def inference_mode_check(
    step: Step,
    *,
    make_state: MakeState,
    batches: Sequence[Batch],
    device: str | torch.device = "cpu",
    check: CheckPlan | None = None,
    plan: TimingPlan | None = None,
    instruments: Instruments | None = None,
) -> Comparison:
    """The step as the user serves it (A) and under ``torch.inference_mode()`` (B)."""
    state, made = origin(make_state)
    if state.get("optimizer") is not None:
        raise NotTestable(
            "the state holds an optimizer: a training step cannot run under "
            "torch.inference_mode() (it forbids backward)",
            INSTEAD,
        )

    def under_inference_mode(state: State, batch: Batch) -> Output:
        with torch.inference_mode():
            return step(state, batch)

    try:
        return compare(
            step,
            under_inference_mode,
            make_state=made,
            batches=batches,
            device=device,
            check=strict(check, "inference_mode_check"),
            plan=plan,
            instruments=instruments,
        )
    except CaptureError as error:
        if str(error).startswith(B_FAILED):
            what = "the step cannot run under torch.inference_mode()"
            raise refused_b(error, what, INSTEAD) from None
        raise
