"""``optimizer_check`` (optimizer-kernels): the optimizer as the user built it (A) against
the same class rebuilt with ``fused=True`` (B), or ``foreach=True`` where fused is not
available for the class or the device.

B's state is a deep copy of the one state ``make_state`` made (the model's weights bit for
bit the same), with the optimizer rebuilt as the same class on the copy's parameters,
with the same param groups and hyper-parameters, and the optimizer's state (moments, step
counts) loaded into it: only the implementation flag changes. Whether the class and the
device support ``fused`` is asked of torch itself: the rebuilt optimizer is constructed,
and a refusal falls back to ``foreach``. ``NotTestable`` when the state has no optimizer,
when it already runs a foreach or fused implementation (explicitly, or by torch's default
on a GPU), or when its class takes neither flag (a custom optimizer, LBFGS).

The same maths in another order drifts over steps: unless told otherwise, correctness is
checked over 3 steps with float32's multi-step tolerances (``rtol=1e-4, atol=1e-6``).
``by_design`` names the flags that changed (compare reads them from the optimizers).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from steptrace.errors import NotTestable
from steptrace.validate.ab import compare
from steptrace.validate.checks.factory import one_line, origin, strict
from steptrace.validate.inputs import Batch, CandidateInputs, MakeState, State, Step
from steptrace.validate.results import Comparison
from steptrace.validate.timing import CheckPlan, Instruments, TimingPlan

FLAGS = ("fused", "foreach")
DEFAULT_FOREACH = ("cuda", "xpu", "mtia")  # where torch picks foreach by itself (foreach=None)
DRIFT = CheckPlan(steps=3, rtol=1e-4, atol=1e-6)  # float32 over several steps (README)
INSTEAD = (
    "rebuild the optimizer by hand with fused=True (or foreach=True), same hyper-parameters "
    "and starting state; compare parameters after a few steps, then ms/step (steptrace compare)"
)


def optimizer_check(
    step: Step,
    *,
    make_state: MakeState,
    batches: Sequence[Batch],
    device: str | torch.device = "cpu",
    check: CheckPlan | None = None,
    plan: TimingPlan | None = None,
    instruments: Instruments | None = None,
) -> Comparison:
    """The user's optimizer (A) against the same one with a fused or foreach kernel (B)."""
    state, made = origin(make_state)
    optimizer = state.get("optimizer")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise NotTestable(
            "the state has no torch.optim.Optimizer under 'optimizer': nothing to switch",
            INSTEAD,
        )
    _refuse_if_grouped(optimizer)
    rebuilt = faster_state(state)  # refusals before any step runs
    return compare(
        step,
        step,
        make_state=made,
        batches=batches,
        device=device,
        check=strict(check, "optimizer_check") or DRIFT,
        plan=plan,
        instruments=instruments,
        candidate_inputs=CandidateInputs(make_state=lambda: rebuilt),
    )


def faster_state(state: State) -> State:
    """A deep copy of ``state`` whose optimizer is rebuilt with ``fused`` (else ``foreach``)."""
    copied = copy.deepcopy(dict(state))
    old = copied["optimizer"]
    takes = set(inspect.signature(type(old).__init__).parameters)
    errors = []
    for flag in (f for f in FLAGS if f in takes):
        try:
            copied["optimizer"] = _rebuilt(old, flag, takes)
            return copied
        except (RuntimeError, ValueError, TypeError) as error:
            errors.append(f"{flag}=True: {one_line(error, 160)}")
    name = type(old).__name__
    if not errors:
        raise NotTestable(
            f"{name} takes neither fused= nor foreach=: no faster implementation to switch to",
            "try another optimizer class (torch.optim.AdamW(..., fused=True)) as a "
            "deliberate change, with its own correctness check",
        )
    raise NotTestable(f"{name} refused every faster implementation ({'; '.join(errors)})", INSTEAD)


def _refuse_if_grouped(optimizer: torch.optim.Optimizer) -> None:
    """Not testable when every param group already runs a foreach or fused kernel."""
    for group in optimizer.param_groups:
        if not _grouped(group):
            return
    flags = ", ".join(f"{f}={optimizer.defaults.get(f)!r}" for f in FLAGS)
    raise NotTestable(
        f"{type(optimizer).__name__} already runs a multi-tensor implementation ({flags}, "
        "or torch's foreach default on this device): nothing faster to switch to",
        "look elsewhere for the launch cost (torch.compile of the step, CUDA graphs)",
    )


def _grouped(group: Mapping[str, Any]) -> bool:  # torch's param group
    if group.get("fused") or group.get("foreach"):
        return True
    if group.get("foreach") is None and not group.get("differentiable"):
        params = group["params"]
        return bool(params) and all(p.device.type in DEFAULT_FOREACH for p in params)
    return False


def _rebuilt(old: torch.optim.Optimizer, flag: str, takes: set[str]) -> torch.optim.Optimizer:
    """The same class, groups, hyper-parameters and state, with ``flag=True``."""
    flags = {flag: True, **{other: None for other in FLAGS if other != flag and other in takes}}
    defaults = {k: v for k, v in old.defaults.items() if k in takes} | flags
    groups = [
        {k: v for k, v in group.items() if k not in ("params", *FLAGS)}
        | {"params": group["params"]}
        for group in old.param_groups
    ]
    new = type(old)(groups, **defaults)
    saved = old.state_dict()
    for group in saved["param_groups"]:
        group.update({k: v for k, v in flags.items() if k in group or k == flag})
    new.load_state_dict(saved)  # moments and step counts, cast as the flag needs them
    return new
