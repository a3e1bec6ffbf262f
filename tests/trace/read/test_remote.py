"""One trace at an fsspec URL: the same report as the local file, its scenario sidecar read
beside it, and one-line errors (``trace.remote``; folders of rank URLs: tests/across/ranks)."""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner, Result

import steptrace
from steptrace.cli import app
from steptrace.errors import TraceError
from steptrace.scenario import Scenario, record_payload
from steptrace.trace.load import load_trace
from steptrace.trace.read.remote import is_url
from steptrace.trace.read.stream import Opener
from tests.across.ranks.reports import FIXTURES, rank_paths
from tests.conftest import NO_TRACES, TRACES
from tests.tables import assert_same_table

fsspec = pytest.importorskip("fsspec")

TRAIN = TRACES / "cpu" / "cpu_train_trace.json.gz"
INFER = TRACES / "cpu" / "cpu_infer_trace.json.gz"
GPU = TRACES / "gpu" / "v100_ddp2_rank1_train_profmem__df_index_resolver.json.gz"  # 3 MB of gzip
if not all(p.exists() for p in (TRAIN, INFER, GPU)):
    pytest.skip(NO_TRACES, allow_module_level=True)


def run(*args: str) -> Result:
    return CliRunner().invoke(app, ["analyze", *args])


@pytest.fixture
def memory() -> Iterator[Any]:
    """fsspec's in-memory file system (this process only), emptied afterwards."""
    fs = fsspec.filesystem("memory")
    yield fs
    if fs.exists("/steptrace-remote"):
        fs.rm("/steptrace-remote", recursive=True)


def without_path(report: dict) -> dict:  # type: ignore[type-arg]
    report["analysis"]["trace"].pop("path")
    return report


def test_urls_and_paths_are_told_apart() -> None:
    assert is_url("s3://bucket/t.json") and is_url("file:///tmp/t.json")
    assert not is_url("C:/traces/t.json") and not is_url("traces/s3:/t.json")


def test_a_file_url_gives_the_local_report_named_by_its_url() -> None:
    url = f"file://{TRAIN}"
    remote, local = run(url, "-f", "json"), run(str(TRAIN), "-f", "json")
    assert remote.exit_code == 0 and local.exit_code == 0, remote.stderr
    remote_report, local_report = json.loads(remote.stdout), json.loads(local.stdout)
    assert remote_report["analysis"]["trace"]["path"] == url
    assert without_path(remote_report) == without_path(local_report)


def test_plain_and_gzip_urls_in_memory_with_their_sidecar(memory: Any) -> None:
    scenario = Scenario(question="Why is the step slower at batch 64?", batch_size=64)
    memory.pipe("/steptrace-remote/run/plain.json", gzip.decompress(TRAIN.read_bytes()))
    memory.pipe("/steptrace-remote/run/packed.json.gz", TRAIN.read_bytes())
    memory.pipe(
        "/steptrace-remote/run/packed.scenario.json",
        json.dumps(record_payload(scenario, None)).encode(),
    )
    plain = steptrace.analyze("memory://steptrace-remote/run/plain.json")
    packed = steptrace.analyze("memory://steptrace-remote/run/packed.json.gz")
    local = steptrace.analyze(TRAIN)
    assert plain.scenario is None and packed.scenario is not None
    assert (packed.scenario.question, packed.scenario.batch_size) == (scenario.question, 64)
    assert packed.throughput is not None  # the sidecar's batch size gave samples/s
    assert plain.analysis.trace.path == "memory://steptrace-remote/run/plain.json"
    for report in (plain, packed):
        assert msgspec.structs.replace(report.analysis.trace, path="") == msgspec.structs.replace(
            local.analysis.trace, path=""
        )
        assert report.analysis.steps == local.analysis.steps
    assert plain.findings == local.findings


def test_an_unreadable_sidecar_beside_a_url_is_a_warning(memory: Any) -> None:
    memory.pipe("/steptrace-remote/t.json.gz", TRAIN.read_bytes())
    memory.pipe("/steptrace-remote/t.scenario.json", b"{not json")
    report = steptrace.analyze("memory://steptrace-remote/t.json.gz")
    assert report.scenario is None
    assert any(
        w.startswith("scenario sidecar t.scenario.json is unreadable") for w in report.warnings
    )


def test_per_rank_urls_give_one_report_each() -> None:
    urls = [f"file://{TRAIN}", f"file://{INFER}"]
    done = run(*urls, "--per-rank", "-f", "json")
    assert done.exit_code == 0, done.stderr
    reports = json.loads(done.stdout)
    assert sorted(r["analysis"]["trace"]["path"] for r in reports) == sorted(urls)
    alone = json.loads(run(str(INFER), "-f", "json").stdout)
    (infer,) = [r for r in reports if r["analysis"]["trace"]["path"] == urls[1]]
    assert without_path(infer) == without_path(alone)


