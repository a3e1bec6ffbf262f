"""``OperatorTiming``: one operator timed alone outside the profiler, beside the trace's
figures for it. Plain data (no torch, no numpy): ``steptrace.validate.operator_timing``
makes it, a report reads it (``msgspec.json.decode(data, type=OperatorTiming)``).
"""

from __future__ import annotations

import msgspec


class OperatorTiming(msgspec.Struct, frozen=True, kw_only=True):
    """One operator timed alone, and what the trace says of it.

    The trace's figures are over the whole trace: its self time per call, and its calls
    divided by the trace's steps. Alone, the operator runs with warm caches and no
    neighbours, on random values of the recorded shapes and dtypes: its median is what the
    operator itself costs, to set beside what the trace says it cost inside the step.
    """

    operator: str
    device: str
    median_ms: float  # per call, alone (torch.utils.benchmark's blocked_autorange)
    iqr_ms: float
    runs: int  # calls timed
    trace_self_ms_per_call: float
    trace_calls_per_step: float | None  # None: the trace has no steps
    script: str  # the script that was run, to run again or edit
