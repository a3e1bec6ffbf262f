"""What any renderer must hold, whatever a trace contains: names stay text in every format,
numbers sit right-aligned, nothing is empty or ambiguous."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import steptrace
from steptrace.cli import app
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import View, report_document
from tests.conftest import WriteTrace
from tests.tracegen import cpu, document, kernel, label, launch, step

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
HOSTILE = {
    "label": "see http://e.vil and www.e.vil <b>`x`|*y*",
    "operator": "aten::odd\x07bell\r\nline2",
    "kernel": "kern\x1b]0;title\x07 [red]not markup[/red]",
}


def hostile_trace(write_trace: WriteTrace, name: str = "trace.json") -> Path:
    events = [
        step(1, 0, 1_000),
        step(2, 1_000, 1_000),
        label(HOSTILE["label"], 10, 500),
        cpu(HOSTILE["operator"], 20, 100),
        launch(30, 5, correlation=1),
        kernel(HOSTILE["kernel"], 40, 300, correlation=1),
    ]
    doc = document(events)
    doc["deviceProperties"][0]["name"] = "GPU \x1b[2J"
    return write_trace(doc, name=name)


@pytest.mark.parametrize("name", ["text", "md", "html"])
def test_no_control_character_from_a_trace_reaches_an_output(
    write_trace: WriteTrace, name: str
) -> None:
    report = steptrace.analyze(hostile_trace(write_trace))
    out = renderer(name).render([report_document(report)])
    assert CONTROL.findall(out.replace("\n", "").replace("\t", "")) == []
    assert "\\x1b" in out and "\\x07" in out  # made visible, not dropped


def test_a_newline_in_a_name_does_not_split_a_text_table_row(write_trace: WriteTrace) -> None:
    report = steptrace.analyze(hostile_trace(write_trace))
    out = renderer("text").render([report_document(report)])
    assert "│ aten::odd\\x07bell\\x0d\\x0aline2 │" in out  # the operators table's cell
    assert not any(line.lstrip("│ ").startswith("line2") for line in out.splitlines())


def test_names_are_never_rich_markup_in_text(write_trace: WriteTrace, tmp_path: Path) -> None:
    (tmp_path / "a[").mkdir()
    path = hostile_trace(write_trace, name="a[/b]red[bold]y.json")  # was a MarkupError
    result = CliRunner().invoke(app, ["analyze", str(path)], terminal_width=200)
    assert result.exit_code == 0, result.stderr
    assert "a[/b]red[bold]y.json" in result.stdout
    assert "[red]not markup[/red]" in result.stdout


def test_markdown_escapes_and_makes_no_link(write_trace: WriteTrace) -> None:
    report = steptrace.analyze(hostile_trace(write_trace))
    out = renderer("md").render([report_document(report)])
    words = re.sub(r"(`+).*?\1", "", out)  # outside code spans, where GitHub makes links
    assert "http://" not in words and "www.e" not in words
    from steptrace.report.formats.to_md import text

    assert text("see http://e.vil or www.e.vil") == "see http\\://e.vil or www\\.e.vil"
    assert "<b>" not in words  # inside a code span it is shown as written
    row = next(line for line in out.splitlines() if "aten::odd" in line)
    assert row.startswith("|") and row.endswith("|")  # one row, the newline did not break it


def test_html_ids_are_unique_with_several_documents(write_trace: WriteTrace) -> None:
    reports = [steptrace.analyze(hostile_trace(write_trace, name=f"t{k}.json")) for k in (1, 2)]
    page = renderer("html").render([report_document(r) for r in reports])
    ids = re.findall(r'id="([^"]+)"', page)
    assert len(ids) == len(set(ids)) >= 20
    assert "<title>steptrace: 2 reports</title>" in page


def test_numbers_are_right_aligned_in_every_table_of_a_diff(write_trace: WriteTrace) -> None:
    before = write_trace(document([step(1, 0, 1_000), cpu("aten::mm", 10, 100)]))
    after = write_trace(document([step(1, 0, 1_000), cpu("aten::mm", 10, 300)]))
    out = CliRunner().invoke(app, ["diff", str(before), str(after), "--format", "md"]).stdout
    assert "|:---|:---|---:|---:|---:|---:|---:|" in out
    assert "| `aten::mm` | changed | 1 | 1 | 0.100 | 0.300 | +0.200 |" in out
    assert "## Kernels (total ms per step)\n\nNo change listed." in out  # no empty table


def headings(text: str) -> list[str]:
    """Section headings of a terminal render: the bold, underlined lines."""
    return re.findall(r"\x1b\[1;4m(.*?)\x1b\[0m", text)


def test_the_text_report_shows_exactly_the_document_sections(write_trace: WriteTrace) -> None:
    document_ = report_document(steptrace.analyze(hostile_trace(write_trace)), View())
    out = renderer("text", terminal=True).render([document_])
    assert headings(out) == [s.heading for s in document_.sections]


def test_cells_in_every_unit() -> None:
    from steptrace.analysis.spread import Spread
    from steptrace.report.formats.cells import cell_text

    assert cell_text(None, "ms") == "not observed" and cell_text("—", "ms") == "—"
    assert (cell_text(1.23456, "ms"), cell_text(12345.678, "ms")) == ("1.235", "12,345.68")
    assert (cell_text(0.1234, "share"), cell_text(-0.25, "delta_ms")) == ("12.3%", "-0.250")
    assert (cell_text(1536, "bytes"), cell_text(2.5, "ratio")) == ("1.5 KB", "2.50×")
    assert (cell_text(12000, "count"), cell_text(2.5, "count")) == ("12,000", "2.5")
    assert cell_text(1234.567, "count") == "1,234.57"  # a mean count: never 1.23e+03
    assert cell_text(7.37e90, "number") == "7.37e+90"  # never ninety digits
    assert cell_text(Spread(1.0, 0.5, 2.0), "ms") == "1.000 [0.500–2.000]"
