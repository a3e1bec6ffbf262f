"""``autocast_check`` (precision): the step in full precision (A) against the same step
under ``torch.autocast`` (B): bfloat16, or float16 where the GPU has no bfloat16.

A GPU check: the finding is about float32 kernels where tensor-core kernels exist, so on
the CPU it is ``NotTestable`` (CPU autocast exists, but says nothing about a GPU's tensor
cores). Lower precision changes values by design: the difference is accepted and said,
never hidden. B's low-precision floating outputs are cast back to the model's dtype (one
small cast per output, inside B's step, as a user's ``loss.float()``), so that they are
compared value by value; ``by_design`` states the tolerance (``rtol=1e-2, atol=1e-3``,
bfloat16's) and the largest difference measured, within it or not. Quality is the real
question: compare the loss curve or accuracy over a run, not only ms/step.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from steptrace.devices import each_tensor
from steptrace.errors import CaptureError, NotTestable
from steptrace.validate.ab import compare
from steptrace.validate.checks.factory import B_FAILED, origin, refused_b, said
from steptrace.validate.inputs import Batch, MakeState, Output, State, Step
from steptrace.validate.results import Comparison, Correctness
from steptrace.validate.timing import CheckPlan, Instruments, TimingPlan

LOW = (torch.float16, torch.bfloat16)
RTOL, ATOL = 1e-2, 1e-3  # bfloat16 over a few steps (README, correctness.py)
INSTEAD = (
    "on a CUDA GPU: run the step under torch.autocast('cuda', dtype=torch.bfloat16) (or "
    "enable TF32), same data and state; compare the loss curve or accuracy, then ms/step"
)


def autocast_check(
    step: Step,
    *,
    make_state: MakeState,
    batches: Sequence[Batch],
    device: str | torch.device = "cpu",
    check: CheckPlan | None = None,
    plan: TimingPlan | None = None,
    instruments: Instruments | None = None,
) -> Comparison:
    """Full precision (A) against ``torch.autocast`` on the GPU (B), difference accepted."""
    target = torch.device(device)
    if target.type != "cuda" or not torch.cuda.is_available():
        raise NotTestable(
            f"autocast is checked on a CUDA GPU, and the device here is {target}"
            + ("" if torch.cuda.is_available() else " (torch sees no CUDA device)")
            + ": the precision finding is about GPU tensor cores",
            INSTEAD,
        )
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return autocast_compare(
        step,
        make_state=make_state,
        batches=batches,
        device=target,
        dtype=dtype,
        check=check,
        plan=plan,
        instruments=instruments,
    )


def autocast_compare(
    step: Step,
    *,
    make_state: MakeState,
    batches: Sequence[Batch],
    device: torch.device,
    dtype: torch.dtype,
    check: CheckPlan | None = None,
    plan: TimingPlan | None = None,
    instruments: Instruments | None = None,
) -> Comparison:
    """The comparison itself, on any device autocast supports (the CPU in tests)."""
    state, made = origin(make_state)
    wide = next((p.dtype for p in state["model"].parameters() if p.is_floating_point()), None)

    def under_autocast(state: State, batch: Batch) -> Output:
        with torch.autocast(device.type, dtype=dtype):
            returned = step(state, batch)
        if wide is None or wide in LOW:
            return returned
        return each_tensor(returned, lambda t: t.to(wide) if t.dtype in LOW else t)

    try:
        result = compare(
            step,
            under_autocast,
            make_state=made,
            batches=batches,
            device=device,
            check=_accepting(check or CheckPlan()),
            plan=plan,
            instruments=instruments,
        )
    except CaptureError as error:
        if str(error).startswith(B_FAILED):
            raise refused_b(
                error, f"the step cannot run under autocast({dtype})", INSTEAD
            ) from None
        raise
    return said(
        result,
        f"precision: B under torch.autocast({device.type!r}, {dtype})",
        measured(result.correctness),
    )


def _accepting(check: CheckPlan) -> CheckPlan:
    """The plan with bfloat16's tolerances unless given, the difference accepted."""
    return CheckPlan(
        steps=check.steps,
        rtol=RTOL if check.rtol is None else check.rtol,
        atol=ATOL if check.atol is None else check.atol,
        accept_difference=True,
    )


def measured(correctness: Correctness) -> str:
    """The largest difference, and whether it is within the stated tolerance."""
    numbers = [d for d in correctness.differences if d.max_rel is not None]
    failing = [d for d in correctness.differences if not d.ok]
    if not numbers:
        return "difference accepted by design: no value could be compared"
    worst = max(numbers, key=lambda d: d.max_rel or 0.0)
    where = "all within" if not failing else f"{len(failing)} value(s) beyond"
    return (
        f"difference accepted by design: largest {worst.name}, {worst.max_abs:.3g} "
        f"({100 * (worst.max_rel or 0.0):.3g}% relative); {where} the tolerance "
        f"rtol {worst.rtol:g}, atol {worst.atol:g}"
    )