def test_bad_urls_are_one_error_line(memory: Any) -> None:
    memory.pipe("/steptrace-remote/broken.json.gz", TRAIN.read_bytes()[:5000])
    memory.pipe("/steptrace-remote/other.json", b'{"no": "events"}')
    cases = {
        "file:///no/such/trace.json.gz": "file:///no/such/trace.json.gz: no such file",
        "memory://steptrace-remote/broken.json.gz": "memory://steptrace-remote/broken.json.gz: ",
        "memory://steptrace-remote/other.json": "memory://steptrace-remote/other.json: ",
    }
    for url, start in cases.items():
        done = run(url)
        errors = done.stderr.splitlines()
        assert done.exit_code == 2, (url, done.stdout)
        assert len(errors) == 1 and errors[0].startswith(f"steptrace: error: {start}"), errors


class _Recorded(io.BytesIO):
    """A storage file that notes the size of each read, and may fail after some bytes."""

    def __init__(self, data: bytes, reads: list[int], fail_after: int | None = None) -> None:
        super().__init__(data)
        self.reads, self.fail_after = reads, fail_after

    def read(self, size: int | None = -1) -> bytes:
        if self.fail_after is not None and self.tell() >= self.fail_after:
            raise RuntimeError("connection reset by the object store")
        chunk = super().read(size)
        self.reads.append(len(chunk))
        return chunk


def test_a_url_is_streamed_in_chunks_not_read_whole() -> None:
    raw = GPU.read_bytes()
    reads: list[int] = []
    opener = Opener("s3://bucket/gpu.json.gz", len(raw), lambda: _Recorded(raw, reads))
    streamed = load_trace(opener, workers=1)
    assert len(reads) > 2 and max(reads) <= 1 << 20 < len(raw)
    local = load_trace(GPU)
    assert streamed.info.url == "s3://bucket/gpu.json.gz" and local.info.url is None
    assert_same_table(streamed.events, local.events)


def test_a_text_that_cannot_be_cut_is_read_whole_from_its_url() -> None:
    text = gzip.decompress(TRAIN.read_bytes()).rstrip()
    assert text.endswith(b"}")
    text = text[:-1] + b', "note\\u0041": 1}'  # a unicode escape after the events: not cut
    reads: list[int] = []
    opener = Opener("gs://b/t.json", len(text), lambda: _Recorded(text, reads))
    assert_same_table(load_trace(opener).events, load_trace(TRAIN).events)
    assert max(reads) == len(text)  # the exact path read it whole, once streaming gave up


def test_a_storage_error_while_streaming_is_one_line_not_a_hang() -> None:
    raw = GPU.read_bytes()
    opener = Opener("s3://bucket/gpu.json.gz", len(raw), lambda: _Recorded(raw, [], 2 << 20))
    with pytest.raises(TraceError) as caught:
        load_trace(opener)
    assert str(caught.value) == (
        "s3://bucket/gpu.json.gz: cannot read (RuntimeError: connection reset by the object store)"
    )


def test_a_url_to_a_pipe_or_a_device_is_one_line_before_any_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    for name in ("pipe.json", "zero.json"):
        url = f"file://{tmp_path / name}"
        done = subprocess.run(  # a hang would be the bug: bounded here
            [sys.executable, "-c", "from steptrace.cli import main; main()", "analyze", url],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr == f"steptrace: error: {url}: not a regular file (a pipe or a device?)\n"


def test_odd_entries_of_a_url_folder_are_skipped_not_fatal(tmp_path: Path) -> None:
    job = tmp_path / "job.json"  # a folder, named like a trace
    job.mkdir()
    ranks = rank_paths(FIXTURES / "slow-read-4")[:2]
    for path in ranks:
        shutil.copy(path, job / path.name)
    os.mkfifo(job / "pipe.json")
    (job / "sub.json").mkdir()
    (job / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    (job / "loop1.json").symlink_to(job / "loop2.json")
    (job / "loop2.json").symlink_to(job / "loop1.json")
    done = run(f"file://{job}", "-f", "json", "--jobs", "1")
    assert done.exit_code == 0, done.stderr
    assert [r["path"] for r in json.loads(done.stdout)["ranks"]] == [
        f"file://{job / p.name}" for p in ranks
    ]
    skipped = sorted(
        line.split(": skipped, ")[0] for line in done.stderr.splitlines() if ": skipped, " in line
    )
    assert skipped == sorted(
        f"steptrace: warning: file://{job / n}"
        for n in ("pipe.json", "sub.json", "dangling.json", "loop1.json", "loop2.json")
    )
