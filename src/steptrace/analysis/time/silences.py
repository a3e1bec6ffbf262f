"""Silences: the stretches of a trace in which no work at all is recorded, long enough to
be more than the host's pace between operators.

Contract: ``silences(work, lo, hi) -> Intervals``, pure: the time inside ``[lo, hi]`` that
none of the ``work`` unions covers (the host's recorded work, ``TraceContext.host_work``,
the GPU's busy time and the steps' edges, ``step_edges``), in gaps that last at least
``SILENCE_US``, each whole (a step sees the part of one that falls inside it).
Python between small operators leaves gaps of a few µs to tens of µs (the rule
``dispatch-bound`` reads them); a silence is the host doing something no operator
records — compiling, sleeping, reading a file, a Python loop — or waiting outside torch.

``step_edges(lo, hi, host) -> Intervals``: at each edge of a step the loop takes its turn
and the profiler its step call (``profiler.step()`` closes one marker and opens the next),
and neither records anything. From a step's start to the first thing the host records in
it (an operator or a label's start), and from the last one to the step's end, up to
``EDGE_US`` of each edge is that bookkeeping, not a silence. On torch 2.13 CPU the two
edges of a 0.35 ms step took 30-510 µs each, quiet and beside two spinning processes (a
preempted one aside): counted as silences they were half of a healthy short step.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from steptrace.trace import intervals as iv

SILENCE_US = 100.0  # a gap this long is more than an operator's dispatch and Python's call
EDGE_US = 1000.0  # the loop's turn and the profiler's step call, at each edge of a step


def silences(work: Sequence[iv.Intervals], lo: float, hi: float) -> iv.Intervals:
    """The gaps of every ``work`` union in ``[lo, hi]``, at least ``SILENCE_US`` long."""
    gaps = (np.array([lo]), np.array([hi]))
    for busy in work:
        gaps = iv.difference(gaps, busy)
    starts, ends = gaps
    long = ends - starts >= SILENCE_US
    return starts[long], ends[long]


def step_edges(lo: iv.Floats, hi: iv.Floats, host: iv.Intervals) -> iv.Intervals:
    """Each step's ``[lo, hi]`` edges before the first and after the last of ``host`` (what
    the host records, labels included) inside it, at most ``EDGE_US`` each."""
    starts, ends = host
    if starts.size == 0:
        starts, ends = np.array([np.inf]), np.array([np.inf])  # nothing recorded: no edge ends
    following = np.searchsorted(ends, lo, side="right")  # the first span that ends after lo
    first = np.where(following < starts.size, starts[np.minimum(following, starts.size - 1)], hi)
    preceding = np.searchsorted(starts, hi, side="left") - 1  # the last that starts before hi
    last = np.where(preceding >= 0, ends[np.maximum(preceding, 0)], lo)
    first, last = np.clip(first, lo, hi), np.clip(last, lo, hi)
    head_end = np.minimum(first, lo + EDGE_US)
    tail_start = np.maximum(last, hi - EDGE_US)
    return iv.union(np.concatenate((lo, tail_start)), np.concatenate((head_end, hi)))
