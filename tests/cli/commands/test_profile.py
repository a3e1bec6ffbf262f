"""``steptrace profile MODULE:FUNCTION``: capture, analysis and report in one command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from steptrace.cli import app
from tests.paths import TESTS

pytest.importorskip("torch", reason="capture needs torch (installed by make test)")

pytestmark = pytest.mark.slow  # end to end
runner = CliRunner()
WORKLOADS = str(TESTS / "workloads.py")


def test_profile_training_workload_from_a_file(tmp_path: Path) -> None:
    out = tmp_path / "run" / "trace.json"
    result = runner.invoke(
        app, ["profile", f"{WORKLOADS}:tiny_training", "--out", str(out), "--format", "json"]
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["scenario"]["question"] == "Does the step wait for data?"
    assert [s["name"] for s in report["analysis"]["steps"]] == ["ProfilerStep#2", "ProfilerStep#3"]
    assert report["capture"]["cold_start_ms"]
    assert out.exists() and out.with_name("trace.scenario.json").exists()


def test_profile_inference_workload_from_a_module(tmp_path: Path) -> None:
    out = tmp_path / "infer.json"
    result = runner.invoke(app, ["profile", "tests.workloads:tiny_inference", "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "Question: How long does one request take?" in result.stdout
    assert "Model load (outside every request)" in result.stdout


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("tests.workloads", "expected MODULE:FUNCTION"),
        ("tests.workloads:missing", "has no function 'missing'"),
        ("tests.workloads:not_a_workload", "returned int, not a steptrace.capturing.Workload"),
        ("no_such_module_xyz:f", "cannot import"),
        ("nowhere/file.py:f", "no such file"),
    ],
)
def test_bad_targets_get_one_line(tmp_path: Path, target: str, problem: str) -> None:
    result = runner.invoke(app, ["profile", target, "--out", str(tmp_path / "t.json")])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and problem in result.stderr
    assert "Traceback" not in result.stderr


def test_existing_output_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    out.write_text("keep me")
    result = runner.invoke(app, ["profile", "tests.workloads:tiny_training", "--out", str(out)])
    assert result.exit_code == 2
    assert f"{out} exists already" in result.stderr
    assert out.read_text() == "keep me"


def test_profile_findings_only(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    result = runner.invoke(
        app, ["profile", "tests.workloads:tiny_training", "--out", str(out), "--findings-only"]
    )
    assert result.exit_code == 0, result.stderr
    assert "Question: Does the step wait for data?" in result.stdout
    assert "Steps (wall time" not in result.stdout
