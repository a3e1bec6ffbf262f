"""Golden renders: every format of two real reports (a GPU trace, a CPU trace), as files.

A change to a renderer or to the sections shows up here as a readable diff of the files
in tests/golden/. Regenerate them on purpose, then review the diff before committing:

    .venv/bin/python -m pytest tests/report/formats/test_renderers_golden.py --update-goldens
"""

from __future__ import annotations

import re

import pytest

from steptrace.pipeline import analyze_source
from steptrace.report.formats.renderers import formats, renderer
from steptrace.report.sections.trace import View, report_document
from tests.conftest import TRACES, gpu_trace
from tests.paths import GOLDEN

TRACES_RENDERED = {
    "gpu": "amd_mi250_rocm62_minitoy_train",  # a ROCm trace: kernels, copies, two steps
    "cpu": "cpu_train_trace.json",  # labels, a DataLoader, findings, no GPU
}
SUFFIX = {"text": "txt", "md": "md", "html": "html", "json": "json"}


def rendered(kind: str, name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The report as a reader gets it, with the trace named relative to the traces folder."""
    path = gpu_trace(TRACES_RENDERED[kind])
    monkeypatch.chdir(TRACES)
    found = analyze_source(path.relative_to(TRACES), lanes=name == "html")  # as the CLI does
    view = View(lanes=found.lanes)
    return renderer(name).render([report_document(found.report.top(10), view)])


@pytest.mark.parametrize("name", sorted(SUFFIX))
@pytest.mark.parametrize("kind", sorted(TRACES_RENDERED))
def test_render_matches_its_golden_file(
    kind: str, name: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    text = rendered(kind, name, monkeypatch)
    golden = GOLDEN / f"{kind}.{SUFFIX[name]}"
    if request.config.getoption("--update-goldens"):
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"{golden} is missing: run pytest with --update-goldens"
    assert text == golden.read_text(encoding="utf-8")


def test_every_format_has_a_golden_file() -> None:
    assert set(formats()) == set(SUFFIX)


def headings(name: str, text: str) -> list[str]:
    """The section headings of a render, in order."""
    if name == "md":
        return [line[3:] for line in text.splitlines() if line.startswith("## ")]
    if name == "html":
        return [h for h in re.findall(r"<h2>(.*?)</h2>", text)]
    bold = re.compile(r"^\S.*$")  # text: headings start at column 0 and are not table rows
    return [line for line in text.splitlines() if bold.match(line)]


@pytest.mark.parametrize("kind", sorted(TRACES_RENDERED))
def test_the_formats_show_the_same_sections_in_the_same_order(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = gpu_trace(TRACES_RENDERED[kind])
    found = analyze_source(path, lanes=True)  # every section, the timeline's included
    document = report_document(found.report.top(10), View(lanes=found.lanes))
    expected = [s.heading for s in document.sections]
    html = renderer("html").render([document])
    assert [h.replace("&amp;", "&") for h in headings("html", html)] == expected
    markdown = renderer("md").render([document])
    assert [h.replace("\\", "") for h in headings("md", markdown)] == expected
    text = renderer("text").render([document])
    assert [line for line in headings("text", text) if line in expected] == expected
