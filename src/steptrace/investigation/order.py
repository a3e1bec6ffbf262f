"""Which checks run first: the most step time served per second of the budget.

A check's cost is known before it starts: its own fixed part (``Check.min_s``: a compile
needs tens of seconds whatever the budget) and the copies of the starting state that
``compare`` makes (a deep copy for A and for B, for the correctness steps and again for
the timing: ``COPIES``), at ``COPY_BYTES_PER_S``. Checks marked ``first`` (what distorts the
others' timings) run before the rest; the others by their finding's share of the step per
second of that cost, so that a slow check (a compile on a small finding) never starves a
cheap one that decides a large finding. The memory findings (a share of memory, not of the
step) come after the time findings, or before them when the question is memory (the
capture recorded allocations); the minor findings (under the noise floor of the step) last.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch

from steptrace.hypotheses.finding import Finding
from steptrace.investigation.check import Check

COPIES = 4  # deep copies of the starting state in one A/B: A and B, correctness and timing
COPY_BYTES_PER_S = 0.5e9  # copy.deepcopy of a 604 MB model and Adam: 0.3-1.7 GB/s, 2 cores


def state_bytes(state: Mapping[str, Any]) -> int:
    """The bytes of the tensors a starting state holds (a model's parameters and buffers,
    an optimizer's state), each tensor once."""
    seen: dict[int, int] = {}
    for tensor in _tensors(state):
        seen.setdefault(id(tensor), tensor.numel() * tensor.element_size())
    return sum(seen.values())


def cost_s(spec: Check, copied_bytes: int) -> float:
    """What ``spec`` needs before it can say anything: its own part and its copies."""
    return spec.min_s + COPIES * copied_bytes / COPY_BYTES_PER_S


def check_order(
    findings: Sequence[Finding],
    costs: Sequence[float],
    first: Sequence[bool],
    *,
    memory_first: bool = False,
) -> list[int]:
    """The findings' indices in the order their checks run: those marked ``first``, then the
    time findings by share of the step per second of cost, the memory findings (before them
    with ``memory_first``), the minor ones last."""

    def key(k: int) -> tuple[bool, int, float]:
        return (
            not first[k],
            _group(findings[k], memory_first),
            -findings[k].severity / max(costs[k], 1e-9),
        )

    return sorted(range(len(findings)), key=key)


def _group(found: Finding, memory_first: bool) -> int:
    if found.minor:
        return 2
    timed = found.basis == "step time"
    return int(timed == memory_first)


def sharing_now(
    findings: Sequence[Finding],
    coming: Sequence[int],
    costs: Sequence[float],
    runnable: Sequence[bool],
    left_s: float,
) -> int:
    """How many of the checks ``coming`` (in order, the next one first) share the budget
    left: those that can run here, whose cost it holds, and whose finding is not minor (a
    minor one gets what they leave). A check that cannot start no longer thins the others'
    shares."""
    return sum(1 for k in coming if runnable[k] and costs[k] <= left_s and not findings[k].minor)


def _tensors(value: object, depth: int = 0) -> Iterator[torch.Tensor]:
    if depth > 4:
        return
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, torch.nn.Module):
        yield from value.parameters()
        yield from value.buffers()
    elif isinstance(value, torch.optim.Optimizer):
        for per_param in value.state.values():
            yield from _tensors(per_param, depth + 1)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _tensors(item, depth + 1)
