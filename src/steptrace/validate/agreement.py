"""Correctness first: both sides' first steps from the same start, everything compared.

Each side runs ``check.steps`` steps on its batches from its own copy of its starting
state, both under the same RNG seed; outputs (by name: a value on one side only is a
difference), then parameters, gradients and buffers are compared. The steps are timed
as well (synchronized at their boundaries): the step time sizes the timing's blocks.
A step that raises is a one-line ``CaptureError`` naming the side and the step.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np
import torch

from steptrace.errors import CaptureError, ended_by, raised_at
from steptrace.process import ctrl_c
from steptrace.process.watchdog import Overrun
from steptrace.validate.correctness import (
    compare_values,
    flatten,
    same_start,
    snapshot,
)
from steptrace.validate.inputs import Batch, Output, State, Step
from steptrace.validate.results import Correctness, Difference
from steptrace.validate.sides import copies
from steptrace.validate.timing import CheckPlan, Clock, Sync


def guarded(step: Step, side: str, when: str) -> Step:
    """The user's step, whose exceptions, exits (``sys.exit``, ``os._exit`` through
    ``user_code``) and overrun of the budget (``watchdog``) become one line naming the
    side and the step; Ctrl-C stays Ctrl-C."""

    def run(state: State, batch: Batch) -> Output:
        try:
            returned = step(state, batch)
            ctrl_c.check()  # a Ctrl-C the step caught for itself stops the check all the same
            return returned
        except (CaptureError, KeyboardInterrupt):
            raise
        except Overrun:
            raise CaptureError(
                f"{side}'s step was still running {when} when the budget ran out: stopped"
            ) from None
        except Exception as error:
            raise CaptureError(f"{side}'s step raised {when}: {raised_at(error)}") from None
        except BaseException as error:  # sys.exit, os._exit, GeneratorExit: the user's
            raise CaptureError(f"{side}'s step {ended_by(error)} {when}") from None

    return run


def check_both(
    steps: tuple[Step, Step],
    origins: tuple[State, State],
    batches: tuple[Sequence[Batch], Sequence[Batch]],
    check: CheckPlan,
    *,
    seed: int,
    clock: Clock,
    synchronize: Sync,
) -> tuple[Correctness, float]:
    """(what agrees, an A step plus a B step in seconds: the sides' median step times)."""
    state_a, state_b = copies(origins[0], "A"), copies(origins[1], "B")
    identical = same_start(state_a, state_b)
    outputs = []
    seconds: list[float] = []
    with _rng_kept():
        for side, step, state, feed in zip("AB", steps, (state_a, state_b), batches, strict=True):
            _seed_everything(seed)
            results, times = _side_steps(side, step, state, feed, check.steps, clock, synchronize)
            outputs.append((results, snapshot(state)))
            seconds.append(float(np.median(times)))
    (results_a, after_a), (results_b, after_b) = outputs
    differences = [
        _pair(name, results_a, results_b, check)
        for name in [*results_a, *(n for n in results_b if n not in results_a)]
    ]
    differences += [_pair(name, after_a, after_b, check) for name in sorted(after_a | after_b)]
    ok = identical and all(d.ok for d in differences)
    correctness = Correctness(
        ok=ok, steps=check.steps, differences=tuple(differences), start_identical=identical
    )
    return correctness, sum(seconds)


def _side_steps(
    side: str,
    step: Step,
    state: State,
    feed: Sequence[Batch],
    count: int,
    clock: Clock,
    synchronize: Sync,
) -> tuple[dict[str, Output], list[float]]:
    """One side's correctness steps: its outputs by name, and each step's seconds."""
    results: dict[str, Output] = {}
    times = []
    for i in range(count):  # batches copied per side: a step may change them
        when = f"at correctness step {i + 1} of {count}"
        try:
            batch = copy.deepcopy(feed[i % len(feed)])
            synchronize()
            started = clock()
            returned = guarded(step, side, when)(state, batch)
            synchronize()
            times.append(clock() - started)
            results |= {n: _kept(v) for n, v in flatten(returned, f"step{i}.output")}
        except Overrun:  # between two steps: the budget ran out in the correctness steps
            raise CaptureError(
                f"{side}'s steps were {when} when the budget ran out: stopped"
            ) from None
    return results, times


def _pair(
    name: str, a: Mapping[str, Output], b: Mapping[str, Output], check: CheckPlan
) -> Difference:
    """Compare by name: a value on one side only is a difference, never silently dropped."""
    if name not in a or name not in b:
        side = "A" if name in a else "B"
        note = f"only {side} returns it"
        return Difference(name, False, None, None, check.rtol, check.atol, note)
    return compare_values(name, a[name], b[name], check.rtol, check.atol)


def _kept(value: Output) -> Output:
    """A copy of an output as it is now (a later in-place change must not alter it)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value.copy())
    return copy.deepcopy(value)


@contextmanager
def _rng_kept() -> Iterator[None]:
    """Seed freely inside, and give the caller back the RNG states they had."""
    states = (torch.get_rng_state(), random.getstate(), np.random.get_state())
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        torch.set_rng_state(states[0])
        random.setstate(states[1])
        np.random.set_state(states[2])
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def _seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
