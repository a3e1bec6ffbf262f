"""Silences: the stretches of a trace in which no work at all is recorded, long enough to
be more than the host's pace between operators.

Contract: ``silences(work, lo, hi) -> Intervals``, pure: the time inside ``[lo, hi]`` that
none of the ``work`` unions covers (the host's recorded work, ``TraceContext.host_work``,
and the GPU's busy time), in gaps that last at least ``SILENCE_US``, each whole (a step
sees the part of one that falls inside it).
Python between small operators leaves gaps of a few µs to tens of µs (the rule
``dispatch-bound`` reads them); a silence is the host doing something no operator
records — compiling, sleeping, reading a file, a Python loop — or waiting outside torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from steptrace.trace import intervals as iv

SILENCE_US = 100.0  # a gap this long is more than an operator's dispatch and Python's call


def silences(work: Sequence[iv.Intervals], lo: float, hi: float) -> iv.Intervals:
    """The gaps of every ``work`` union in ``[lo, hi]``, at least ``SILENCE_US`` long."""
    gaps = (np.array([lo]), np.array([hi]))
    for busy in work:
        gaps = iv.difference(gaps, busy)
    starts, ends = gaps
    long = ends - starts >= SILENCE_US
    return starts[long], ends[long]
