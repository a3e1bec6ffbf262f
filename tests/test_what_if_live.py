"""The what-if checked by A/B on a live CPU workload (``what_if_workloads``): removing a
region on the critical path is predicted within the A/B's confidence interval; removing
work on a side thread the step never waits for is predicted to change nothing, and
changes nothing measurable.

The graph predicts the time a change saves; the ratio it predicts divides that by the step
time outside the profiler (the A/B's baseline median; ``investigate`` has the capture's),
since the profiled step also holds the profiler's own bookkeeping (about 1 ms here).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import steptrace
from steptrace.analysis.context import TraceContext
from steptrace.analysis.critical_path import CriticalPath, critical_path
from steptrace.trace.load import load_trace
from steptrace.validate.results import NoDetectableDifference, Timed
from steptrace.validate.timing import TimingPlan
from tests import what_if_workloads as work

pytestmark = pytest.mark.slow  # a profiled run and two A/B comparisons: about 40 s
REMOVED = 1e6  # a speedup that leaves nothing of the region
PLAN = TimingPlan(warmup=3, block_steps=5, min_blocks=8, max_blocks=60, budget_s=16)


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> CriticalPath:
    path = tmp_path_factory.mktemp("what_if") / "trace.json"
    state, batches = work.make_state(), work.make_batches()
    schedule = torch.profiler.schedule(wait=1, warmup=2, active=5)
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule
    ) as prof:
        for k in range(8):
            work.step(state, batches[k % len(batches)])
            prof.step()
    prof.export_chrome_trace(str(path))
    targets = (("planted", REMOVED), ("side", REMOVED))
    return critical_path(TraceContext(load_trace(Path(path)), what_if=targets))


def _measured(candidate: object) -> Timed:
    result = steptrace.compare(
        work.step,
        candidate,  # type: ignore[arg-type]
        make_state=work.make_state,
        batches=work.make_batches(),
        plan=PLAN,
    )
    assert isinstance(result, Timed), result
    return result


def test_the_planted_region_is_on_the_path_and_the_side_work_is_not(
    profiled: CriticalPath,
) -> None:
    planted, side = profiled.what_if[:2]
    assert (planted.target, side.target) == ("planted", "side")
    assert planted.on_path_ms == pytest.approx(work.PLANTED_S * 1000, rel=0.1)
    assert side.on_path_ms == 0 and side.step_ms == side.length_ms
    for step in profiled.steps:
        assert all(s.name != "side" for s in step.segments)


def test_removing_the_planted_region_is_predicted_within_the_ab_interval(
    profiled: CriticalPath,
) -> None:
    planted = profiled.what_if[0]
    measured = _measured(work.without_planted)
    predicted = 1 - (planted.length_ms - planted.step_ms) / measured.baseline.median
    low, high = measured.ci
    assert low <= predicted <= high, (predicted, measured.ci, measured.ratio)


def test_removing_the_side_work_is_predicted_to_change_nothing_and_changes_nothing(
    profiled: CriticalPath,
) -> None:
    side = profiled.what_if[1]
    assert side.step_ms / side.length_ms == 1.0
    measured = _measured(work.without_side)
    low, high = measured.ci
    assert isinstance(measured, NoDetectableDifference) or low <= 1.0 <= high, measured
