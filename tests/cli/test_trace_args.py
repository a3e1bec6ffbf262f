"""steptrace's own files given to ``analyze`` (a demo folder, ``out/*.json``): skipped with a
note, the traces beside them analyzed; only those: one error line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from steptrace.cli import app
from tests.conftest import shared_file

runner = CliRunner()


@pytest.fixture
def demo_like(tmp_path: Path) -> Path:
    """A folder as the demo leaves it: a trace, its sidecar, and what steptrace wrote."""
    trace = tmp_path / "trace.json.gz"
    shutil.copy(shared_file("cpu/cpu_train_trace.json.gz"), trace)
    report = runner.invoke(app, ["analyze", str(trace), "--format", "json"])
    assert report.exit_code == 0
    (tmp_path / "report.json").write_text(report.stdout, encoding="utf-8")
    (tmp_path / "trace.scenario.json").write_text(
        json.dumps({"schema": "steptrace.scenario/2", "scenario": {"question": "q?"}}),
        encoding="utf-8",
    )
    comparisons = [{"title": 'a "quoted" A/B', "schema": "steptrace.compare/3", "verdict": "x"}]
    (tmp_path / "comparisons.json").write_text(json.dumps(comparisons), encoding="utf-8")
    (tmp_path / "ranks.json").write_text('{"schema": "steptrace.ranks/1"}', encoding="utf-8")
    return tmp_path


def test_files_named_one_by_one_skip_steptrace_s_own(demo_like: Path) -> None:
    named = sorted(str(p) for p in demo_like.glob("*.json*"))
    result = runner.invoke(app, ["analyze", *named, "--format", "md"])
    assert result.exit_code == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if ": skipped, " in line]
    assert sorted(n.split(": skipped")[0].removeprefix("steptrace: warning: ") for n in notes) == [
        str(demo_like / n)
        for n in ("comparisons.json", "ranks.json", "report.json", "trace.scenario.json")
    ]
    assert "sidecar" in next(n for n in notes if "scenario" in n)
    assert result.stdout.startswith("# ") and "trace.json.gz" in result.stdout.splitlines()[0]
    assert "error" not in result.stderr


def test_the_demo_folder_analyzes_its_trace(demo_like: Path) -> None:
    result = runner.invoke(app, ["analyze", str(demo_like), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["analysis"]["trace"]["path"].endswith("trace.json.gz")


def test_only_steptrace_s_own_files_is_one_error_line(demo_like: Path) -> None:
    (demo_like / "trace.json.gz").unlink()
    for arguments in ([str(demo_like)], sorted(str(p) for p in demo_like.glob("*.json"))):
        result = runner.invoke(app, ["analyze", *arguments])
        assert result.exit_code == 2
        errors = [line for line in result.stderr.splitlines() if "error" in line]
        assert len(errors) == 1 and "Traceback" not in result.stderr
