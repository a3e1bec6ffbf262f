"""The critical path's prediction beside each check that removes what its finding names.

Contract: ``with_predictions(report, trace, results) -> tuple[CheckResult, ...]``: for each
check in ``REMOVES`` whose A/B gave a ratio and CI, the graph's prediction for the same
change (``analysis.what_if``: the finding's named work removed, per step of the finding),
as ``CheckResult.predicted`` and a clause of its sentence saying whether the measured CI
meets it. The saving is measured in profiled time, and the profiler inflates the work it
records by a factor the trace cannot tell (a sleep not at all, tiny operators several
times): so the prediction is a range, from 1 - the saving / the step's time outside the
profiler (the removed work not inflated; the capture's unprofiled steps) to 1 - the saving
/ the profiled path's length (inflated as much as the whole step). Without unprofiled steps
it is the second alone. Other checks change work by a factor no trace tells (pinned
copies, compiled kernels): they get no prediction. Without ``analysis.critical_path`` the
results are returned as they are.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import msgspec
import numpy as np

from steptrace.analysis.context import TraceContext
from steptrace.analysis.critical.path import walked
from steptrace.analysis.critical.what_if import predict, target_slices
from steptrace.hypotheses.finding import Finding
from steptrace.hypotheses.on_path import TARGETS, named
from steptrace.report.model import Report
from steptrace.trace.load import load_trace
from steptrace.validate.results import CheckResult, Prediction, Timed

REMOVED = 1e9  # a speedup that leaves nothing of the work
# the checks whose B removes the work their finding names: the batch prepared in advance,
# the constant tensors (and their copies) made once
REMOVES = frozenset({"input-pipeline", "repeated-copy"})


def with_predictions(
    report: Report, trace: Path, results: tuple[CheckResult, ...]
) -> tuple[CheckResult, ...]:
    """``results`` with the graph's prediction where one exists (see module)."""
    wanted = [r for r in results if r.rule in REMOVES and isinstance(r.comparison, Timed)]
    if not wanted or report.analysis.critical_path is None:
        return results
    context = TraceContext(load_trace(trace))
    by_rule = {f.rule: f for f in report.findings}
    out = []
    for result in results:
        finding = by_rule.get(result.rule)
        if result in wanted and finding is not None:
            assert isinstance(result.comparison, Timed)
            made = predicted_for(context, report, finding, result.comparison.ci)
            if made is not None:
                result = _said(result, made)
        out.append(result)
    return tuple(out)


def predicted_for(
    context: TraceContext, report: Report, finding: Finding, ci: tuple[float, float]
) -> Prediction | None:
    """The graph's prediction for removing what ``finding`` names, against ``ci``."""
    targets = tuple(named(finding, TARGETS.get(finding.rule, ())))
    if not targets:
        return None
    found = walked(context)
    chosen = np.zeros(len(found.graph), dtype=bool)
    for target in targets:
        chosen |= target_slices(found.graph, context.events, target)
    steps = set(finding.evidence.where.steps)
    saved, lengths = [], []
    for window, start, (lane, end) in zip(
        context.windows, found.starts_ns, found.ends, strict=True
    ):
        if window.name in steps:
            saved.append(end - start - predict(found.graph, start, lane, end, chosen, REMOVED))
            lengths.append(end - start)
    if not saved:
        return None
    saved_ms, profiled_ms = statistics.median(saved) / 1e6, statistics.median(lengths) / 1e6
    scaled = 1 - saved_ms / profiled_ms
    unprofiled_ms = _unprofiled_ms(report)
    if unprofiled_ms is None:
        return Prediction(targets, saved_ms, scaled, ci[0] <= scaled <= ci[1])
    ratio = max(1 - saved_ms / unprofiled_ms, 0.0)  # a step cannot take less than nothing
    low, high = min(ratio, scaled), max(ratio, scaled)
    return Prediction(targets, saved_ms, ratio, ci[0] <= high and low <= ci[1], scaled)


def _unprofiled_ms(report: Report) -> float | None:
    measured = report.capture.unprofiled_step_ms if report.capture else None
    return statistics.median(measured) if measured else None


def _said(result: CheckResult, made: Prediction) -> CheckResult:
    verdict = "meets" if made.within_ci else "is outside"
    scaled = made.ratio_scaled
    if scaled is None or round(scaled, 2) == round(made.ratio, 2):
        predicted = f"{made.ratio:.2f}x"
    else:
        predicted = (
            f"{made.ratio:.2f}x if the profiler did not inflate that work, {scaled:.2f}x if "
            "it inflated it as much as the whole step"
        )
    clause = (
        f" The critical path predicted {predicted} (removing {made.saved_ms:.3g} profiled ms "
        f"a step): the prediction {verdict} the measured interval."
    )
    return msgspec.structs.replace(result, predicted=made, sentence=result.sentence + clause)
