"""The critical path as a section: time on the path by kind per step, and the what-if.

The figures are ``analysis.critical_path`` (``steptrace.analysis.critical.path``, computed
with ``--critical-path``); no section without it. Nothing is computed here but words.
"""

from __future__ import annotations

from steptrace import units
from steptrace.analysis.critical.path import CriticalPath, StepPath
from steptrace.report.document import (
    Block,
    Cell,
    Column,
    Paragraph,
    Section,
    Series,
    Stacked,
    Table,
)
from steptrace.report.model import RanksReport, Report

HEADING = "Critical path: the chain of work that bounds each step"
KINDS = ("cpu", "launch", "gpu", "wait", "idle")
NAME_WIDTH = 48


def critical_path(report: Report) -> tuple[Section, ...]:
    path = report.analysis.critical_path
    if path is None:
        return ()
    blocks: tuple[Block, ...] = (
        Paragraph(_about()),
        _drawn(path),
        _by_kind(path),
        *_what_if(path),
    )
    return (Section("critical-path", HEADING, blocks),)


def _about() -> str:
    return (
        "From each step's start to the end of the last work it launched (so at least its "
        "wall time), the work each piece waited for last: cpu (inside an operator, label or "
        "Python function), launch (runtime calls and launch latency), gpu (kernels, copies, "
        "sets), wait (synchronizations), idle (nothing on the path ran). Only work on the path "
        "shortens the step when it gets faster. The HTML report draws each step's path under "
        "its lanes on the timeline."
    )


def _drawn(path: CriticalPath) -> Stacked:
    """Each step's path as one bar split by kind (HTML; the table holds the numbers)."""
    return Stacked(
        tuple(s.step for s in path.steps),
        tuple(
            Series(k, tuple(s.by_kind_ms.get(k, 0.0) for s in path.steps), muted=k == "idle")
            for k in KINDS
        ),
        tuple(s.length_ms for s in path.steps),
        "ms",
        caption="Each bar is one step's critical path, split by kind; idle in grey.",
    )


def _by_kind(path: CriticalPath) -> Table:
    columns = (
        Column("step", "name"),
        Column("path ms", "ms"),
        Column("wall ms", "ms"),
        *(Column(f"{k} ms", "ms") for k in KINDS),
        Column("largest on the path", "name"),
    )
    return Table(
        columns,
        tuple(_kind_row(s) for s in path.steps),
        caption="Time on the path by kind, adding up to the path's length.",
    )


def _kind_row(step: StepPath) -> tuple[Cell, ...]:
    named = sorted((*step.operators, *step.kernels), key=lambda o: -o.on_path_ms)
    largest = (
        f"{units.short(named[0].name, NAME_WIDTH)} ({units.ms(named[0].on_path_ms)})"
        if named
        else "—"
    )
    return (
        step.step,
        step.length_ms,
        step.wall_ms,
        *(step.by_kind_ms.get(k, 0.0) for k in KINDS),
        largest,
    )


def _what_if(path: CriticalPath) -> tuple[Table, ...]:
    if not path.what_if:
        return ()
    rows = tuple(
        (
            units.short(w.target, NAME_WIDTH),
            w.speedup,
            w.on_path_ms,
            w.length_ms,
            w.step_ms,
            (w.length_ms - w.step_ms) / w.length_ms if w.length_ms > 0 else None,
        )
        for w in path.what_if
    )
    columns = (
        Column("target", "name"),
        Column("speedup", "ratio"),
        Column("on path ms", "ms"),
        Column("path ms", "ms"),
        Column("predicted ms", "ms"),
        Column("gain", "share"),
    )
    caption = (
        "What-if, on the step of median path length: the target that much faster, the graph "
        "replayed; the gain never passes its time on the path."
    )
    return (Table(columns, rows, caption=caption),)


JOB_HEADING = "Critical path of the job: the rank and phase that bound each step"


def job_critical_path(report: RanksReport) -> tuple[Section, ...]:
    """The job's path per step (``across.ranks.job_path``); none without it."""
    bounds = report.critical_path
    if bounds is None:
        return ()
    rows = tuple(
        (
            b.step,
            b.rank,
            b.phase,
            b.phase_on_path_ms,
            b.length_ms,
            b.collective or "—",
            b.others_waited_ms,
        )
        for b in bounds
    )
    table = Table(
        (
            Column("step", "name"),
            Column("rank", "count"),
            Column("phase", "name"),
            Column("phase on path ms", "ms"),
            Column("rank's path ms", "ms"),
            Column("last collective", "text"),
            Column("others waited ms", "ms"),
        ),
        rows,
        caption=(
            "A collective ends on every rank when its last rank arrives: the step's last "
            "matched collective hands the job's path to that rank; the phase is the label with "
            "the most time on that rank's own path."
        ),
    )
    return (Section("job-critical-path", JOB_HEADING, (table,)),)
