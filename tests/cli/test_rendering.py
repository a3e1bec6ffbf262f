"""One run, every format: ``steptrace render`` re-renders a saved report, the timeline
rebuilt from the report's trace when it is there and said missing when it is not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from steptrace.cli import app
from tests.paths import FIXTURES

runner = CliRunner()
TRACE = FIXTURES / "public" / "mi300x_qwen1.5-0.5b_inference.json.gz"
TIMELINE = "<h2>Timeline of the steps"


def saved(tmp_path: Path) -> tuple[Path, Path]:
    """The trace copied into ``tmp_path`` and its report saved there as JSON."""
    trace = tmp_path / TRACE.name
    shutil.copyfile(TRACE, trace)
    made = runner.invoke(app, ["analyze", str(trace), "--format", "json"])
    assert made.exit_code == 0, made.stderr
    report = tmp_path / "report.json"
    report.write_text(made.stdout, encoding="utf-8")
    return trace, report


def render(report: Path, output_format: str) -> tuple[int, str, str]:
    done = runner.invoke(app, ["render", str(report), "--format", output_format])
    return done.exit_code, done.stdout, done.stderr


def test_a_saved_report_renders_in_every_format_with_its_timeline(tmp_path: Path) -> None:
    trace, report = saved(tmp_path)
    direct = runner.invoke(app, ["analyze", str(trace), "--format", "md"]).stdout
    code, markdown, _ = render(report, "md")
    assert code == 0 and markdown == direct  # the same report, not a re-analysis's cousin
    code, html, errors = render(report, "html")
    assert code == 0 and TIMELINE in html and "not there" not in errors
    code, text, _ = render(report, "text")
    assert code == 0 and "Findings" in text
    code, again, _ = render(report, "json")
    assert code == 0 and json.loads(again) == json.loads(report.read_text(encoding="utf-8"))


def test_without_its_trace_the_timeline_is_said_missing(tmp_path: Path) -> None:
    trace, report = saved(tmp_path)
    trace.unlink()
    code, html, errors = render(report, "html")
    assert code == 0 and TIMELINE not in html and "<h2>Findings" in html
    assert f"the trace {trace} is not there" in errors


def test_a_trace_or_findings_alone_are_refused_in_one_line(tmp_path: Path) -> None:
    trace, _ = saved(tmp_path)
    code, _, errors = render(trace, "md")
    assert code == 2 and "not a saved steptrace report" in errors
    assert len(errors.strip().splitlines()) == 1
    only = runner.invoke(app, ["analyze", str(trace), "--format", "json", "--findings-only"])
    findings = tmp_path / "findings.json"
    findings.write_text(only.stdout, encoding="utf-8")
    code, _, errors = render(findings, "html")
    assert code == 2 and "holds only findings" in errors
