"""The roofline in every format: the table everywhere, the chart in HTML (points under
their roofs, the row in each point's hover), and what is said without shapes or peaks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from steptrace.report.document import RooflineChart, Table, shown
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.roofline import HEADING
from steptrace.report.sections.trace import report_document
from tests.browser import loaded
from tests.conftest import report_of
from tests.public_traces import B200, public_report


def _section(report: object) -> object:
    (section,) = [s for s in report_document(report).sections if s.key == "roofline"]  # type: ignore[arg-type]
    return section


@pytest.mark.parametrize("name", ["text", "md", "html", "json"])
def test_every_format_shows_the_roofline_rows(name: str) -> None:
    report = report_of("tracelens_h100").top(6)
    text = renderer(name).render([report_document(report)])
    if name == "json":
        assert '"roofline": [' in text and '"roofline_pct":' in text
        return
    assert HEADING in text
    body = text.split(HEADING, 1)[1][:6000]
    assert "aten::mm" in body and "GEMM" in body and "61.7%" in body  # 610.5 of 989.5
    assert "H100 SXM" in body and "no model" in body  # aten::cat: shown, not costed


def test_a_format_without_charts_shows_the_chart_s_table() -> None:
    section = _section(report_of("tracelens_h100").top(6))
    (chart,) = [b for b in section.blocks if isinstance(b, RooflineChart)]  # type: ignore[attr-defined]
    assert shown(chart, (Table,)) == (chart.table,)
    assert len(chart.table.rows) == 6
    assert {r.label for r in chart.roofs} == {"bfloat16 matrix", "vector"}


def test_the_html_chart_draws_each_row_with_its_hover() -> None:
    report = report_of("tracelens_h100").top(6)
    html = renderer("html").render([report_document(report)])
    svg = re.search(r'<svg[^>]*class="roofline".*?</svg>', html, re.S)
    assert svg is not None
    tips = re.findall(r"<circle[^>]*><title>([^<]*)</title>", svg.group(0))
    drawn = [r for r in report.analysis.roofline if r.achieved_tflops]
    assert len(tips) == len(drawn)  # no FLOPs (aten::cat: no model): the table only
    assert any("aten::mm" in t and "61.7% of the roofline" in t for t in tips)
    assert "bfloat16 matrix 989.5" in svg.group(0) and "memory roof: 3.35 TB/s" in svg.group(0)


def test_without_shapes_or_peaks_the_section_says_why() -> None:
    cpu = renderer("text").render([report_document(report_of("cpu_train_trace.json.gz"))])
    assert "record_shapes=True" in cpu.split(HEADING, 1)[1][:400]
    shaped = renderer("md").render([report_document(report_of("cpu_train_trace_all"))])
    assert "the CPU's were not measured" in shaped.split(HEADING, 1)[1][:600]
    amd = renderer("md").render([report_document(report_of("amd_mi250"))])
    assert "not in the table of peaks" in amd.split(HEADING, 1)[1][:600]


def _kernel_table(report: object) -> Table:
    (section,) = [s for s in report_document(report).sections if s.key == "kernels"]  # type: ignore[arg-type]
    (table,) = [b for b in section.blocks if isinstance(b, Table)]
    return table


def test_kernels_name_those_that_do_not_fill_the_gpu() -> None:
    table = _kernel_table(public_report(B200))
    assert [c.title for c in table.columns][-4:] == ["occupancy", "blocks/SM", "regs", "smem"]
    thin = table.caption.split("the GPU is not filled): ", 1)[1]
    assert "multimem_all_reduce_kernel" in thin  # 0.05 blocks per SM: 8 blocks, 148 SMs
    assert "bmm_MxE4m3" not in thin.split(". Persistent")[0]  # 18 blocks per SM
    assert "blocks/SM" in [c.title for c in _kernel_table(report_of("kineto_v100")).columns]
    assert "launch shape: not recorded" in _kernel_table(report_of("amd_mi250")).caption


def test_the_chart_loads_in_headless_chromium(tmp_path: Path) -> None:
    page_file = tmp_path / "report.html"
    page_file.write_text(
        renderer("html").render([report_document(public_report(B200))]), encoding="utf-8"
    )
    with loaded(page_file) as (page, problems):
        chart = page.locator("svg.roofline")
        assert chart.count() == 1 and chart.bounding_box()["width"] > 600  # type: ignore[index]
        assert page.locator("svg.roofline circle title").count() >= 3
    assert problems == []


def test_the_section_says_what_share_of_the_gpu_time_it_places_whatever_the_cut() -> None:
    """Recomputed from every row: the share of the operators' GPU time with a bound, and
    the largest operator without a model named; the same once the table is cut."""
    report = report_of("kineto_v100_resnet50")
    rows = report.analysis.roofline
    total = sum(r.gpu_ms or 0.0 for r in rows)
    placed = sum(r.gpu_ms or 0.0 for r in rows if r.bound is not None)
    unmodelled = max((r for r in rows if r.model is None), key=lambda r: r.gpu_ms or 0.0)
    for shown_rows in (report, report.top(6)):
        text = renderer("text").render([report_document(shown_rows)])
        said = " ".join(text.split(HEADING, 1)[1][:1500].split())
        assert f"the roofline places {100 * placed / total:.1f}%" in said
        assert unmodelled.operator in said
