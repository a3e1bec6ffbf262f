"""The critical path's prediction beside each check that removes what its finding names.

Contract: ``with_predictions(report, trace, results) -> tuple[CheckResult, ...]``: for each
check in ``REMOVES`` whose A/B gave a ratio and CI, the graph's prediction for the same
change (``analysis.what_if``: the finding's named work removed, per step of the finding),
as ``CheckResult.predicted`` and a clause of its sentence saying whether the measured CI
holds it. The predicted ratio is 1 - the saving / the step's time outside the profiler
(the capture's unprofiled steps; else the path's length), since a profiled step also holds
the profiler's bookkeeping. Other checks change work by a factor no trace tells (pinned
copies, compiled kernels): they get no prediction. Without ``analysis.critical_path`` the
results are returned as they are.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import msgspec
import numpy as np

from steptrace.analysis.context import TraceContext
from steptrace.analysis.critical_path import walked
from steptrace.analysis.what_if import predict, target_slices
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
    saved_ms = statistics.median(saved) / 1e6
    step_ms = _unprofiled_ms(report) or statistics.median(lengths) / 1e6
    ratio = 1 - saved_ms / step_ms
    return Prediction(targets, saved_ms, ratio, ci[0] <= ratio <= ci[1])


def _unprofiled_ms(report: Report) -> float | None:
    measured = report.capture.unprofiled_step_ms if report.capture else None
    return statistics.median(measured) if measured else None


def _said(result: CheckResult, made: Prediction) -> CheckResult:
    verdict = "within" if made.within_ci else "outside"
    clause = (
        f" The critical path predicted {made.ratio:.2f}x (removing {made.saved_ms:.3g} ms "
        f"a step): {verdict} the measured interval."
    )
    return msgspec.structs.replace(result, predicted=made, sentence=result.sentence + clause)
