"""The verdict on real traces, shared and public, where the answer is clear from the raw JSON.

Each bound is checked against figures recomputed here from the trace's JSON with the
plain-Python reference (integer ns), never against numbers copied from a report.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

import steptrace
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import View, report_document
from steptrace.scenario import record_payload, sidecar_path
from tests import reference
from tests.conftest import gpu_trace, report_of, trace_params
from tests.public_traces import B200, MI300X, public_report

DATALOADER = "enumerate(DataLoader)#"


def busy_shares(path: Path) -> list[float]:
    """Per step, from the raw JSON: the union of GPU work in the step over its wall time
    (the whole trace is one window when it has no step markers)."""
    evs = reference.events(reference.read_exact(path))
    gpu = reference.gpu_events(evs)
    windows = reference.step_windows(evs) or [("window", 0, max(e.end for e in evs))]
    return [reference.busy_ns(gpu, lo, hi) / (hi - lo) for _, lo, hi in windows]


def test_a_data_loader_bound_v100_resnet50_is_input_bound() -> None:
    path = gpu_trace("resnet50_train")
    evs = reference.events(reference.read_exact(path))
    gpu = reference.gpu_events(evs)
    idle_reading, idle_other = [], []
    for _, lo, hi in reference.step_windows(evs):
        reads = [e for e in evs if e.name.startswith(DATALOADER) and lo <= e.start < hi]
        spans = [(max(e.start, lo), min(e.end, hi)) for e in reads]
        reading = sum(b - a - reference.busy_ns(gpu, a, b) for a, b in spans)
        idle = (hi - lo) - reference.busy_ns(gpu, lo, hi)
        idle_reading.append(reading / (hi - lo))
        idle_other.append((idle - reading) / (hi - lo))
    busy = statistics.median(busy_shares(path))
    # the raw JSON: the GPU computes under 80% of the step, and most of its idle time is
    # while the DataLoader reads the batch
    assert busy < 0.8
    assert statistics.median(idle_reading) >= 0.6 * (1 - busy)
    verdict = report_of("resnet50_train").verdict
    assert (verdict.bound, verdict.on) == ("input", "gpu")
    figures = {f.name: f.value for f in verdict.figures}
    assert figures["input_share"] == pytest.approx(statistics.median(idle_reading), abs=0.01)
    assert verdict.top[0].rule == "input-pipeline"


def test_a_launch_bound_eager_b200_trace_at_13_percent_busy_is_host_bound() -> None:
    (busy,) = busy_shares(B200)
    assert 0.10 < busy < 0.16  # the raw JSON: the GPU works 13% of the step
    verdict = public_report(B200).verdict
    assert verdict.bound == "host"
    assert verdict.top[0].rule == "small-launches"
    assert "mostly for launches of kernels shorter than their launch call" in verdict.sentence


@pytest.mark.parametrize("name", ["tracelens_h100_qwen", "mi300x"])
def test_a_busy_llm_inference_is_gpu_bound_and_memory_bound_by_its_roofline(name: str) -> None:
    path = MI300X if name == "mi300x" else gpu_trace(name)
    (busy,) = busy_shares(path)
    assert busy > 0.85  # the raw JSON: the H100 92%, the MI300X 91%
    report = public_report(path) if name == "mi300x" else report_of(name)
    verdict = report.verdict
    assert (verdict.bound, verdict.gpu_bound) == ("gpu", "memory")
    timed = [r for r in report.analysis.roofline if r.bound is not None and r.gpu_ms]
    memory_ms = sum(r.gpu_ms or 0.0 for r in timed if r.bound == "memory")
    assert memory_ms > sum(r.gpu_ms or 0.0 for r in timed) / 2
    assert verdict.top[0].rule == "fusion"


def test_cpu_traces_are_answered_on_the_cpu() -> None:
    train = report_of("cpu_train_trace.json").verdict
    assert (train.bound, train.on) == ("host", "cpu")
    assert "on the CPU (this trace holds no GPU work)" in train.sentence
    gloo = report_of("cpu_only_gloo").verdict
    assert (gloo.bound, gloo.on) == ("communication", "cpu")


def test_a_gpu_expected_but_not_recorded_is_not_observed(tmp_path: Path) -> None:
    copied = tmp_path / "rank.json.gz"
    copied.write_bytes(gpu_trace("cpu_only_gloo").read_bytes())
    scenario = steptrace.Scenario(question="q", device="cuda")
    sidecar_path(copied).write_text(json.dumps(record_payload(scenario, None)))
    verdict = steptrace.analyze(copied).verdict
    assert verdict.bound == "not-observed"
    assert verdict.top[0].rule == "gpu-not-observed"


@pytest.mark.parametrize("path", trace_params())
def test_every_trace_has_a_verdict_from_its_own_findings(path: Path) -> None:
    report = report_of(path.name)
    verdict = report.verdict
    assert verdict.sentence and verdict.bound in (
        "input",
        "host",
        "gpu",
        "communication",
        "memory",
        "mixed",
        "not-observed",
    )
    assert verdict.on == ("gpu" if report.analysis.trace.gpu_observed else "cpu")
    named = [f for f in report.findings if not f.minor]
    assert [t.rule for t in verdict.top] == [f.rule for f in named][: len(verdict.top)]
    assert not any(f.minor for f in report.findings if f.rule in {t.rule for t in verdict.top})
    parts = [f.value for f in verdict.figures if f.unit == "share"]
    assert all(isinstance(v, float) and 0 <= v <= 1 for v in parts)


@pytest.mark.parametrize("fmt", ["text", "md", "json"])
def test_the_verdict_comes_first_in_every_format(fmt: str) -> None:
    report = report_of("resnet50_train")
    out = renderer(fmt).render([report_document(report, View())])
    if fmt == "json":
        assert out.lstrip().startswith('{\n  "schema": "steptrace.report/4",\n  "verdict": {')
        return
    lines = [line for line in out.splitlines() if line.strip()]
    heading = "## Verdict" if fmt == "md" else "Verdict"
    assert lines[1] == heading  # right under the title
    assert "Input-bound" in lines[2]
    assert out.index("Verdict") < out.index("Question")
