"""How much of each finding's time lies on the critical path (``analysis.critical_path``).

Contract: ``on_critical_path(findings, analysis) -> tuple[Finding, ...]`` fills
``Finding.critical_path`` after the rules ran, when the path was computed: each rule that
claims step time declares here what its time is made of (``TARGETS``: evidence figures
that name operators, labels or kernels, or a kind of work on the path), and the path's
time inside those (``StepPath.by_name``, ``by_kind_ms``; of named events the largest, as
they may nest) is taken per step of the finding's ``where``, capped at the path's
length; ``on_path_ms`` is its median over those steps and ``share`` that over the
finding's own time (its severity times the steps' median wall time). A finding with none
on the path gets the caveat ``OFF_PATH``; ``find`` ranks it after those on the path. A
rule not listed, a finding of memory, or a trace without the path: ``critical_path``
stays None (not known).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable

import msgspec

from steptrace.analysis.critical.path import CriticalPath, StepPath
from steptrace.analysis.measure import TraceAnalysis
from steptrace.hypotheses.finding import Finding, OnCriticalPath

OFF_PATH = "off the critical path: speeding it up will not shorten the step"
# rule -> what its time is made of: an evidence figure naming events, "kind:K" (a kind of
# segment on the path), or "contains:TEXT" (every event name holding TEXT)
TARGETS: dict[str, tuple[str, ...]] = {
    "input-pipeline": ("labels",),
    "repeated-copy": ("operator",),
    "small-launches": ("kind:launch",),
    "dominant-op": ("operator",),
    "pageable-memcpy": ("contains:Pageable",),
    "sync-in-step": ("kind:wait",),
    "cpu-bound": ("kind:cpu",),
    "precision": ("examples",),
    "low-efficiency": ("operator",),
    "fusion": ("operators",),
    "optimizer-kernels": ("labels",),
}
_TRUNCATED = 120  # kernel names in evidence are cut to this many characters


def on_critical_path(findings: Iterable[Finding], analysis: TraceAnalysis) -> list[Finding]:
    """``findings`` with ``critical_path`` filled where it can be (see module)."""
    path = analysis.critical_path
    return [_marked(f, path) if path is not None else f for f in findings]


def off_path(finding: Finding) -> bool:
    """The finding's time is known to lie off the critical path."""
    on = finding.critical_path
    return on is not None and on.on_path_ms == 0


def _marked(finding: Finding, path: CriticalPath) -> Finding:
    targets = TARGETS.get(finding.rule)
    if targets is None or finding.basis != "step time":
        return finding
    names = named(finding, targets)
    steps = [s for s in path.steps if s.step in set(finding.evidence.where.steps)]
    if not steps:
        return finding
    on_ms = statistics.median(min(_on(s, names), s.length_ms) for s in steps)
    own_ms = finding.severity * statistics.median(s.wall_ms for s in steps)
    share = min(on_ms / own_ms, 1.0) if own_ms > 0 else None
    caveats = finding.caveats + ((OFF_PATH,) if on_ms == 0 else ())
    return msgspec.structs.replace(
        finding, critical_path=OnCriticalPath(on_ms, share), caveats=caveats
    )


def named(finding: Finding, targets: tuple[str, ...]) -> list[str]:
    """What a finding names among ``targets`` (evidence figures, or a kind or text as is)."""
    values = finding.evidence.values()
    found: list[str] = []
    for target in targets:
        if ":" in target and target.split(":", 1)[0] in ("kind", "contains"):
            found.append(target)
            continue
        value = values.get(target)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, tuple):
            found += [v for v in value if isinstance(v, str)]
    return found


def _on(step: StepPath, names: list[str]) -> float:
    """The path's time in what ``names`` name, in one step (ms): kinds and texts added up,
    named events the largest of them (labels a finding names may nest: ``read_batch``
    around the loader's ``__next__``)."""
    total, largest = 0.0, 0.0
    for name in names:
        if name.startswith("kind:"):
            total += step.by_kind_ms.get(name.removeprefix("kind:"), 0.0)
        elif name.startswith("contains:"):
            text = name.removeprefix("contains:")
            total += sum(o.on_path_ms for o in step.by_name if text in o.name)
        else:
            found = sum(o.on_path_ms for o in step.by_name if _same(o.name, name))
            largest = max(largest, found)
    return total + largest


def _same(full: str, given: str) -> bool:
    """``given`` names ``full``: the same, cut short, or with its inputs (``aten::mul
    [[16, 559], ...]``) or a count (``cudaStreamSynchronize ×3``) after it."""
    bare = given.split(" [", 1)[0].split(" ×", 1)[0]
    return full in (given, bare) or (len(given) >= _TRUNCATED and full.startswith(given))
