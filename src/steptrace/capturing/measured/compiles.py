"""What torch.compile compiled during a capture, and why: Dynamo's own record of each
compile (``torch._dynamo.utils.get_compilation_metrics``), kept in the sidecar.

A Kineto trace holds each compile's id and time but not its reason: the guard that failed
(a recompile), the frame, the graph breaks. Dynamo keeps a record of its last compiles in
the process (the same ``compilation_metrics`` that ``TORCH_TRACE`` writes) and counts each
graph break's reason (``counters["graph_break"]``): ``CompileLog`` notes both when the
capture begins and takes what is new when it ends.
Nothing is imported or switched on: a process that never loaded Dynamo has none.
"""

from __future__ import annotations

import sys
from typing import Any

from steptrace.scenario import CompileRecord

REASON_CHARS = 400  # of a reason: enough for a guard and its source line


class CompileLog:
    """Dynamo's compile records made between ``__init__`` and ``records``."""

    def __init__(self) -> None:
        self._before = {id(m) for m in _metrics()}
        self._breaks = _break_counts()

    def records(self) -> tuple[CompileRecord, ...]:
        return tuple(_record(m) for m in _metrics() if id(m) not in self._before)

    def break_reasons(self) -> tuple[str, ...]:
        """The first line of each graph break's reason Dynamo met during the capture."""
        seen = _break_counts()
        new = [r for r, n in seen.items() if n > self._breaks.get(r, 0)]
        return tuple(dict.fromkeys(line for r in new if (line := _short(r.splitlines()[0]))))


def _metrics() -> list[Any]:
    """Dynamo's compile records in this process; none when Dynamo was never loaded."""
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return []
    try:
        return list(utils.get_compilation_metrics())
    except Exception:  # another torch: no record rather than a failed capture
        return []


def _break_counts() -> dict[str, int]:
    utils = sys.modules.get("torch._dynamo.utils")
    try:
        return dict(utils.counters["graph_break"]) if utils is not None else {}
    except Exception:  # another torch
        return {}


def _record(m: Any) -> CompileRecord:
    reason = getattr(m, "recompile_reason", None)
    fail = getattr(m, "fail_reason", None)
    name = getattr(m, "co_name", None)
    where = f"{getattr(m, 'co_filename', '?')}:{getattr(m, 'co_firstlineno', '?')}"
    return CompileRecord(
        compile_id=str(getattr(m, "compile_id", "") or ""),
        frame=f"{name} ({where})" if name else None,
        reason=_short(reason),
        failed=_short(fail),
        start_us=getattr(m, "start_time_us", None),
        duration_us=getattr(m, "duration_us", None),
        graph_breaks=getattr(m, "num_graph_breaks", None),
    )


def _short(text: object) -> str | None:
    """One line of ``text`` (the user stack Dynamo appends left out), or None."""
    if text is None:
        return None
    return " ".join(str(text).split("User stack trace:")[0].split())[:REASON_CHARS] or None
