"""Every source of text × every output: data, never markup, terminal control or hidden text.

One trace carries the same hostile text in every place a name comes from (operator, label,
kernel, thread, process, device, category, the scenario's question, the file name, whose
bytes are not even UTF-8); each command renders it in every format, and every output
(stdout and stderr) must be valid UTF-8 holding no control or invisible character: the
"Trojan Source" controls (``U+202E``, ``U+2066``...) are shown as ``\\u202e``, the file
name's bytes as ``\\xff``, rich markup stays text, and JSON keeps each value exactly.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steptrace.cli import app
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import View, report_document
from steptrace.scenario import Scenario, record_payload, sidecar_path
from tests.browser import loaded
from tests.tools.scrub.test_api_secrets import all_strings
from tests.tracegen import PID, TID, cpu, document, kernel, label, launch, step

# bidirectional override, isolates and marks, zero-width, BOM, a tag, an OSC title, C1 CSI,
# a line separator, and markup of rich, HTML and Markdown
HOSTILE = (
    "a\u202eb\u2066c\u2069d\u200be\u200ef\u061cg\ufeffh\U000e0041i\x1b]0;t\x07j\x9bk"
    "\u2028l[/]m[bold]n<b>o`p"
)
FILE_BYTES = b"\xff\xfe"  # a file name that is not UTF-8
SOURCES = ("operator", "label", "kernel", "thread", "process", "device", "category", "question")
HIDDEN = re.compile(r"[\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0]")
_RENDERER_STYLE = re.compile(r"\x1b\[[0-9;]*m")  # the text renderer's own colours


def hidden(text: str) -> list[str]:
    """The characters a reader would not see as written: controls but newline and tab,
    format characters, separators, surrogates, blank letters."""
    return [
        c
        for c in text
        if (unicodedata.category(c) in {"Cc", "Cf", "Cs", "Zl", "Zp"} and c not in "\n\t")
        or HIDDEN.match(c)
    ]


def hostile_doc(name: str) -> dict[str, Any]:
    """A small trace with ``name`` in every source of text."""
    events = [
        step(1, 0, 1_000),
        step(2, 1_000, 1_000),
        label(f"lab {name}", 10, 500),
        cpu(f"op {name}", 20, 100),
        launch(30, 5, correlation=1),
        kernel(f"kern {name}", 40, 300, correlation=1),
        {"ph": "X", "cat": f"cat {name}", "name": "odd", "pid": PID, "tid": TID, "ts": 1, "dur": 1},
        {"ph": "M", "name": "thread_name", "pid": PID, "tid": TID, "args": {"name": f"th {name}"}},
        {"ph": "M", "name": "process_name", "pid": PID, "args": {"name": f"pr {name}"}},
    ]
    doc = document(events)
    doc["deviceProperties"][0]["name"] = f"dev {name}"
    return doc


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Two hostile traces (a job of two ranks, or before and after), named with bytes that are
    not UTF-8, in a folder whose name opens rich markup (``x[/]y``)."""
    folder = tmp_path_factory.mktemp("m") / "x["
    folder.mkdir()
    paths = []
    for number in (1, 2):
        name = FILE_BYTES + f"{HOSTILE.replace('/', '')}{number}.json".encode()
        path = Path(os.fsdecode(bytes(folder) + b"/]" + name))
        path.write_text(json.dumps(hostile_doc(HOSTILE)))
        question = record_payload(Scenario(question=f"why {HOSTILE}?"), None)
        sidecar_path(path).write_text(json.dumps(question))
        paths.append(str(path))
    return paths[0], paths[1]


COMMANDS = {
    "analyze": lambda a, b: ["analyze", a],
    "ranks": lambda a, b: ["analyze", a, b],
    "per-rank": lambda a, b: ["analyze", a, b, "--per-rank"],
    "diff": lambda a, b: ["diff", a, b],
}


@pytest.mark.parametrize("output", ["text", "md", "html", "json"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_no_output_holds_hidden_or_controlling_text(
    traces: tuple[str, str], command: str, output: str
) -> None:
    args = [*COMMANDS[command](*traces), "--format", output]
    done = CliRunner().invoke(app, args, terminal_width=200)
    assert done.exit_code in (0, 1), done.output
    out, err = done.stdout_bytes.decode(), done.stderr_bytes.decode()  # valid UTF-8
    assert hidden(out) == [] and hidden(err) == [], (out[:2000], err)
    assert "Traceback" not in err and len(err.splitlines()) == len(set(err.splitlines()))
    if output == "json":
        values = list(all_strings(json.loads(out)))
        assert any(HOSTILE in value for value in values)  # each value kept exactly
        assert any("\\xff\\xfe" in value for value in values)  # the file name's bytes, shown
        return
    shown = r"\\+"  # one backslash, or Markdown's escaped one
    assert re.search(rf"{shown}u202e", out) and re.search(rf"{shown}xff{shown}xfe", out)
    assert "[/]m[bold]n" in out  # markup shown as written


def test_the_terminal_renders_no_control_and_no_markup(traces: tuple[str, str]) -> None:
    import steptrace

    report = steptrace.analyze(traces[0])
    out = renderer("text", terminal=True).render([report_document(report, View())])
    assert hidden(_RENDERER_STYLE.sub("", out)) == []
    assert "\\u202eb\\u2066c" in out and "[/]m[bold]n" in out and "\\x1b]0;t\\x07" in out


def test_warnings_and_errors_are_one_line_each(traces: tuple[str, str]) -> None:
    done = CliRunner().invoke(app, ["analyze", traces[0] + ".missing"])
    assert done.exit_code == 2
    (line,) = done.stderr_bytes.decode().splitlines()
    assert hidden(line) == [] and "\\xff\\xfe" in line and "\\u2028l" in line


def test_no_script_runs_in_the_html_report(traces: tuple[str, str], tmp_path: Path) -> None:
    """The page of a trace whose every name is markup: Chromium runs none of it."""
    script = "<img src=x onerror=window.owned=1><script>window.owned=1</script>"
    path = tmp_path / f"{script.replace('/', '_')}.json"
    path.write_text(json.dumps(hostile_doc(f"{HOSTILE}{script}")))
    done = CliRunner().invoke(app, ["analyze", str(path), "--format", "html"])
    assert done.exit_code in (0, 1), done.output
    page = tmp_path / "report.html"
    page.write_bytes(done.stdout_bytes)
    with loaded(page) as (browser_page, problems):
        assert browser_page.evaluate("window.owned") is None
        shown = browser_page.inner_text("body")
    assert "\\u202e" in shown and "<script>" in shown
    assert not [p for p in problems if "owned" in p]
