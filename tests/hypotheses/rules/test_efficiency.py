"""Rules ``low-efficiency`` and ``fusion``: read on every real trace, at their thresholds,
and silent on a live CPU capture whose GPU figures are not observed."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import msgspec
import pytest

import steptrace
from steptrace.analysis.measure import TraceAnalysis
from steptrace.hypotheses import Case, Finding, Thresholds, find
from steptrace.hypotheses.rules.efficiency import fusion, low_efficiency
from steptrace.investigation.runners import _flops_timed
from tests.conftest import report_of, trace_params
from tests.public_traces import B200, MI300X, public_report

# Where each rule fires, read as an expert would (the reasons in the test below).
FIRES = {
    "fusion": {"tracelens_h100", "mi300x"},
    "low-efficiency": {"tracelens_h100", "mi300x"},
}


def _analysis(path: Path) -> TraceAnalysis:
    if path.parent.name == "public":
        return public_report(path).analysis
    return report_of(path.name).analysis


def _traces() -> list[Any]:
    shared = list(trace_params())
    return [*shared, pytest.param(B200, id="b200"), pytest.param(MI300X, id="mi300x")]


def _rules(analysis: TraceAnalysis, **limits: Any) -> dict[str, list[Finding]]:
    case, thresholds = Case(analysis), Thresholds(**limits)
    return {"fusion": fusion(case, thresholds), "low-efficiency": low_efficiency(case, thresholds)}


@pytest.mark.parametrize("path", _traces())
def test_each_real_trace_fires_where_an_expert_would(path: Path) -> None:
    """Qwen1.5 inference in eager mode (H100, MI300X): the GPU is busy 90% of the step, 47-63%
    of it RMSNorm, rotary, SiLU and copies (fusion), and flash attention runs at 8-19% of its
    roofline (low-efficiency). The B200 vLLM step waits on the host (GPU busy 13%); the CNNs
    are bound by convolutions and GEMMs; the others are CPU traces or mostly idle."""
    analysis = _analysis(path)
    fired = {rule for rule, found in _rules(analysis).items() if found}
    expected = {rule for rule, where in FIRES.items() if any(k in path.name for k in where)}
    assert fired == expected
    if not analysis.trace.gpu_observed:
        assert fired == set()  # a CPU trace's GPU figures are not observed


def test_fusion_reads_the_busy_time_and_its_kinds() -> None:
    analysis = report_of("tracelens_h100").analysis
    (found,) = fusion(Case(analysis), Thresholds())
    values = found.evidence.values()
    busy = statistics.median(s.gpu.utilization for s in analysis.steps if s.gpu)
    assert values["gpu_busy_share"] == pytest.approx(busy)
    summary = analysis.summary.gpu_categories or ()
    vector = sum(
        c.share_of_busy or 0 for c in summary if c.category in ("elementwise", "reduction")
    )
    assert values["elementwise_reduction_share"] == pytest.approx(vector)
    assert values["memory_bound_share"] > 0.99  # the vector rows sit under the ridge point
    assert "torch.compile" in found.next_check
    # at the thresholds: just over the shares it stays silent
    assert not fusion(Case(analysis), Thresholds(fusion_share=vector + 0.01))
    assert not fusion(Case(analysis), Thresholds(fusion_gpu_busy=busy + 0.01))


def test_fusion_without_shapes_says_the_intensity_is_not_known() -> None:
    analysis = report_of("tracelens_h100").analysis
    shapeless = msgspec.structs.replace(analysis, roofline=())
    (found,) = fusion(Case(shapeless), Thresholds())
    assert found.evidence.values()["memory_bound_share"] is None
    assert any("intensity is not known" in c for c in found.caveats)


def test_low_efficiency_names_the_largest_operator_under_its_roofline() -> None:
    analysis = report_of("tracelens_h100").analysis
    (found,) = low_efficiency(Case(analysis), Thresholds())
    low = [
        r
        for r in analysis.roofline
        if r.model in ("GEMM", "convolution", "attention") and (r.roofline_pct or 100) < 30
    ]
    largest = max(low, key=lambda r: r.gpu_ms or 0)
    values = found.evidence.values()
    assert values["operator"] == largest.operator == "aten::_scaled_dot_product_flash_attention"
    assert values["gpu_ms"] == pytest.approx(sum(r.gpu_ms or 0 for r in low))
    wall = sum(s.wall_ms for s in analysis.steps)
    assert found.severity == pytest.approx(sum(r.gpu_ms or 0 for r in low) / wall)
    assert "attention" in found.hypothesis and "operator-alone" in found.next_check
    # the GEMMs run at 58-68% of theirs: above 30%, at 70% they are named too
    (wider,) = low_efficiency(Case(analysis), Thresholds(low_efficiency_pct=70))
    assert any("aten::mm" in n for n in wider.evidence.values()["operators"])  # type: ignore[union-attr]
    assert not low_efficiency(Case(analysis), Thresholds(low_efficiency_share=0.07))


def test_time_is_not_claimed_twice() -> None:
    found = find(Case(report_of("tracelens_h100").analysis))
    total = sum(f.severity for f in found if f.basis == "step time")  # not memory's shares
    assert total <= 1.0  # fusion (vector kernels) and low-efficiency (matrix work) apart


def test_the_check_reports_the_flops_of_the_shapes_it_times() -> None:
    analysis = report_of("tracelens_h100").analysis
    flops = _flops_timed(analysis, "aten::mm")
    typical = next(o for o in analysis.operators if o.name == "aten::mm").input_shapes
    assert typical is not None and "8944" in typical  # the most frequent aten::mm shapes
    assert flops == 2 * 8944 * 2816 * 1024
    assert _flops_timed(analysis, "aten::cat") is None  # no model: no FLOPs to report


torch = pytest.importorskip("torch", reason="capture needs torch (installed by make test)")


def test_a_live_cpu_capture_never_fires_them(tmp_path: Path) -> None:
    """Matrix products far under the CPU's measured roof, and elementwise work that is
    most of the step: on the GPU both rules would look; here the GPU is not observed."""
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    scenario = steptrace.Scenario(question="Does anything run far from the hardware?")
    window = steptrace.Window(wait=0, warmup=1, active=2, record_shapes=True)
    with steptrace.capture(scenario, out=tmp_path / "trace.json", window=window) as run:
        while not run.done:
            x = torch.mm(a, b)
            for _ in range(20):
                x = (x * 1.0001).add_(0.5).relu()
            run.step()
    assert run.result is not None
    report = steptrace.analyze(run.result.trace)
    assert report.analysis.roofline and report.analysis.roofline_peaks is not None
    assert not {f.rule for f in report.findings} & {"fusion", "low-efficiency"}
