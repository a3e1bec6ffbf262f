"""Rule ``unrecorded-time`` on hand-built analyses, and in the verdict's words."""

from __future__ import annotations

from typing import Any

import pytest

from steptrace.analysis.measure import TraceAnalysis
from steptrace.hypotheses import Case, Finding, Thresholds, find
from steptrace.hypotheses.rules.unrecorded import unrecorded_time
from steptrace.hypotheses.verdict import verdict_of
from tests.analyses import analysis, cpu, gpu_step, phase, reading, steps


def unrecorded(data: TraceAnalysis, **limits: Any) -> list[Finding]:
    return unrecorded_time(Case(data), Thresholds(**limits))


def silent(*ms: float | None, gpu: bool = False, **step: Any) -> TraceAnalysis:
    """Steps of 10 ms with ``ms`` of each unrecorded."""
    gpus = [gpu_step(0.1) for _ in ms] if gpu else None
    cpus = [cpu(unrecorded_ms=m) for m in ms]
    return analysis(steps(*[10.0] * len(ms), cpu=cpus, gpu=gpus, **step))


def test_it_fires_at_half_the_step_and_claims_its_median_share() -> None:
    (found,) = unrecorded(silent(5.0, 6.0, 7.0))
    assert found.rule == "unrecorded-time"
    assert found.severity == 0.6
    values = found.evidence.values()
    assert values["unrecorded_ms_median"] == 6.0
    assert "60.0% of the step" in found.observation
    assert "the GPU not observed" in found.observation


def test_under_half_or_not_read_it_is_silent() -> None:
    assert unrecorded(silent(4.9, 4.9, 4.9)) == []
    assert unrecorded(silent(None, None)) == []
    assert unrecorded(silent(3.0, 3.0), unrecorded_share=0.3) != []


def test_the_labels_around_it_are_named_largest_first() -> None:
    labels = (phase("log", 2.0, unrecorded_ms=1.5), phase("train", 6.0, unrecorded_ms=4.0))
    (found,) = unrecorded(silent(8.0, 8.0, phases=labels))
    assert found.evidence.values()["labels"] == ("train", "log")
    assert "train 4.000 ms; log 1.500 ms" in found.observation


def test_reading_the_batch_is_left_to_input_pipeline() -> None:
    """The wait for a loader is unrecorded too: it is input-pipeline's."""
    loader = phase("read_batch", 4.0, unrecorded_ms=4.0)
    data = silent(7.0, 7.0, reading=reading(4.0), phases=(loader,))
    found = {f.rule: f for f in find(Case(data))}
    assert found["input-pipeline"].severity == 0.4
    assert "unrecorded-time" not in found  # 0.3 left: under half the step
    (kept,) = unrecorded(data, unrecorded_share=0.3)
    assert kept.severity == pytest.approx(0.3)
    assert kept.evidence.values()["labels"] == ()  # the loader's label is not named


def test_the_verdict_on_a_gpu_names_it_as_the_hosts_cause() -> None:
    data = silent(9.0, 9.0, gpu=True)
    verdict = verdict_of(Case(data), find(Case(data)), Thresholds())
    assert verdict.bound == "host"
    assert "mostly while the trace records no work on the host" in verdict.sentence
    assert verdict.top[0].rule == "unrecorded-time"


def test_the_verdict_on_a_cpu_says_the_host_holds_rather_than_computes() -> None:
    data = silent(6.0, 6.0)
    verdict = verdict_of(Case(data), find(Case(data)), Thresholds())
    assert "the host holds 100.0% of the step, and no work is recorded in 60.0%" in (
        verdict.sentence
    )
    quiet = silent(0.5, 0.5)
    assert "the CPU computes 100.0%" in verdict_of(Case(quiet), [], Thresholds()).sentence
