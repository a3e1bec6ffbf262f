"""The critical-path strip in a real headless Chromium: a click on a GPU piece selects the
bar of its kernel, and the page still fits 1400 px.

The page is loaded from a file with no network (``tests.browser.loaded``): no console
error and no request may happen. Screenshots go to ``STEPTRACE_SCREENSHOTS`` when set.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from steptrace.pipeline import Tables, analyze_checked
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import View, report_document
from tests.browser import loaded
from tests.conftest import gpu_trace

pytestmark = pytest.mark.slow

VISIBLE = "[...document.querySelectorAll('.tl svg.tlv')].filter(s => s.style.display !== 'none')[0]"
# the widest GPU piece that links to a bar: its name, its bar's id, where to click it
WIDEST_GPU = f"""(() => {{
  const data = JSON.parse(document.querySelector('.tl-data').textContent);
  const pieces = [...{VISIBLE}.querySelectorAll('g.cps rect.p2[data-t]')];
  const r = pieces.sort((a, b) => b.getBoundingClientRect().width -
                                  a.getBoundingClientRect().width)[0];
  const box = r.getBoundingClientRect();
  return {{name: data.pathNames[+r.dataset.n], bar: r.dataset.t,
           x: box.x + box.width / 2, y: box.y + box.height / 2, width: box.width}};
}})()"""
SELECTED = f"""(() => {{
  const data = JSON.parse(document.querySelector('.tl-data').textContent);
  return [...{VISIBLE}.querySelectorAll('rect.b.sel')].map(b =>
    ({{id: b.dataset.i, name: data.names[+b.dataset.n]}}));
}})()"""


def shot(page: Any, name: str) -> None:
    where = os.environ.get("STEPTRACE_SCREENSHOTS")
    if where:
        page.locator(".tl").first.screenshot(path=str(Path(where) / name))


def test_a_click_on_a_gpu_piece_selects_its_kernel_and_the_page_fits(tmp_path: Path) -> None:
    found = analyze_checked(
        gpu_trace("a100_cuda_event_sync__"), lanes=True, tables=Tables(critical_path=True)
    ).found
    path = tmp_path / "report.html"
    document = report_document(found.report, View(lanes=found.lanes))
    path.write_text(renderer("html").render([document]), encoding="utf-8")
    with loaded(path, size=(1400, 900)) as (page, problems):
        wider = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        page.locator(".tl").first.scroll_into_view_if_needed()
        shot(page, "path-whole.png")
        piece = page.evaluate(WIDEST_GPU)
        page.mouse.click(piece["x"], piece["y"])
        selected = page.evaluate(SELECTED)
        info = page.locator(".tl .info").first.inner_text()
        shot(page, "path-selected.png")
    assert problems == []
    assert wider == 0
    assert piece["width"] >= 4  # a piece one can click at full view
    assert {"id": piece["bar"], "name": piece["name"]} in selected
    assert info.startswith(f"critical path, gpu {piece['name']}: ")
    assert f", in kernel {piece['name']}: " in info
