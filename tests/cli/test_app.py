"""The command line: formats, the JSON schema's required names, folders of rank traces."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from steptrace.cli import app
from steptrace.cli.app import without_huge_pages
from tests import reference
from tests.conftest import gpu_trace, read_json

runner = CliRunner()


def nccl() -> Path:
    return gpu_trace("a100_2rank_rank0")


def cpu_only() -> Path:
    return gpu_trace("cpu_only_gloo")


def analyze(*args: str) -> str:
    result = runner.invoke(app, ["analyze", *args])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_json_has_the_documented_names() -> None:
    out = json.loads(analyze(str(nccl()), "--format", "json", "--top", "3"))
    assert out["schema"] == "steptrace.report/4"
    # the verdict first; no lanes: the HTML report draws them, from the trace
    assert list(out)[:2] == ["schema", "verdict"]
    assert set(out["verdict"]) == {
        "bound",
        "on",
        "gpu_bound",
        "sentence",
        "figures",
        "top",
        "answered_by",
    }
    assert set(out) == {
        "schema",
        "verdict",
        "scenario",
        "capture",
        "analysis",
        "throughput",
        "findings",
        "thresholds",
        "warnings",
        "checks",
    }
    analysis = out["analysis"]
    assert analysis["trace"]["gpu_observed"] is True
    assert analysis["trace"]["rank"] == 0 and analysis["trace"]["world_size"] == 2
    evs = reference.events(reference.read_exact(nccl()))
    windows = reference.step_windows(evs)
    assert [s["name"] for s in analysis["steps"]] == [w[0] for w in windows]
    for step, (_, lo, hi) in zip(analysis["steps"], windows, strict=True):
        assert step["wall_ms"] == pytest.approx((hi - lo) / 1e6, abs=1e-12)
        assert set(step["gpu"]) >= {"busy_ms", "idle_ms", "kernels"}
    assert len(analysis["kernels"]) == 3
    assert set(analysis["kernels"][0]) >= {"name", "calls", "total_ms", "min_us", "max_us"}
    assert analysis["kernels_total"] == len(reference.kernel_table(evs))
    for finding in out["findings"]:
        assert set(finding["evidence"]) == {"figures", "where"}
        assert set(finding["evidence"]["where"]) == {"steps", "time_us", "thread", "streams"}


def test_json_says_not_observed_with_null() -> None:
    out = json.loads(analyze(str(cpu_only()), "--format", "json"))["analysis"]
    assert out["trace"]["gpu_observed"] is False
    assert all(step["gpu"] is None for step in out["steps"])
    assert out["summary"]["gpu_busy_ms"] is None


def test_text_report_says_gpu_was_not_observed() -> None:
    out = analyze(str(cpu_only()))
    assert "GPU not observed" in out
    assert "not observed" in out.split("Steps")[1]


def test_text_report_shows_steps_labels_and_kernels() -> None:
    out = analyze(str(nccl()), "--top", "4")
    kernels = "Kernels (top 4 of"
    for expected in ("ProfilerStep#4", "nccl:all_reduce", kernels):
        assert expected in out


def test_markdown_report_has_tables() -> None:
    out = analyze(str(nccl()), "--format", "md", "--top", "2")
    assert out.startswith(f"# {nccl()}".replace("_", "\\_"))
    assert "| step | wall ms |" in out
    assert "## Kernels (top 2 of" in out


def test_operator_tables_are_per_step_unless_totals_are_asked_for() -> None:
    data = json.loads(analyze(str(nccl()), "--format", "json"))["analysis"]
    steps = data["summary"]["count"]
    op = data["operators"][0]
    kernel = data["kernels"][0]
    per_step = analyze(str(nccl()), "--format", "md", "--top", "1")
    totals = analyze(str(nccl()), "--format", "md", "--top", "1", "--totals")
    assert "| operator | calls per step | self ms per step |" in per_step
    assert f"mean over the {steps} steps" in per_step
    assert "| operator | calls (whole trace) | self ms (whole trace) |" in totals
    assert "| kernel | calls (whole trace) | ms (whole trace) |" in totals
    assert f"| {op['calls']:,} |" in totals
    assert op["calls_per_step"] != op["calls"]  # three steps: the two tables differ
    calls = f"{kernel['calls_per_step']:,.2f}".rstrip("0").rstrip(".")
    assert f"| {calls} |" in per_step


def test_folder_of_rank_traces_per_rank_gives_one_result_per_rank(tmp_path: Path) -> None:
    for rank in (1, 0):
        source = gpu_trace(f"sampled_128rank_rank{rank}")
        shutil.copy(source, tmp_path / f"rank-{rank}.json.gz")
    (tmp_path / "README.txt").write_text("ignored: not a trace name")
    out = json.loads(analyze(str(tmp_path), "--per-rank", "--format", "json", "--top", "1"))
    assert [r["analysis"]["trace"]["rank"] for r in out] == [0, 1]
    assert [r["analysis"]["trace"]["world_size"] for r in out] == [128, 128]


def test_help_lists_the_command() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "analyze" in result.stdout
    commands = result.stdout.split("Commands:")[1]
    assert "..." not in commands  # every one-line summary is whole


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", "trace.json", "--format", "xml"],
        ["analyze", "trace.json", "--top", "0"],
        ["analyze"],
        ["diff", "before.json"],
        ["compare", "a:b", "c:d", "--state", "s:t", "--batches", "b:c", "--unit", "fps"],
        ["no-such-command"],
    ],
    ids=["format", "top", "no-trace", "diff-one-side", "unit", "command"],
)
def test_usage_errors_are_one_line(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("steptrace: error: ")
    assert f"(see steptrace{' ' + args[0] if args[0] != 'no-such-command' else ''} --help)" in (
        result.stderr
    )


def test_every_flag_can_be_turned_off_explicitly() -> None:
    on = runner.invoke(app, ["analyze", str(cpu_only()), "--findings-only"])
    off = runner.invoke(app, ["analyze", str(cpu_only()), "--no-findings-only"])
    assert on.exit_code == off.exit_code == 0
    assert "Findings" in on.stdout and "CPU operators (top" not in on.stdout
    assert "Findings" in off.stdout and "CPU operators (top" in off.stdout


def test_diff_command_formats_and_errors(tmp_path: Path) -> None:
    before = str(gpu_trace("cpu_train_trace.json"))
    after = str(gpu_trace("cpu_train_trace_nw2"))
    text = runner.invoke(app, ["diff", before, after, "--top", "3"])
    assert text.exit_code == 0
    assert "step time:" in text.stdout and "steptrace compare` decides" in text.stdout
    data = json.loads(runner.invoke(app, ["diff", before, after, "--format", "json"]).stdout)
    assert data["schema"] == "steptrace.diff/1"
    assert data["step_ms"]["ratio"] == pytest.approx(
        data["step_ms"]["after"]["median"] / data["step_ms"]["before"]["median"]
    )
    md = runner.invoke(app, ["diff", before, after, "--format", "md"]).stdout
    assert md.startswith("# steptrace diff")
    html = runner.invoke(app, ["diff", before, after, "--format", "html"]).stdout
    assert html.startswith("<!doctype html>") and "steptrace compare` decides" in html
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    failed = runner.invoke(app, ["diff", before, str(bad)])
    assert failed.exit_code == 2 and str(bad) in failed.stderr and failed.stderr.count("\n") == 1


def test_html_format_puts_every_trace_on_one_page(tmp_path: Path) -> None:
    one = runner.invoke(app, ["analyze", str(cpu_only()), "--format", "html"])
    assert one.exit_code == 0 and one.stdout.startswith("<!doctype html>")
    two = runner.invoke(
        app, ["analyze", str(cpu_only()), str(nccl()), "--per-rank", "--format", "html"]
    )
    assert two.exit_code == 0 and two.stdout.count("<h1>") == 2
    assert two.stdout.count("<!doctype html>") == 1


def test_scrub_command(tmp_path: Path) -> None:
    source = gpu_trace("gp100_gpu_user_annotation")
    out = tmp_path / "shared.json.gz"
    done = runner.invoke(app, ["scrub", str(source), "-o", str(out)])
    assert done.exit_code == 0, done.stderr
    assert f"wrote {out}" in done.stdout and "user ×" in done.stdout
    assert "anupamb" not in read_json(out)["traceName"]
    again = runner.invoke(app, ["scrub", str(source), "-o", str(out)])
    assert again.exit_code == 2 and "exists already" in again.stderr


def test_version_prints_the_package_version() -> None:
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"steptrace {version('steptrace')}\n"


def test_an_unknown_threshold_lists_the_valid_names() -> None:
    from steptrace.hypotheses.thresholds import Thresholds

    result = runner.invoke(app, ["analyze", str(nccl()), "--threshold", "nonsense=1"])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert "unknown threshold 'nonsense'" in line
    assert all(name in line for name in Thresholds().to_dict())
    assert "Object contains" not in line and "field" not in line


_REPORTS_HUGE_PAGES = """
import os, sys
import steptrace.cli as cli
real_exit = os._exit
def reporting_exit(code):
    import numpy._core.multiarray as multiarray  # numpy's own switch, read back
    sys.stderr.write(f"huge pages: {multiarray._get_madvise_hugepage()}\\n")
    sys.stderr.flush()
    real_exit(code)
