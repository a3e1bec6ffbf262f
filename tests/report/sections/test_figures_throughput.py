"""Throughput next to ms/step: samples/s from the scenario's batch, tokens/s from its
sequence length, not known without a batch size."""

from __future__ import annotations

import json

import pytest

import steptrace
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import report_document
from steptrace.scenario import Scenario, record_payload, throughput
from tests import tracegen
from tests.conftest import WriteTrace


def _report(write_trace: WriteTrace, scenario: Scenario | None) -> steptrace.Report:
    # three steps of 60, 50 and 70 ms: the median is 60 ms (the first is the others'
    # median: not shown apart, so counted)
    events = [
        tracegen.step(1, 0, 60_000),
        tracegen.step(2, 60_000, 50_000),
        tracegen.step(3, 110_000, 70_000),
        tracegen.cpu("aten::mm", 10, 5),
    ]
    path = write_trace(tracegen.document(events, gpu_devices=False), name="t.json")
    if scenario is not None:
        payload = record_payload(scenario, None)
        path.with_name("t.scenario.json").write_text(json.dumps(payload), encoding="utf-8")
    return steptrace.analyze(path)


def test_samples_and_tokens_per_second_at_the_median_step(write_trace: WriteTrace) -> None:
    scenario = Scenario(question="q?", batch_size=32, sequence_length=128)
    report = _report(write_trace, scenario)
    rate = report.throughput
    assert rate is not None
    assert rate.ms_per_step == pytest.approx(60.0)
    assert rate.samples_per_s == pytest.approx(32 / 0.060)
    assert rate.tokens_per_s == pytest.approx(32 * 128 / 0.060)
    for name in ("text", "md", "html"):
        out = renderer(name).render([report_document(report)])
        assert "533.3 samples/s" in out and "68,267 tokens/s" in out, name
    data = json.loads(renderer("json").render([report_document(report)]))
    assert data["throughput"]["samples_per_s"] == pytest.approx(32 / 0.060)


def test_without_a_batch_size_throughput_is_not_known(write_trace: WriteTrace) -> None:
    for scenario in (None, Scenario(question="q?")):
        report = _report(write_trace, scenario)
        assert report.throughput is None
        out = renderer("md").render([report_document(report)])
        assert "Throughput: not known" in out


def test_without_a_sequence_length_there_is_no_tokens_per_second() -> None:
    rate = throughput(Scenario(question="q?", batch_size=8), 4.0)
    assert rate is not None and rate.samples_per_s == pytest.approx(2000.0)
    assert rate.tokens_per_s is None
    assert throughput(Scenario(question="q?", batch_size=8), 0.0) is None
    with pytest.raises(ValueError, match="sequence_length"):
        Scenario(question="q?", sequence_length=0)
