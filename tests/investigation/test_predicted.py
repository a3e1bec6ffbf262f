"""The critical path's prediction for a check that removes what its finding names
(``investigation.predicted``), on a real CPU training trace whose batch reading is on the
path."""

from __future__ import annotations

import statistics

import msgspec
import pytest

import steptrace
from steptrace.analysis.context import TraceContext
from steptrace.investigation.predicted import REMOVES, predicted_for
from steptrace.scenario import CaptureFacts
from steptrace.trace.load import load_trace
from tests.conftest import gpu_trace


@pytest.fixture(scope="module")
def case() -> tuple[steptrace.Report, TraceContext]:
    path = gpu_trace("cpu_train_trace.json")
    report = steptrace.analyze(path, critical_path=True)
    return report, TraceContext(load_trace(path))


def test_removing_the_batch_reading_is_predicted_from_its_time_on_the_path(
    case: tuple[steptrace.Report, TraceContext],
) -> None:
    report, context = case
    (finding,) = [f for f in report.findings if f.rule == "input-pipeline"]
    assert finding.rule in REMOVES and finding.critical_path is not None
    made = predicted_for(context, report, finding, (0.0, 2.0))
    assert made is not None
    labels = finding.evidence.values()["labels"]
    assert isinstance(labels, tuple) and made.targets == labels
    # removing work on the path saves at most its time there, and here it is all saved:
    # the batch is read on the step's thread, with nothing beside it
    assert made.saved_ms == pytest.approx(finding.critical_path.on_path_ms, rel=1e-6)
    path = report.analysis.critical_path
    assert path is not None
    capture = report.capture
    unprofiled = capture.unprofiled_step_ms if capture else None
    step_ms = (
        statistics.median(unprofiled)
        if unprofiled
        else statistics.median(s.length_ms for s in path.steps)
    )
    assert made.ratio == pytest.approx(1 - made.saved_ms / step_ms)
    assert made.within_ci


def test_an_interval_that_misses_the_prediction_says_so(
    case: tuple[steptrace.Report, TraceContext],
) -> None:
    report, context = case
    (finding,) = [f for f in report.findings if f.rule == "input-pipeline"]
    made = predicted_for(context, report, finding, (1.5, 2.0))
    assert made is not None and not made.within_ci


def test_with_unprofiled_steps_the_prediction_is_a_range_over_the_profilers_inflation(
    case: tuple[steptrace.Report, TraceContext],
) -> None:
    """Profiled twice as slow as outside: the removed work saves its profiled time (not
    inflated) or half of it (inflated as much as the step); an interval meeting either
    end holds the prediction, one between neither does not."""
    report, context = case
    (finding,) = [f for f in report.findings if f.rule == "input-pipeline"]
    path = report.analysis.critical_path
    assert path is not None
    profiled = statistics.median(s.length_ms for s in path.steps)
    outside = report_with_unprofiled(report, profiled / 2)
    made = predicted_for(context, outside, finding, (0.0, 2.0))
    assert made is not None and made.ratio_scaled is not None
    assert made.ratio == pytest.approx(max(1 - made.saved_ms / (profiled / 2), 0.0))
    assert made.ratio_scaled == pytest.approx(1 - made.saved_ms / profiled)
    assert made.ratio <= made.ratio_scaled  # the step shrank more than the saving
    low, high = made.ratio, made.ratio_scaled
    middle = (low + high) / 2
    between = predicted_for(context, outside, finding, (middle, middle + 0.01))
    above = predicted_for(context, outside, finding, (high + 0.01, high + 0.02))
    assert between is not None and between.within_ci
    assert above is not None and not above.within_ci


def report_with_unprofiled(report: steptrace.Report, step_ms: float) -> steptrace.Report:
    facts = report.capture or CaptureFacts()
    return msgspec.structs.replace(
        report, capture=msgspec.structs.replace(facts, unprofiled_step_ms=(step_ms,) * 3)
    )