os._exit = reporting_exit
sys.argv = ["steptrace", "analyze", sys.argv[1], "--format", "json"]
cli.main()
"""


def _reporting(
    script: str, args: list[str], variable: str, caller: str | None
) -> subprocess.CompletedProcess[str]:
    """``script`` (a command line that reports at its exit) run with ``args``, in this
    environment with ``variable`` as the caller set it (None: unset); it must succeed."""
    environ = {k: v for k, v in os.environ.items() if k != variable}
    if caller is not None:
        environ[variable] = caller
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize(("caller", "expected"), [(None, "False"), ("1", "True")])
def test_the_command_keeps_numpy_off_huge_pages_unless_told(
    caller: str | None, expected: str
) -> None:
    """numpy in ``steptrace``'s process asks for no huge pages (their compaction stalls
    large arrays' first touches); a caller's own NUMPY_MADVISE_HUGEPAGE wins."""
    trace = str(gpu_trace("amd_mi250"))
    done = _reporting(_REPORTS_HUGE_PAGES, [trace], "NUMPY_MADVISE_HUGEPAGE", caller)
    assert json.loads(done.stdout)["analysis"]["steps"]
    assert f"huge pages: {expected}" in done.stderr


def test_huge_pages_are_left_to_the_caller_when_set() -> None:
    environ: dict[str, str] = {}
    without_huge_pages(environ)
    assert environ == {"NUMPY_MADVISE_HUGEPAGE": "0"}
    environ = {"NUMPY_MADVISE_HUGEPAGE": "1"}
    without_huge_pages(environ)
    assert environ == {"NUMPY_MADVISE_HUGEPAGE": "1"}


_REPORTS_THREADS = """
import os, sys
import steptrace.cli as cli
real_exit = os._exit
def reporting_exit(code):  # the process's threads, native ones (OpenBLAS's) included
    sys.stderr.write(f"threads: {len(os.listdir('/proc/self/task'))}\\n")
    sys.stderr.write(f"left set: {os.environ.get('OPENBLAS_NUM_THREADS')}\\n")
    sys.stderr.flush()
    real_exit(code)
os._exit = reporting_exit
sys.argv = ["steptrace", sys.argv[1], *sys.argv[2:], "--format", "json"]
cli.main()
"""


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="counts threads in /proc")
@pytest.mark.parametrize("command", ["analyze", "diff"])
@pytest.mark.parametrize("caller", [None, "2"])
def test_the_trace_commands_start_no_blas_thread_unless_told(
    command: str, caller: str | None
) -> None:
    """numpy's OpenBLAS starts no thread of its own in ``analyze`` and ``diff`` (loaded, it
    starts one per core, which spins a tenth of a second), the setting let go after the
    command; a caller's own OPENBLAS_NUM_THREADS wins (then its threads are there, where
    the cores allow)."""
    trace = str(gpu_trace("amd_mi250"))
    args = [command, trace, *([trace] * (command == "diff"))]
    done = _reporting(_REPORTS_THREADS, args, "OPENBLAS_NUM_THREADS", caller)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    expected = 1 if caller is None else min(int(caller), cores or 1)
    assert f"threads: {expected}\n" in done.stderr
    assert f"left set: {caller}\n" in done.stderr
