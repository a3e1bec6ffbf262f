"""Many ranks at once: the same report on every executor, a broken rank kept apart.

The executors (this process, a local process pool, a real Dask ``LocalCluster``) must give
the same JSON byte for byte; a rank trace that cannot be read is one warning line naming
its file, and the others are analyzed (the expected ranks are known by construction: the
ones left intact). The per-rank summary crossing processes holds no event table.
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import numpy as np
import psutil
import pytest
from click.testing import CliRunner, Result

from steptrace.across.ranks.matrix import RankData
from steptrace.across.ranks.reading.executors import InProcess, Outcome, ProcessPool
from steptrace.across.ranks.reading.gather import gather, kept
from steptrace.across.ranks.reading.progress_bar import ranks_progress
from steptrace.across.ranks.reading.work import RankFailure, summarize
from steptrace.cli import app
from steptrace.errors import TraceError
from tests.across.ranks.reports import FIXTURES, rank_paths
from tests.conftest import gpu_trace

SET = FIXTURES / "slow-read-4"
runner = CliRunner()


def run(*args: str) -> Result:
    return runner.invoke(app, ["analyze", *args])


def test_dask_local_cluster_equals_the_pool_equals_one_process() -> None:
    pytest.importorskip("distributed")
    one = run(str(SET), "-f", "json", "--jobs", "1")
    pool = run(str(SET), "-f", "json", "--jobs", "2")
    dask = run(str(SET), "-f", "json", "--jobs", "2", "--scheduler", "local")
    for result in (one, pool, dask):
        assert result.exit_code == 0, result.stderr
    assert pool.stdout == one.stdout
    assert dask.stdout == one.stdout
    assert [r["rank"] for r in msgspec.json.decode(one.stdout)["ranks"]] == [0, 1, 2, 3]


def test_a_scheduler_without_workers_is_one_line_not_a_silent_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    distributed = pytest.importorskip("distributed")
    from steptrace.across.ranks.reading import executors

    monkeypatch.setattr(executors, "_WORKERS_S", 2)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as empty:
        done = run(str(SET), "-f", "json", "--scheduler", empty.scheduler_address)
    assert done.exit_code == 2
    assert done.stderr.splitlines()[-1] + "\n" == (
        f"steptrace: error: Dask scheduler {empty.scheduler_address}: no worker joined it "
        f"within 2 s (start workers with: dask worker {empty.scheduler_address})\n"
    )


def test_a_refused_scheduler_address_is_one_line_at_once() -> None:
    """Dask's client retries a refused connection until its timeout (10 s of silence): the
    port is tried once first."""
    pytest.importorskip("distributed")
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    began = time.monotonic()
    done = run(str(SET), "-f", "json", "--scheduler", f"tcp://127.0.0.1:{port}")
    assert time.monotonic() - began < 5  # the client's own timeout is 10 s
    assert done.exit_code == 2
    last = done.stderr.splitlines()[-1]
    assert last.startswith(f"steptrace: error: Dask scheduler tcp://127.0.0.1:{port}: cannot ")
    assert "refused" in last


def test_a_local_cluster_has_no_more_workers_than_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    distributed = pytest.importorskip("distributed")
    started: list[int] = []
    real = distributed.LocalCluster

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        started.append(kwargs["n_workers"])
        return real(*args, **kwargs)

    monkeypatch.setattr(distributed, "LocalCluster", counted)
    paths = [str(p) for p in rank_paths(SET)[:2]]
    done = run(*paths, "-f", "json", "--jobs", "8", "--scheduler", "local")
    assert done.exit_code == 0, done.stderr
    assert started == [2]


def test_the_scheduler_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if Dask were not installed
    result = runner.invoke(
        app, ["analyze", str(SET), "-f", "json"], env={"STEPTRACE_SCHEDULER": "local"}
    )
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert errors == [
        "steptrace: error: a Dask scheduler (local) needs Dask: pip install 'steptrace[dask]'"
    ]


def _broken_set(folder: Path, broken: int, source: Path = SET) -> list[int]:
    """The set with rank ``broken`` truncated mid-gzip; the intact ranks, by construction."""
    ranks = []
    for path in rank_paths(source):
        target = folder / path.name
        shutil.copy(path, target)
        number = int(path.name.split("-")[1].split(".")[0])
        if number == broken:
            target.write_bytes(path.read_bytes()[:3000])
        else:
            ranks.append(number)
    return ranks


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_broken_rank_is_reported_and_the_others_analyzed(tmp_path: Path, jobs: str) -> None:
    intact = _broken_set(tmp_path, broken=1)
    result = run(str(tmp_path), "-f", "json", "--jobs", jobs)
    assert result.exit_code == 1, result.stderr
    data = msgspec.json.decode(result.stdout)
    assert [r["rank"] for r in data["ranks"]] == intact
    named = [line for line in result.stderr.splitlines() if "not analyzed" in line]
    assert len(named) == 1
    assert "rank-1.json.gz: broken gzip" in named[0] and "(rank 1, by its file name)" in named[0]
    assert any("rank-1.json.gz: broken gzip" in w for w in data["warnings"])


def test_the_text_report_names_the_broken_rank_on_stderr_too(tmp_path: Path) -> None:
    _broken_set(tmp_path, broken=3)
    result = run(str(tmp_path), "--jobs", "1")
    assert result.exit_code == 1
    assert "rank-3.json.gz: broken gzip" in result.stderr
    assert "Rank x step matrix" in result.stdout


def test_too_few_ranks_left_is_one_error_line(tmp_path: Path) -> None:
    for name in ("rank-0.json.gz", "rank-1.json.gz"):
        shutil.copy(SET / name, tmp_path / name)
    (tmp_path / "rank-1.json.gz").write_bytes(b"\x1f\x8b broken")
    result = run(str(tmp_path), "--jobs", "1")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "rank-1.json.gz: broken gzip" in result.stderr and "at least 2" in result.stderr


class _Reversed:
    """An executor that finishes the items last to first."""

    def run(self, work, items):  # type: ignore[no-untyped-def]
        outcomes = list(InProcess().run(work, items))
        yield from reversed(outcomes)


def test_gathered_ranks_keep_the_given_order_whatever_finishes_first() -> None:
    locations = [str(p) for p in rank_paths(SET)]
    seen: list[str] = []
    forward = gather(locations, InProcess(), seen.append)
    backward = gather(locations, _Reversed(), lambda _: None)
    assert [r.path for r in backward.ranks] == locations
    assert msgspec.json.encode(backward.ranks) == msgspec.json.encode(forward.ranks)
    assert seen == [Path(p).name for p in locations]


class _Elsewhere:
    """An executor whose work runs in another folder, as a remote Dask worker's does."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def run(self, work, items):  # type: ignore[no-untyped-def]
        here = Path.cwd()
        os.chdir(self.folder)
        try:
            yield from InProcess().run(work, items)
        finally:
            os.chdir(here)


