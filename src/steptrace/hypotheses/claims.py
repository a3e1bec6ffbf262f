"""Severity, defined once: the share of the step's wall time a finding explains.

A finding's ``severity`` is the time its observation explains in a step divided by that
step's wall time: the median over the steps, or, for a figure the trace gives only as a
whole (operators, kernels, copy patterns), that time over the steps' summed wall time;
always between 0 and 1. What each rule explains is listed in docs/findings.md. Two rules
never claim the same time:

- The GPU's idle time in a step goes to one cause each, in this order: reading the batch
  (input-pipeline), after a blocking call (sync-in-step), launches of kernels shorter than
  their launch (small-launches), the rest (cpu-bound). Each rule measures its part
  (``rules.common.idle_causes``).
- Other rules whose figures can cover the same time are listed in ``SHARED``: when both
  fire, the first gives up what the second claims. The analysis gives totals, not
  intervals, so what is left is a lower bound, and a caveat says so.

``gpu-not-observed`` is the one finding about the trace rather than a part of the step: the
whole step (1), since nothing the GPU did in it can be told.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from steptrace.analysis.time.cpu import SHORT_OPERATOR_US
from steptrace.hypotheses.finding import Finding, finding
from steptrace.units import pct

# Operators that launch matrix kernels (names), and communication operators.
MATRIX_OPERATOR = re.compile(
    r"conv|matmul|linear|gemm|einsum|attention|aten::(?:add|b|baddb|addb|_int_)?mm\b", re.I
)
COMMUNICATION_OPERATOR = re.compile(
    r"record_param_comms|c10d::|nccl|rccl|gloo|all_?reduce|all_?gather|reduce_?scatter|"
    r"all_?to_?all|broadcast",
    re.I,
)


def _operator_is(pattern: re.Pattern[str]) -> Callable[[Finding], bool]:
    def check(found: Finding) -> bool:
        return bool(pattern.search(str(found.evidence.values().get("operator", ""))))

    return check


def _pageable(found: Finding) -> bool:
    return found.evidence.values().get("host_memory") == "Pageable"


def _always(found: Finding) -> bool:
    return True


def _vector_operator(found: Finding) -> bool:
    """An operator that is neither matrix work nor communication: elementwise, reductions."""
    name = str(found.evidence.values().get("operator", ""))
    return not MATRIX_OPERATOR.search(name) and not COMMUNICATION_OPERATOR.search(name)


def _short_operator(found: Finding) -> bool:
    """An operator whose calls last at most ``SHORT_OPERATOR_US`` on average: dispatch's."""
    values = found.evidence.values()
    ms, calls = values.get("ms"), values.get("calls")
    if not isinstance(ms, int | float) or not isinstance(calls, int) or calls <= 0:
        return False
    return 1000 * ms / calls <= SHORT_OPERATOR_US


# (rule that gives up time, rule it gives it to, when): their figures can hold the same time.
SHARED: tuple[tuple[str, str, Callable[[Finding], bool]], ...] = (
    ("dominant-op", "precision", _operator_is(MATRIX_OPERATOR)),
    ("dominant-op", "low-efficiency", _operator_is(MATRIX_OPERATOR)),
    ("dominant-op", "fusion", _vector_operator),
    ("low-efficiency", "precision", _always),
    ("dominant-op", "comm-overlap", _operator_is(COMMUNICATION_OPERATOR)),
    ("repeated-copy", "pageable-memcpy", _pageable),
    ("optimizer-kernels", "small-launches", _always),
    ("optimizer-kernels", "cpu-bound", _always),
    ("dispatch-bound", "per-tensor-optimizer", _always),
    # a Dataset read in the main process is Python between small operators too: its time
    # is the batch's (input-pipeline), not the step's dispatch
    ("dispatch-bound", "input-pipeline", _always),
    ("dominant-op", "dispatch-bound", _short_operator),
    # time nothing records (the batch's wait apart) can be Python between small operators,
    # the host after a blocking call or between short launches; never a collective's
    # exposed time, when a communication kernel or gloo collective runs, which a silence
    # excludes by its definition (``TraceContext.silences``)
    *(
        ("unrecorded-time", taker, _always)
        for taker in ("dispatch-bound", "sync-in-step", "small-launches", "cpu-bound")
    ),
)


def resolve(found: list[Finding]) -> list[Finding]:
    """The findings with time claimed twice given to one of them (``SHARED``)."""
    return [_give_up(f, found) for f in found]


def _give_up(found: Finding, every: list[Finding]) -> Finding:
    takers = [
        other
        for loser, taker, when in SHARED
        if loser == found.rule and when(found)
        for other in every
        if other.rule == taker
    ]
    taken = sum(t.severity for t in takers)
    if not takers or taken <= 0:
        return found
    names = ", ".join(sorted({t.rule for t in takers}))
    return finding(
        found.rule,
        found.severity - taken,
        observation=found.observation,
        evidence=found.evidence,
        hypothesis=found.hypothesis,
        next_check=found.next_check,
        caveats=(
            *found.caveats,
            f"Its time may be the time {names} claims ({pct(taken)} of the step): that "
            f"share is counted there, and this finding keeps what is left "
            f"({pct(max(found.severity - taken, 0.0))} of {pct(found.severity)}).",
        ),
    )
