"""``compile_check`` (small-launches, cpu-bound): the model as the user runs it (A)
against ``torch.compile(model)`` (B).

B's state is a deep copy of the one state ``make_state`` made, its model wrapped by
``torch.compile`` (the optimizer keeps pointing at the same parameters). The compile
happens here, before compare: one step of B on a throw-away copy of its state and of the
first batch, timed, so that the compile cost is measured and said (``by_design``: "compile:
... s, before timing") and never lands in a timed step; compare's warm-up then starts
from a compiled model: deep copies of a compiled module reuse its code (measured with
``TORCH_LOGS=recompiles`` and a fresh inductor cache on a small MLP's training step: no
recompile; 11 s for the compile, 0.14 s for a copy's first step, then 1 ms). A compile
that fails is a result, not a crash: ``NotTestable`` with the compile error in one line.
Inductor needs a C++ compiler on the CPU (a C compiler and Triton on the GPU).

Compiled code may reorder floating-point reductions: unless told otherwise, correctness
uses float32's multi-step tolerances (``rtol=1e-4, atol=1e-6``) over 3 steps.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence

import torch

from steptrace.devices import synchronize
from steptrace.errors import CaptureError, NotTestable
from steptrace.validate.ab import compare
from steptrace.validate.checks.factory import B_FAILED, one_line, origin, refused_b, said, strict
from steptrace.validate.inputs import Batch, CandidateInputs, MakeState, State, Step
from steptrace.validate.results import Comparison
from steptrace.validate.timing import CheckPlan, Clock, Instruments, TimingPlan

DRIFT = CheckPlan(steps=3, rtol=1e-4, atol=1e-6)
INSTEAD = (
    "compile by hand (torch.compile(model), mode='reduce-overhead' on a GPU), run a few "
    "steps to warm it up, count the compile time, then compare ms/step (steptrace compare)"
)
Compiler = Callable[[torch.nn.Module], torch.nn.Module]


def compile_check(
    step: Step,
    *,
    make_state: MakeState,
    batches: Sequence[Batch],
    device: str | torch.device = "cpu",
    check: CheckPlan | None = None,
    plan: TimingPlan | None = None,
    instruments: Instruments | None = None,
) -> Comparison:
    """The eager model (A) against ``torch.compile(model)`` (B), compile cost said apart."""
    return compiled_compare(
        step,
        make_state=make_state,
        batches=batches,
        device=torch.device(device),
        compiler=_compile,
        check=check,
        plan=plan,
        instruments=instruments,
    )


def _compile(model: torch.nn.Module) -> torch.nn.Module:
    compiled = torch.compile(model)
    assert isinstance(compiled, torch.nn.Module)  # torch.compile of a module wraps it
    return compiled


def compiled_compare(
    step: Step,
    *,
    make_state: MakeState,
    batches: Sequence[Batch],
    device: torch.device,
    compiler: Compiler,
    check: CheckPlan | None = None,
    plan: TimingPlan | None = None,
    instruments: Instruments | None = None,
    clock: Clock = time.perf_counter,
) -> Comparison:
    """``compile_check`` with the compiler injectable (a failing one in tests), and the
    clock that times the compile."""
    state, made = origin(make_state)
    if not batches:
        raise NotTestable("no batch to compile the step on", INSTEAD)
    compiled = copy.deepcopy(state)
    compiled["model"] = compiler(compiled["model"])
    seconds = _first_call(step, compiled, batches[0], device, clock)
    try:
        result = compare(
            step,
            step,
            make_state=made,
            batches=batches,
            device=device,
            check=strict(check, "compile_check") or DRIFT,
            plan=plan,
            instruments=instruments,
            candidate_inputs=CandidateInputs(make_state=lambda: compiled),
        )
    except CaptureError as error:  # a recompile for another batch can fail too
        if str(error).startswith(B_FAILED):
            raise refused_b(error, "the compiled step failed", INSTEAD) from None
        raise
    return said(
        result,
        f"compile: B's model compiled by torch.compile in {seconds:.2f} s (its first step, "
        "on a copy of the state, before timing: not in any timed step)",
    )


def _first_call(
    step: Step, compiled: State, batch: Batch, device: torch.device, clock: Clock
) -> float:
    """Compile by running one step on copies (the state B starts from stays untouched)."""
    throwaway, inputs = copy.deepcopy(compiled), copy.deepcopy(batch)
    synchronize(device)
    started = clock()
    try:
        step(throwaway, inputs)
        synchronize(device)
    except Exception as error:
        raise NotTestable(f"torch.compile failed: {one_line(error, 240)}", INSTEAD) from None
    return clock() - started
