"""The verdict on the first screen: a real headless Chromium at 1400 x 900.

The page is the HTML report as the command line writes it (the timeline included); the
verdict's section must be the page's first element and end within the window's height.
Screenshots go to ``STEPTRACE_SCREENSHOTS`` when set.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from steptrace.pipeline import analyze_source
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import View, report_document
from tests.browser import loaded
from tests.conftest import gpu_trace
from tests.public_traces import B200

pytestmark = pytest.mark.slow
SCREEN = (1400, 900)


@pytest.mark.parametrize("name", ["resnet50_train", "tracelens_h100", "b200", "cpu_train_trace."])
def test_the_verdict_is_on_the_first_screen(name: str, tmp_path: Path) -> None:
    trace = B200 if name == "b200" else gpu_trace(name)
    found = analyze_source(trace, lanes=True)
    page_path = tmp_path / "report.html"
    document = report_document(found.report, View(lanes=found.lanes))
    page_path.write_text(renderer("html").render([document]), encoding="utf-8")
    with loaded(page_path, SCREEN) as (page, problems):
        first = page.evaluate("document.body.firstElementChild.id")
        box = page.locator("section#verdict").bounding_box()
        sentence = page.locator("section#verdict p.verdict").inner_text()
        rows = page.locator("section#verdict tbody tr").count()
        if where := os.environ.get("STEPTRACE_SCREENSHOTS"):
            page.screenshot(path=str(Path(where) / f"verdict-{name.strip('.')}.png"))
    assert problems == []
    assert first == "verdict"
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= SCREEN[1]
    assert sentence == found.report.verdict.sentence
    assert rows == len(found.report.verdict.top)
