"""What traces say of their job from their first bytes, and when that makes them one job."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from steptrace.across.ranks.reading import said
from steptrace.across.ranks.reading.said import UNREAD, Heard, Said, not_one_job, said_by, said_of
from steptrace.cli import app
from tests.across.ranks.reports import FIXTURES
from tests.conftest import real_traces, shared_file, trace_params


def _whole_file_says(path: Path) -> Said | None:
    """The reference: the whole file parsed, its top-level ``distributedInfo``."""
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as handle:
        block = json.load(handle).get("distributedInfo")
    if not block:
        return None
    return Said(block.get("rank"), block.get("world_size"), block.get("backend"))


@pytest.mark.parametrize("path", trace_params())
def test_the_head_says_what_the_whole_file_says(path: Path) -> None:
    assert said_of(str(path)) == _whole_file_says(path)


def test_said_by_keeps_the_order_given() -> None:
    paths = real_traces()
    if not paths:
        pytest.skip("no real traces")
    assert said_by([str(p) for p in paths]) == [said_of(str(p)) for p in paths]


def _write(path: Path, document: dict[str, Any], zipped: bool = True) -> str:
    text = json.dumps(document).encode()
    path.write_bytes(gzip.compress(text) if zipped else text)
    return str(path)


def test_a_block_longer_than_the_first_read_is_read_whole(tmp_path: Path) -> None:
    groups = [{"pg_name": str(g), "ranks": list(range(4096))} for g in range(8)]  # ~170 KB
    info = {"pg_config": groups, "backend": "nccl", "rank": 7, "world_size": 4096}
    where = _write(tmp_path / "big.json.gz", {"distributedInfo": info, "traceEvents": []})
    assert said_of(where) == Said(7, 4096, "nccl")


def test_what_cannot_be_read_is_unread(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    (tmp_path / "empty.json").write_bytes(b"")
    (tmp_path / "broken.json.gz").write_bytes(b"\x1f\x8b broken")
    for name in ("pipe.json", "absent.json", "empty.json", "broken.json.gz"):
        assert said_of(str(tmp_path / name)) == UNREAD, name  # a pipe is never opened


def test_a_damaged_block_says_nothing(tmp_path: Path) -> None:
    (tmp_path / "cut.json").write_text('{"distributedInfo": {"rank": 1, "wor')
    (tmp_path / "odd.json").write_text('{"distributedInfo": {"rank": "first", "world_size": -2}}')
    assert said_of(str(tmp_path / "cut.json")) is None
    assert said_of(str(tmp_path / "odd.json")) == Said(None, None, None)


def test_a_gzip_cut_short_still_says_its_rank(tmp_path: Path) -> None:
    source = FIXTURES / "balanced-4" / "rank-2.json.gz"
    cut = tmp_path / "rank-2.json.gz"
    cut.write_bytes(source.read_bytes()[:3000])
    assert said_of(str(cut)) == _whole_file_says(source) == Said(2, 4, "gloo")


def test_a_url_is_read_too(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    where = _write(tmp_path / "r.json", {"distributedInfo": {"rank": 3}}, zipped=False)
    assert said_of(f"file://{where}") == Said(3, None, None)


def _rank_text(rank: int) -> bytes:
    """A real DDP rank trace's text: Kineto's header (``distributedInfo`` near the top)."""
    return gzip.decompress(shared_file(f"cpu/ddp_rank{rank}_trace_shapes.json.gz").read_bytes())


def _late(rank: int, at: int) -> bytes:
    """The rank's text with a long header field before ``distributedInfo``, whose key then
    starts at byte ``at`` (as a long ``deviceProperties`` or ``traceName`` puts it)."""
    text = _rank_text(rank)
    where = text.index(b'"distributedInfo"')
    padding = at - where - len(b'"notes": "", ')
    assert padding >= 0
    return text[:where] + b'"notes": "' + b"n" * padding + b'", ' + text[where:]


def _after_events(rank: int) -> bytes:
    """The rank's text with its ``distributedInfo`` last, after ``traceEvents``."""
    document = json.loads(_rank_text(rank))
    document["distributedInfo"] = document.pop("distributedInfo")
    return json.dumps(document).encode()


def _save(path: Path, text: bytes) -> str:
    path.write_bytes(gzip.compress(text, 1) if path.name.endswith(".gz") else text)
    return str(path)


@pytest.mark.parametrize("name", ["r.json.gz", "r.json"])
@pytest.mark.parametrize("at", [100_000, 65_536 - 8, 65_536 - 17, 3 * 65_536 + 1])
def test_a_block_past_the_first_64_kb_is_found(tmp_path: Path, at: int, name: str) -> None:
    where = _save(tmp_path / name, _late(1, at))  # 65_536 - 8: the key cut between chunks
    assert said_of(where) == _whole_file_says(Path(where)) == Said(1, 2, "gloo")


