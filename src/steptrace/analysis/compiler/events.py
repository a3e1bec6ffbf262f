"""The compiler's own events in a trace: torch.compile's phases, and what they ran.

Contract: ``compiler_rows(events)``: per event row, whether it is the compiler's: a
``<phase> (dynamo_timed)`` event or another of its phases (``phase_names``: the wrappers
``dynamo`` > ``entire_frame_compile`` begin before the first timed one), an operator inside
one on its thread (the compiler's tracing and code generation), or a ``<phase>_data: ...
compile_id=F/C`` annotation; None when the trace holds no ``(dynamo_timed)`` event (every
trace but a compiling one: nothing is computed). ``compile_inside(events, ops)``: the
compiler's time inside each operator, which its self time leaves out (the lazy backward
compile runs inside ``CompiledFunctionBackward``).
"""

from __future__ import annotations

import re

import numpy as np
from numpy.typing import NDArray

from steptrace.trace import intervals as iv
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable

TIMED = " (dynamo_timed)"
COMPILE_ID = re.compile(r"compile_id=(\d+/\d+)")
# The compiler's phases recorded without a (dynamo_timed) twin, around or inside them
# (torch 2.13): a step's compile begins in ``dynamo`` > ``entire_frame_compile``.
PHASES = frozenset(
    {
        "dynamo",
        "entire_frame_compile",
        "entire_backward_compile",
        "backend_compile",
        "inductor_compile",
        "code_gen",
    }
)
ATTEMPT = re.compile(r"^compile_attempt_\d+$")


def is_annotation(name: str) -> bool:
    """A compile phase's ``_data:`` annotation (zero-length, carrying its compile id)."""
    return "_data: " in name and COMPILE_ID.search(name) is not None


def phase_names(names: list[str]) -> list[int]:
    """The name ids of the compiler's phases: ``(dynamo_timed)`` events, their twins
    without the suffix, ``PHASES`` and ``compile_attempt_N``."""
    timed = {n.removesuffix(TIMED) for n in names if n.endswith(TIMED)}
    return [
        i
        for i, n in enumerate(names)
        if n.endswith(TIMED) or n in timed or n in PHASES or ATTEMPT.match(n)
    ]


def is_compiler_label(name: str) -> bool:
    """A label the compiler writes: a phase's annotation, or a phase itself."""
    return name.endswith(TIMED) or is_annotation(name)


def compiler_rows(events: EventTable) -> NDArray[np.bool_] | None:
    """Per row: the compiler's own event (see module); None when the trace has none."""
    spans = _phase_spans(events)
    if spans is None:
        return None
    names = events.names
    data = [i for i, n in enumerate(names) if is_annotation(n)]
    ids = events.name_id
    mine = np.isin(ids, np.array(phase_names(list(names)) + data, dtype=ids.dtype))
    ops = np.flatnonzero(events.kind == Kind.CPU_OP)
    for thread, (starts, ends) in spans.items():
        here = ops[events.thread_id[ops] == thread]
        at = np.searchsorted(starts, events.start_us[here], side="right") - 1
        inside = (at >= 0) & (events.start_us[here] < ends[np.maximum(at, 0)])
        mine[here[inside]] = True
    return mine


def compile_inside(events: EventTable, ops: NDArray[np.int64]) -> NDArray[np.float64] | None:
    """Per operator row of ``ops``: the compiler's time (its phases' union on the same
    thread) inside it, in µs; None when the trace holds no compile."""
    spans = _phase_spans(events)
    if spans is None:
        return None
    inside = np.zeros(ops.size, dtype=np.float64)
    for thread, union in spans.items():
        here = np.flatnonzero(events.thread_id[ops] == thread)
        rows = ops[here]
        inside[here] = iv.covered(union, events.start_us[rows], events.end_us[rows])
    return inside


def _phase_spans(events: EventTable) -> dict[int, iv.Intervals] | None:
    """Per thread: the union of the compiler's phases on it; None without a compile."""
    names = events.names
    if not any(n.endswith(TIMED) for n in names):
        return None  # no compile in the trace (its phases without one never occur alone)
    ids = events.name_id
    spans = np.flatnonzero(np.isin(ids, np.array(phase_names(list(names)), dtype=ids.dtype)))
    threads = events.thread_id[spans]
    return {
        thread: iv.union(events.start_us[on], events.end_us[on])
        for thread in np.unique(threads).tolist()
        for on in [spans[threads == thread]]
    }
