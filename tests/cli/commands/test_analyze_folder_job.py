"""``steptrace analyze`` of several traces: one job only when they say they are its ranks.

Unrelated real traces in a folder get one report each and one note naming ``--as-job``;
``--as-job`` reads them as one job; the ranks of a real gloo run stay one job unasked;
``--as-job`` with ``--per-rank`` is a one-line usage error.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner, Result

from steptrace.cli import app
from tests.across.ranks.reports import FIXTURES, rank_paths
from tests.conftest import gpu_trace

runner = CliRunner()
UNRELATED = (
    "cpu_train_trace.json",
    "cpu_infer_trace",
    "cpu_compile_trace",
    "a100_cuda_event_sync__",
)
NOTE = "one report per trace; --as-job reads them as the ranks of one job"


def run(*args: str) -> Result:
    return runner.invoke(app, ["analyze", *args])


def _folder(tmp_path: Path, names: tuple[str, ...]) -> Path:
    for name in names:
        source = gpu_trace(name)
        shutil.copy(source, tmp_path / source.name)
    return tmp_path


def test_unrelated_traces_are_one_report_each_with_a_note(tmp_path: Path) -> None:
    result = run(str(_folder(tmp_path, UNRELATED)), "--format", "json", "--top", "1")
    assert result.exit_code == 0, result.stderr
    reports = json.loads(result.stdout)
    assert [r["schema"] for r in reports] == ["steptrace.report/4"] * len(UNRELATED)
    paths = sorted(Path(r["analysis"]["trace"]["path"]).name for r in reports)
    assert paths == sorted(p.name for p in tmp_path.iterdir())
    notes = [line for line in result.stderr.splitlines() if NOTE in line]
    assert notes == [
        "steptrace: 4 traces, 3 of them without rank information (no distributedInfo rank): " + NOTE
    ]


def test_as_job_reads_them_as_one_job(tmp_path: Path) -> None:
    result = run(str(_folder(tmp_path, UNRELATED)), "--as-job", "--format", "json")
    assert result.exit_code == 0, result.stderr
    job = json.loads(result.stdout)
    assert job["schema"] == "steptrace.ranks/2"
    assert len(job["ranks"]) == len(UNRELATED)
    assert NOTE not in result.stderr


def test_traces_each_rank_0_are_not_one_job(tmp_path: Path) -> None:
    folder = _folder(tmp_path, ("a100_cuda_event_sync__", "event_sync_multistream"))
    result = run(str(folder), "--format", "json", "--top", "1")
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(result.stdout)) == 2
    assert f"2 traces whose ranks repeat (rank 0 in 2 of them): {NOTE}" in result.stderr


def test_a_real_gloo_run_is_one_job_unasked(tmp_path: Path) -> None:
    folder = _folder(tmp_path, ("ddp_rank0_trace", "ddp_rank1_trace"))
    result = run(str(folder), "--format", "json")
    assert result.exit_code == 0, result.stderr
    job = json.loads(result.stdout)
    assert job["schema"] == "steptrace.ranks/2"
    assert [(r["rank"], r["rank_from"]) for r in job["ranks"]] == [
        (0, "distributedInfo"),
        (1, "distributedInfo"),
    ]
    assert NOTE not in result.stderr


def test_a_recorded_job_folder_is_one_job_unasked() -> None:
    folder = FIXTURES / "balanced-4"
    result = run(str(folder), "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert [r["rank"] for r in json.loads(result.stdout)["ranks"]] == [0, 1, 2, 3]
    assert len(rank_paths(folder)) == 4


def test_as_job_and_per_rank_together_are_one_usage_error() -> None:
    result = run(str(FIXTURES / "balanced-4"), "--as-job", "--per-rank")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("steptrace: error: --per-rank and --as-job exclude each other")


def test_one_trace_with_as_job_is_its_own_report() -> None:
    result = run(str(gpu_trace("cpu_infer_trace")), "--as-job", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["schema"] == "steptrace.report/4"