def test_a_block_past_4_mb_is_found(tmp_path: Path) -> None:
    where = _save(tmp_path / "r.json.gz", _late(0, 5_000_000))
    assert said_of(where) == _whole_file_says(Path(where)) == Said(0, 2, "gloo")


def _analyze(folder: Path) -> str:
    done = CliRunner().invoke(app, ["analyze", str(folder)])
    assert done.exit_code == 0, done.output
    return done.output


def test_ranks_whose_blocks_come_late_are_analyzed_as_one_job(tmp_path: Path) -> None:
    paths = [_save(tmp_path / f"rank{r}.json.gz", _late(r, 200_000)) for r in (0, 1)]
    assert said_by(paths) == [Said(0, 2, "gloo"), Said(1, 2, "gloo")]
    output = _analyze(tmp_path)
    assert "2 rank traces of world size 2" in output
    assert "without rank information" not in output


def test_a_block_after_the_events_is_unread_and_the_full_load_reads_it(tmp_path: Path) -> None:
    paths = [_save(tmp_path / f"rank{r}.json.gz", _after_events(r)) for r in (0, 1)]
    assert _whole_file_says(Path(paths[1])) == Said(1, 2, "gloo")
    assert said_by(paths) == [UNREAD, UNREAD]  # not None: "no distributedInfo" would be wrong
    assert not_one_job(said_by(paths)) is None
    output = _analyze(tmp_path)
    assert "2 rank traces of world size 2" in output
    assert "rank numbers from the trace's distributedInfo" in output
    document = json.loads(_rank_text(0))
    del document["distributedInfo"]
    none = _save(tmp_path / "none.json.gz", json.dumps(document).encode())
    assert said_of(none) is None  # a trace with no block at all says none


def test_the_read_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(said, "_READ_LIMIT", 1024 * 1024)
    far = _save(tmp_path / "far.json.gz", _late(0, 2_000_000))
    assert said_of(far) is None  # read up to the limit only: not found
    spaces = b'"traceEvents": [' + b" " * 2**21
    events = _after_events(0).replace(b'"traceEvents": [', spaces, 1)
    after = _save(tmp_path / "after.json", events)
    assert said_of(after) is None  # the events are longer than the limit: not seen after them
    monkeypatch.setattr(said, "_BLOCK_LIMIT", 64 * 1024)
    groups = [{"pg_name": str(g), "ranks": list(range(4096))} for g in range(8)]  # ~170 KB
    info = {"pg_config": groups, "backend": "nccl", "rank": 7, "world_size": 4096}
    long_block = _write(tmp_path / "big.json", {"distributedInfo": info, "traceEvents": []})
    assert said_of(long_block) is None  # a block longer than its limit is not decoded


def _job(*said: Said | Heard) -> str | None:
    return not_one_job(said)


def test_distinct_ranks_of_one_world_are_one_job() -> None:
    assert _job(Said(1, 4, "gloo"), Said(0, 4, "gloo"), Said(3, 4, "gloo")) is None
    assert _job(Said(0, None, None), Said(1, None, None)) is None
    assert _job(Said(0, 2, "gloo"), UNREAD, Said(1, 2, "gloo")) is None  # loading says why
    assert _job(UNREAD, UNREAD) is None  # each rank's failure, as a job's


@pytest.mark.parametrize(
    ("said", "why"),
    [
        ((None, None), "2 traces without rank information (no distributedInfo rank)"),
        ((None, UNREAD, None), "2 traces without rank information"),
        (
            (Said(0, 2, "gloo"), None, Said(None, 2, "gloo")),
            "3 traces, 2 of them without rank information (no distributedInfo rank)",
        ),
        (
            (Said(0, None, None), Said(1, 2, None), Said(0, None, None)),
            "3 traces whose ranks repeat (rank 0 in 2 of them)",
        ),
        ((Said(0, 2, "nccl"), Said(1, 300, "nccl")), "2 traces whose world sizes [2, 300] differ"),
        ((Said(0, 2, "nccl"), Said(1, None, "nccl")), "2 traces whose world size is said by 1 of"),
        ((Said(0, 2, "nccl"), Said(1, 2, "gloo")), "2 traces whose backends ['gloo', 'nccl']"),
        ((Said(0, 2, None), Said(5, 2, None)), "2 traces, rank 5 beyond their world size 2"),
    ],
)
def test_traces_that_are_not_one_job_say_why(said: tuple[Said | Heard, ...], why: str) -> None:
    found = not_one_job(said)
    assert found is not None and found.startswith(why)
