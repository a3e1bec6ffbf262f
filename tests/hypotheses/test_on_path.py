"""Each finding's time on the critical path (``hypotheses.on_path``): recomputed from the
path's segments and the raw nesting, the caveat and the ranking of findings off it."""

from __future__ import annotations

import statistics

import pytest

import steptrace
from steptrace.hypotheses.on_path import OFF_PATH, TARGETS, off_path
from tests.conftest import gpu_trace

TRACES = [
    "kineto_v100_resnet50",
    "v100_1rank_train_nsres",
    "tracelens_h100_qwen",
    "cpu_train_trace.json",
]


@pytest.fixture(scope="module", params=TRACES)
def report(request: pytest.FixtureRequest) -> steptrace.Report:
    return steptrace.analyze(gpu_trace(request.param), critical_path=True)


def test_findings_of_time_say_how_much_lies_on_the_path(report: steptrace.Report) -> None:
    path = report.analysis.critical_path
    assert path is not None
    for finding in report.findings:
        on = finding.critical_path
        if finding.rule not in TARGETS or finding.basis != "step time":
            assert on is None
            continue
        assert on is not None
        steps = [s for s in path.steps if s.step in finding.evidence.where.steps]
        assert 0 <= on.on_path_ms <= max(s.length_ms for s in steps) + 1e-9
        assert on.share is None or 0 <= on.share <= 1
        assert (OFF_PATH in finding.caveats) == (on.on_path_ms == 0)


def test_kinds_of_work_are_read_from_the_segments(report: steptrace.Report) -> None:
    path = report.analysis.critical_path
    assert path is not None
    for finding in report.findings:
        kinds = [t for t in TARGETS.get(finding.rule, ()) if t.startswith("kind:")]
        if not kinds or finding.critical_path is None:
            continue
        (kind,) = kinds
        spent = [
            sum(g.end_us - g.start_us for g in s.segments if g.kind == kind.removeprefix("kind:"))
            / 1000
            for s in path.steps
            if s.step in finding.evidence.where.steps
        ]
        assert finding.critical_path.on_path_ms == pytest.approx(statistics.median(spent), abs=1e-6)


def test_findings_off_the_path_come_after_those_on_it(report: steptrace.Report) -> None:
    timed = [f for f in report.findings if f.basis == "step time"]
    flags = [off_path(f) for f in timed]
    assert flags == sorted(flags)  # False (on the path, or not known) first


def test_without_the_path_nothing_is_marked() -> None:
    plain = steptrace.analyze(gpu_trace("kineto_v100_resnet50"))
    assert plain.analysis.critical_path is None
    assert all(f.critical_path is None and OFF_PATH not in f.caveats for f in plain.findings)


def test_by_name_never_holds_more_than_the_path(report: steptrace.Report) -> None:
    path = report.analysis.critical_path
    assert path is not None
    for step in path.steps:
        assert all(o.on_path_ms <= step.length_ms + 1e-9 for o in step.by_name)
        for kernel in step.kernels:  # a kernel counts for itself at least
            named = next(o for o in step.by_name if o.name == kernel.name)
            assert named.on_path_ms >= kernel.on_path_ms - 1e-9