def test_relative_paths_reach_workers_in_another_folder_and_keep_their_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(SET.parent)
    given = [f"{SET.name}/{p.name}" for p in rank_paths(SET)] + [f"{SET.name}/rank-9.json.gz"]
    away = gather(given, _Elsewhere(tmp_path), lambda _: None)
    here = gather(given, InProcess(), lambda _: None)
    assert [r.path for r in away.ranks] == given[:-1]
    assert msgspec.json.encode(away) == msgspec.json.encode(here)
    (missing,) = away.failures
    assert missing.location == given[-1] and missing.error.startswith(f"{given[-1]}: no such file")


def _die_on_two(item: str) -> str:
    if item == "2":
        os._exit(3)  # a worker killed mid-task (out of memory, a signal)
    return item


def test_a_killed_worker_is_a_failure_of_its_items_never_an_exception() -> None:
    outcomes: list[Outcome] = list(ProcessPool(2).run(_die_on_two, ["0", "1", "2", "3"]))
    assert sorted(k for k, _ in outcomes) == [0, 1, 2, 3]
    failed = {k for k, r in outcomes if isinstance(r, BaseException)}
    assert 2 in failed
    assert all(r == str(k) for k, r in outcomes if k not in failed)


def test_a_machinery_failure_names_the_rank() -> None:
    class Broken:
        def run(self, work, items):  # type: ignore[no-untyped-def]
            yield 0, work(items[0])
            yield 1, RuntimeError("worker lost")

    locations = [str(p) for p in rank_paths(SET)[:2]]
    found = gather(locations, Broken(), lambda _: None)
    assert [f.location for f in found.failures] == [locations[1]]
    assert found.failures[0].error.startswith(f"{locations[1]}: the worker analyzing it failed")
    with pytest.raises(TraceError, match="1 of 2 rank traces could be analyzed"):
        kept(found)


def _arrays(value: object) -> list[str]:
    """Where an ndarray (an event column) hides in a summary."""
    if isinstance(value, np.ndarray):
        return ["ndarray"]
    if isinstance(value, msgspec.Struct):
        return [f for f in value.__struct_fields__ if _arrays(getattr(value, f))]
    if isinstance(value, (tuple, list)):
        return [str(k) for k, v in enumerate(value) if _arrays(v)]
    if isinstance(value, dict):
        return [str(k) for k, v in value.items() if _arrays(v)]
    return []


