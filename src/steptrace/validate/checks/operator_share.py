"""``operator_share`` (dominant-op): what an operator takes of the step, measured alone.

Each recorded set of inputs (``script.operator_calls``: the operator's, and for a matrix
product those of the operators doing the same work) is rebuilt on random values of its
shapes and dtypes (contiguous) and bound to the first overload that accepts it, as the
script does. Then the step (A: the user's step on a copy of the state) and the calls (B:
each set of inputs run as many times as a step calls it, rounded up, each group timed)
run in the same interleaved blocks (``timing.run_blocks``), outside the profiler, on the
clock and threads ``compare`` uses. Each B step is weighed into ms per step: each group's
time per call times its calls per step. The share is the Hodges–Lehmann ratio of the
block pairs (B over A) with its CI: how much of the step the operators alone take.

Measured before this way, the check timed only the smallest recorded input
(``[64,10]x[10,512]``), multiplied it by every call, and divided it by a step timed at
another moment: a healthy MLP whose matrix products are the whole step read 29%.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch

from steptrace.errors import NotTestable
from steptrace.process.clocks import RunningClock
from steptrace.validate.checks.script import DTYPES
from steptrace.validate.estimators import decide
from steptrace.validate.inputs import Batch, MakeState, Step
from steptrace.validate.results import CallTiming, OperatorCall, OperatorShare
from steptrace.validate.sides import checked_batches, checked_state, copies
from steptrace.validate.threads import threads_for
from steptrace.validate.timing import Sides, TimingPlan, run_blocks

Run = Callable[[], object]


def operator_share(
    step: Step,
    *,
    make_state: MakeState,
    batches: Sequence[Batch],
    calls: Sequence[OperatorCall],
    operator: str,
    script: str,
    device: str | torch.device = "cpu",
    plan: TimingPlan | None = None,
) -> OperatorShare:
    """The operators of ``calls`` alone (B) against the step (A), interleaved."""
    plan, target = plan or TimingPlan(), torch.device(device)
    if not calls:
        raise NotTestable(f"no recorded inputs of {operator} to time", _INSTEAD)
    with threads_for(plan.threads, target):
        runs = [_prepared(call, target) for call in calls]
        groups = [max(1, math.ceil(c.calls_per_step)) for c in calls]
        state = copies(checked_state(make_state, "A", "make_state"), "A")
        feed = checked_batches(batches, "A", "batches")
        clock = RunningClock() if target.type == "cpu" else time.perf_counter
        sync = (lambda: torch.cuda.synchronize(target)) if target.type == "cuda" else _nothing
        per_call: list[list[float]] = []  # per B step: each group's ms per call

        def alone(_: Batch) -> None:
            times = []
            for run, count in zip(runs, groups, strict=True):
                began = clock()
                for _ in range(count):
                    run()
                sync()
                times.append((clock() - began) * 1000 / count)
            per_call.append(times)

        sides = Sides(lambda batch: step(state, batch), alone, feed, [None])
        samples = run_blocks(sides, plan, clock=clock, synchronize=sync)
    if len(samples.order) < 1:
        raise NotTestable(f"the budget ({plan.budget_s:.0f} s) timed no block", _INSTEAD)
    timed = np.array(per_call[len(per_call) - len(samples.b) :])  # after the warm-up
    weights = np.array([c.calls_per_step for c in calls])
    per_step = timed @ weights  # each B step as ms per step of the step's calls
    estimate, _, _ = decide(samples.a, per_step, samples.block_steps)
    return OperatorShare(
        operator=operator,
        operators=tuple(sorted({c.operator for c in calls})),
        calls=tuple(
            CallTiming(call=c, alone_ms_per_call=float(np.median(timed[:, k])))
            for k, c in enumerate(calls)
        ),
        alone_ms_per_step=float(np.median(per_step)),
        step_ms=float(np.median(samples.a)),
        share=estimate.ratio,
        ci=estimate.ci,
        confidence=estimate.confidence,
        blocks=len(samples.order),
        script=script,
    )


_INSTEAD = "run the script by hand (steptrace.validate.calls_script) and compare with the step"


def _nothing() -> None:
    return None


def _prepared(call: OperatorCall, device: torch.device) -> Run:
    """The call on random inputs of its recorded shapes, bound to the first overload that
    accepts them; ``NotTestable`` when none does."""
    namespace, _, name = call.operator.partition("::")
    packet = getattr(getattr(torch.ops, namespace, None), name, None)
    if packet is None:
        raise NotTestable(f"torch has no operator {call.operator}", _INSTEAD)
    shapes = json.loads(call.input_shapes)
    types = json.loads(call.input_types) if call.input_types else [""] * len(shapes)
    inputs = [_input(shape, kind, device) for shape, kind in zip(shapes, types, strict=False)]
    for overload in packet.overloads():
        op = getattr(packet, overload)
        args: list[object] = []
        kwargs: dict[str, object] = {}
        for argument, value in zip(op._schema.arguments, inputs, strict=False):
            if argument.kwarg_only:
                kwargs[argument.name] = value
            else:
                args.append(value)
        try:
            op(*args, **kwargs)  # also its warm-up
        except (RuntimeError, TypeError):
            continue
        return functools.partial(op, *args, **kwargs)
    raise NotTestable(
        f"no overload of {call.operator} accepts its recorded inputs {call.input_shapes}",
        _INSTEAD,
    )


def _input(shape: object, kind: str, device: torch.device) -> object:
    """A random value of a recorded input (as ``script`` writes it: 1 for a scalar)."""
    if kind == "Scalar" or shape == []:
        return 1
    if not isinstance(shape, list) or not all(isinstance(d, int) for d in shape):
        return None
    generator = torch.Generator().manual_seed(0)
    dtype = getattr(torch, DTYPES.get(kind, "torch.float32").removeprefix("torch."))
    if dtype in (torch.int64, torch.int32):
        return torch.randint(0, 8, tuple(shape), dtype=dtype, generator=generator).to(device)
    if dtype == torch.bool:
        return (torch.rand(tuple(shape), generator=generator) > 0.5).to(device)
    return torch.randn(tuple(shape), generator=generator).to(dtype).to(device)
