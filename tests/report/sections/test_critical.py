"""The critical path in every format: its section holds the path's figures (by kind, the
what-if), and no section appears without the path."""

from __future__ import annotations

import json

import pytest

import steptrace
from steptrace import units
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import report_document
from tests.conftest import gpu_trace

FORMATS = ("text", "md", "html")


@pytest.fixture(scope="module")
def report() -> steptrace.Report:
    return steptrace.analyze(gpu_trace("kineto_v100_resnet50"), critical_path=True)


def _render(report: steptrace.Report, fmt: str) -> str:
    return renderer(fmt).render([report_document(report)])


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_shows_the_path_by_kind_and_the_what_if(
    report: steptrace.Report, fmt: str
) -> None:
    out = _render(report, fmt)
    path = report.analysis.critical_path
    assert path is not None
    assert "Critical path" in out
    for step in path.steps:
        assert step.step in out
        assert units.ms(step.length_ms) in out
        assert units.ms(step.by_kind_ms["gpu"]) in out
    for row in path.what_if:
        assert units.ms(row.step_ms) in out


def test_json_holds_the_same_path(report: steptrace.Report) -> None:
    data = json.loads(_render(report, "json"))
    path = report.analysis.critical_path
    assert path is not None
    found = data["analysis"]["critical_path"]
    assert [s["length_ms"] for s in found["steps"]] == [s.length_ms for s in path.steps]
    assert [w["target"] for w in found["what_if"]] == [w.target for w in path.what_if]


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_section_without_the_path(fmt: str) -> None:
    plain = steptrace.analyze(gpu_trace("kineto_v100_resnet50"))
    assert "Critical path" not in _render(plain, fmt)