def test_the_summary_is_plain_data_and_small() -> None:
    path = rank_paths(SET)[0]
    summary = summarize(str(path))
    assert isinstance(summary, RankData)
    assert _arrays(summary) == []
    assert "analysis" not in summary.__struct_fields__  # no whole TraceAnalysis either
    size = len(gzip.decompress(path.read_bytes()))
    assert len(pickle.dumps(summary)) < size / 20
    assert pickle.loads(pickle.dumps(summary)) == summary


def test_a_failure_never_raises_and_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "rank-5.json"
    bad.write_text('{"traceEvents": [')
    found = summarize(str(bad))
    assert isinstance(found, RankFailure) and found.error.startswith(f"{bad}: ")
    missing = summarize(str(tmp_path / "none.json"))
    assert isinstance(missing, RankFailure) and "no such file" in missing.error


def test_progress_is_drawn_on_a_terminal() -> None:
    from rich.console import Console

    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    with ranks_progress(2, True, console=console) as done:
        done("rank-0.json.gz")
        done("rank-1.json.gz")
    assert "rank-1.json.gz" in screen.getvalue() and "2/2" in screen.getvalue()


def test_no_progress_bar_when_piped() -> None:
    code = "from steptrace.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "analyze", str(SET), "-f", "json", "--jobs", "2"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert done.returncode == 0, done.stderr
    assert "analyz" not in done.stderr and "\x1b" not in done.stderr and "\r" not in done.stderr
    assert done.stderr.splitlines() == [
        line for line in done.stderr.splitlines() if line.startswith("steptrace: warning:")
    ]


def _rank_rows(data: dict) -> list[tuple[int, list[float]]]:  # type: ignore[type-arg]
    return [(r["rank"], [s["wall_ms"] for s in r["steps"]]) for r in data["ranks"]]


def test_tensorboard_handler_names_and_plain_json_are_one_job(tmp_path: Path) -> None:
    """``tensorboard_trace_handler`` writes ``{worker}.{ms}.pt.trace.json[.gz]``: a host_pid
    worker (the rank from distributedInfo) or a rank in the worker's name."""
    for k, path in enumerate(rank_paths(SET)):
        if k % 2:
            name = f"rank{k}.17000000000{k}.pt.trace.json"
            (tmp_path / name).write_bytes(gzip.decompress(path.read_bytes()))
        else:
            shutil.copy(path, tmp_path / f"node-{k}_{4242 + k}.17000000000{k}.pt.trace.json.gz")
    renamed = run(str(tmp_path), "-f", "json", "--jobs", "2")
    original = run(str(SET), "-f", "json", "--jobs", "1")
    assert renamed.exit_code == 0, renamed.stderr
    assert _rank_rows(msgspec.json.decode(renamed.stdout)) == _rank_rows(
        msgspec.json.decode(original.stdout)
    )


