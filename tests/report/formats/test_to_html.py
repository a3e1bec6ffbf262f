"""The HTML report: its structure, and a real headless Chromium that loads it cleanly."""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

import steptrace
from steptrace.analysis.timeline.model import Lanes
from steptrace.pipeline import analyze_source
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import View, report_document
from tests.browser import loaded
from tests.conftest import lanes_of, report_of


def render_html(report: steptrace.Report, lanes: Lanes | None = None) -> str:
    return renderer("html").render([report_document(report, View(lanes=lanes))])


class Page(HTMLParser):
    """Collects tags, attributes and text: enough to check a page's structure."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[str] = []
        self.headings: list[str] = []
        self._in_heading = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.links += [v or "" for k, v in attrs if k in ("src", "href")]
        self._in_heading = tag == "h2"

    def handle_data(self, data: str) -> None:
        if self._in_heading:
            self.headings.append(data)
            self._in_heading = False


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def test_structure_of_a_gpu_report() -> None:
    report = report_of("resnet50_train").top(10)
    lanes = lanes_of("resnet50_train")
    page = parse(render_html(report, lanes))
    assert [h.split(" (")[0] for h in page.headings[:7]] == [
        "Verdict",
        "Question",
        "What this trace can tell",
        "Steps",
        "Timeline of the steps",
        "Labels per step",
        "GPU per step",
    ]
    assert "Findings" in page.headings and "Open the trace on the timeline" in page.headings
    html = render_html(report, lanes)
    views = html.count('<svg class="tlv"')  # the timeline: one per step, each with its plot
    assert views == len(report.analysis.steps) + 1  # and the consecutive steps together
    # steps, labels, GPU, GPU by kind, the roofline, and the timeline
    assert page.tags.count("svg") == 5 + 2 * views
    assert page.tags.count("script") == 2  # the timeline's data and its code, both inline
    ids = set(re.findall(r' id="([^"]+)"', html))
    assert page.links and all(link[1:] in ids for link in page.links)  # nothing fetched
    assert '<body><section id="verdict"><h1>' in html  # the verdict comes first
    assert html.count("<tr>") >= len(report.findings) + len(report.analysis.kernels)
    assert "No question recorded" in html


def test_a_cpu_report_says_the_gpu_was_not_observed() -> None:
    html = render_html(report_of("cpu_train_trace.json"))
    assert "GPU not observed" in html and "Kernels</h2><p>Kernels: not observed.</p>" in html


def test_names_are_escaped(write_trace) -> None:  # type: ignore[no-untyped-def]
    from tests.tracegen import document, label, step

    path = write_trace(document([step(1, 0, 100), label("<img src=x onerror=alert(1)>", 0, 50)]))
    html = render_html(*analyze_source(path, lanes=True))  # the lanes name it too
    assert "<img" not in html and "&lt;img" in html


@pytest.mark.slow
def test_the_report_loads_in_headless_chromium(tmp_path: Path) -> None:
    image = pytest.importorskip("PIL.Image")
    report = tmp_path / "report.html"
    report.write_text(render_html(report_of("resnet50_train").top(10), lanes_of("resnet50_train")))
    with loaded(report) as (page, problems):
        shot = page.screenshot(full_page=True)
        svg_count = page.evaluate(
            "[...document.querySelectorAll('svg')].filter(s => !s.closest('.tl')).length"
        )
    assert problems == []  # no console error, no network request
    assert svg_count == 5  # steps, labels, GPU, GPU by kind of work, the roofline
    pixels = image.open(io.BytesIO(shot)).convert("L")
    low, high = pixels.getextrema()
    assert high - low > 100  # not blank: text and bars on a light background
    assert len(pixels.histogram()) == 256 and sum(1 for n in pixels.histogram() if n) > 20
