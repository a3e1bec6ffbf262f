"""``steptrace analyze`` on rank traces: one job's report, --per-rank, and bad folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from steptrace.cli import app
from tests.across.ranks.reports import FIXTURES, rank_paths

runner = CliRunner()
SET = FIXTURES / "slow-read-4"


def run(*args: str) -> Result:
    return runner.invoke(app, ["analyze", *args])


def test_a_fixture_folder_gives_one_ranks_report() -> None:
    result = run(str(SET), "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["schema"] == "steptrace.ranks/2"
    assert [r["rank"] for r in data["ranks"]] == [0, 1, 2, 3]
    assert (data["stragglers"][0]["rank"], data["stragglers"][0]["phase"]) == (2, "read_batch")
    assert "truth.json: skipped, not a trace" in result.stderr  # the sidecars: silently


@pytest.mark.parametrize("name", ["text", "md", "html"])
def test_every_format_is_one_report(name: str) -> None:
    result = run(str(SET), "--format", name)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("Rank x step matrix") == 1
    assert result.stdout.count("The job: ranks") == 1


def test_per_rank_keeps_one_report_per_trace() -> None:
    result = run(str(SET), "--per-rank", "--format", "json", "--top", "1")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert [r["schema"] for r in data] == ["steptrace.report/4"] * 4
    assert [r["analysis"]["trace"]["rank"] for r in data] == [0, 1, 2, 3]


def test_a_single_trace_is_analyzed_as_before() -> None:
    result = run(str(rank_paths(SET)[0]), "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["schema"] == "steptrace.report/4"


def _copy(folder: Path, ranks: list[int], source: Path = FIXTURES / "slow-read-8") -> None:
    for rank in ranks:
        shutil.copy(source / f"rank-{rank}.json.gz", folder / f"rank-{rank}.json.gz")


def test_missing_ranks_are_one_warning_line(tmp_path: Path) -> None:
    _copy(tmp_path, [0, 1, 2, 4])
    result = run(str(tmp_path), "--format", "json")
    assert result.exit_code == 0, result.stderr
    missing = [line for line in result.stderr.splitlines() if "missing" in line]
    assert missing == [
        "steptrace: warning: world size 8, 4 rank traces given: ranks 3, 5, 6, 7 are missing; "
        "collectives of groups that include them cannot be matched"
    ]
    text = run(str(tmp_path))
    assert text.exit_code == 0 and "missing ranks: 3, 5–7" in text.stdout


def test_duplicate_ranks_are_one_report_each_or_one_error_line_as_a_job(tmp_path: Path) -> None:
    _copy(tmp_path, [0, 1])
    shutil.copy(FIXTURES / "slow-read-8" / "rank-1.json.gz", tmp_path / "again-rank1.json.gz")
    each = run(str(tmp_path), "--format", "json", "--top", "1")
    assert each.exit_code == 0, each.stderr
    assert [r["analysis"]["trace"]["rank"] for r in json.loads(each.stdout)] == [0, 1, 1]
    assert "3 traces whose ranks repeat (rank 1 in 2 of them): one report per trace" in each.stderr
    result = run(str(tmp_path), "--as-job")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("steptrace: error: rank 1")
    assert "Traceback" not in result.output


def test_mixed_jobs_are_one_report_each_or_one_error_line_as_a_job() -> None:
    files = [str(rank_paths(SET)[0]), str(FIXTURES / "slow-read-8" / "rank-1.json.gz")]
    each = run(*files, "--format", "json", "--top", "1")
    assert each.exit_code == 0, each.stderr
    assert len(json.loads(each.stdout)) == 2
    assert "2 traces whose world sizes [4, 8] differ: one report per trace" in each.stderr
    result = run(*files, "--as-job")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "not one job" in result.stderr and "--per-rank" in result.stderr


def test_non_trace_json_in_a_folder_is_skipped(tmp_path: Path) -> None:
    _copy(tmp_path, [0, 1, 2, 3], SET)
    (tmp_path / "notes.json").write_text('{"hello": "not a trace"}')
    saved = run(str(SET / "rank-0.json.gz"), "--format", "json").stdout
    (tmp_path / "report.json").write_text(saved)  # a saved report, large or small
    shutil.copy(SET / "rank-0.scenario.json", tmp_path / "rank-0.scenario.json")
    result = run(str(tmp_path), "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(result.stdout)["ranks"]) == 4
    skipped = sorted(line for line in result.stderr.splitlines() if "skipped" in line)
    assert [Path(line.split(": ")[2]).name for line in skipped] == ["notes.json", "report.json"]


def test_a_folder_of_only_non_traces_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "truth.json").write_text("{}")
    result = run(str(tmp_path))
    assert result.exit_code == 2 and "holds no trace" in result.stderr


def test_rank_thresholds_are_checked() -> None:
    files = [str(p) for p in rank_paths(SET)]
    bad = run(*files, "--threshold", "no_such=1")
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1
    high = run(*files, "--format", "json", "--threshold", "straggler_floor_ms=1000")
    assert high.exit_code == 0 and json.loads(high.stdout)["stragglers"] == []


def test_one_trace_imports_no_ranks_code() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from click.testing import CliRunner; from steptrace.cli import app;"
        f"r = CliRunner().invoke(app, ['analyze', {str(rank_paths(SET)[0])!r}, '-f', 'json']);"
        "assert r.exit_code == 0, r.stderr;"
        "names = ('steptrace.report.ranks.sections', 'steptrace.report.ranks.matrix',"
        " 'steptrace.report.ranks.collectives', 'steptrace.across.ranks.analyze');"
        "loaded = [m for m in names if m in sys.modules]; assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