def test_fsspec_urls_give_the_local_figures(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    import steptrace

    memory = fsspec.filesystem("memory")
    for path in rank_paths(SET):
        memory.pipe(f"/steptrace-test/{path.name}", path.read_bytes())
    memory.pipe("/steptrace-test/rank-0.scenario.json", b"{}")  # a sidecar: left out
    try:
        urls = [f"memory://steptrace-test/{p.name}" for p in rank_paths(SET)]
        in_memory = steptrace.analyze_ranks(urls, progress=False)  # memory: this process only
    finally:
        memory.rm("/steptrace-test", recursive=True)
    local = steptrace.analyze_ranks(rank_paths(SET), progress=False)
    assert [r.path for r in in_memory.ranks] == urls
    assert [r.steps for r in in_memory.ranks] == [r.steps for r in local.ranks]
    folder = run(f"file://{SET.resolve()}", "-f", "json", "--jobs", "2")
    assert folder.exit_code == 0, folder.stderr
    data = msgspec.json.decode(folder.stdout)
    assert [r["path"] for r in data["ranks"]] == [f"file://{p.resolve()}" for p in rank_paths(SET)]
    assert _rank_rows(data) == [(r.rank, [s.wall_ms for s in r.steps]) for r in local.ranks]


def test_a_missing_url_folder_is_one_error_line() -> None:
    missing = run("file:///no/such/folder", str(SET))
    errors = [line for line in missing.stderr.splitlines() if "error" in line]
    assert missing.exit_code == 2
    assert errors == ["steptrace: error: file:///no/such/folder: no such file or folder"]


def test_per_rank_keeps_the_reports_of_the_traces_that_can_be_read(tmp_path: Path) -> None:
    for path in rank_paths(SET)[:2]:
        shutil.copy(path, tmp_path / path.name)
    (tmp_path / "rank-9.json.gz").write_bytes((SET / "rank-0.json.gz").read_bytes()[:3000])
    done = run(str(tmp_path), "--per-rank", "-f", "json", "--jobs", "1")
    assert done.exit_code == 1
    kept = [r["analysis"]["trace"]["path"] for r in msgspec.json.decode(done.stdout)]
    assert kept == [str(tmp_path / p.name) for p in rank_paths(SET)[:2]]
    failed = [line for line in done.stderr.splitlines() if "rank-9" in line]
    assert len(failed) == 1 and "broken gzip" in failed[0]
    assert failed[0].endswith("the other traces' reports are written")
    every = run(str(tmp_path / "rank-9.json.gz"), str(tmp_path / "rank-9.json.gz"), "--per-rank")
    assert every.exit_code == 2 and "and 1 more traces failed" in every.stderr


def test_a_file_name_with_a_newline_stays_one_line_in_errors_and_warnings(tmp_path: Path) -> None:
    for path in rank_paths(SET)[:2]:
        shutil.copy(path, tmp_path / path.name)
    odd = tmp_path / "rank-9\nsteptrace: error: \x1b[2Jfake.json.gz"
    odd.write_bytes(b"\x1f\x8b broken")
    job = run(str(tmp_path), "-f", "json", "--jobs", "1")
    (warning,) = [line for line in job.stderr.splitlines() if "rank-9" in line]
    assert warning.startswith("steptrace: warning: ") and "\x1b" not in job.stderr
    assert "rank-9\\x0asteptrace: error: \\x1b[2Jfake.json.gz: broken gzip" in warning
    assert warning.count("fake.json.gz") == 1  # named once, as spelled
    alone = run(str(odd))
    assert alone.exit_code == 2 and alone.stderr.count("\n") == 1
    assert alone.stderr.startswith("steptrace: error: ") and "\\x0a" in alone.stderr


def test_a_scheduler_given_where_it_does_not_apply_is_said_once() -> None:
    single = run(str(rank_paths(SET)[0]), "-f", "json", "--scheduler", "tcp://nowhere:1")
    assert single.exit_code == 0, single.stderr
    assert "--scheduler applies to the ranks of one job" in single.stderr
    quiet = runner.invoke(
        app,
        ["analyze", str(rank_paths(SET)[0]), "-f", "json"],
        env={"STEPTRACE_SCHEDULER": "tcp://nowhere:1"},
    )
    assert quiet.exit_code == 0 and "--scheduler" not in quiet.stderr  # set for other jobs


def _slow_ranks(folder: Path, ranks: int = 8) -> Path:
    """``ranks`` copies of the largest shared trace (54 MB of JSON each, about half a second
    to analyze), each with its own rank: a job that runs for seconds on two workers."""
    text = gzip.decompress(gpu_trace("v100_ddp2_rank1_train_profmem").read_bytes())
    head, rest = text[:4096], text[4096:]
    assert head.count(b'"rank": 1') == 1 and head.count(b'"world_size": 2') == 1
    for rank in range(ranks):
        named = head.replace(b'"rank": 1', b'"rank": %d' % rank)
        named = named.replace(b'"world_size": 2', b'"world_size": %d' % ranks)
        (folder / f"rank{rank}.json.gz").write_bytes(gzip.compress(named + rest, compresslevel=1))
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("runner", [["--jobs", "2"], ["--jobs", "2", "--scheduler", "local"]])
def test_ctrl_c_while_the_ranks_run_is_one_line_and_ends_every_worker(
    tmp_path: Path, runner: list[str]
) -> None:
    """A terminal's Ctrl-C (SIGINT to the whole process group) once the workers (processes
    of a pool, or of a Dask ``LocalCluster``) are at work: exit 130, one line, no traceback
    from any worker, and no process of the group left behind."""
    folder = _slow_ranks(tmp_path)
    command = [str(Path(sys.executable).parent / "steptrace"), "analyze", str(folder), "-f", "json"]
    running = subprocess.Popen(
        [*command, *runner],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a group of its own, as a terminal's foreground job
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        tree = psutil.Process(running.pid)
        deadline = time.monotonic() + 60
        while len(tree.children(recursive=True)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)  # two workers and the pool's helper (or the cluster's tracker)
        time.sleep(0.5)  # the workers are analyzing ranks
        assert running.poll() is None, "the job ended before Ctrl-C: make it longer"
        os.killpg(running.pid, signal.SIGINT)
        _, err = running.communicate(timeout=60)
    finally:
        if running.poll() is None:
            os.killpg(running.pid, signal.SIGKILL)
    assert running.returncode == 130
    assert err.decode().strip() == "steptrace: error: aborted"
    deadline = time.monotonic() + 10
    while _group(running.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _group(running.pid)


def _group(group: int) -> list[int]:
    """The live processes of a process group (zombies left out)."""
    return [
        p.pid
        for p in psutil.process_iter(["status"])
        if _group_of(p.pid) == group and p.info["status"] != psutil.STATUS_ZOMBIE
    ]


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None
