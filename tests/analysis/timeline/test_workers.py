"""The DataLoader workers' lanes (``timeline.workers``) against a plain reading of the raw
files: the trace's JSON (``ts``/``dur`` as decimals, in integer ns) and the workers' and
the main process's JSON lines.

The reference puts a worker's ``time.time_ns`` on the table's clock as ``t -
baseTimeNanoseconds - origin`` (origin: the earliest complete event's ``ts``), keeps the
spans that start in the step or run at its start, clipped to it, and numbers a worker's
j-th batch ``j * n + position`` (its position in the iterator's ``pids``). Nothing is
taken from steptrace's figures.
"""

from __future__ import annotations

import gzip
import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from steptrace.analysis.timeline.model import KINDS, Lanes
from steptrace.pipeline import analyze_source
from tests import paths

SLOW_FORK = paths.TESTS / "fixtures" / "loader" / "slow-fork"
TOLERANCE_NS = 1_000_000
NEXT = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def _ns(value: Any) -> int:
    return int((Decimal(str(value)) * 1000).to_integral_value())


class Raw:
    """The fixture's files, read without steptrace."""

    def __init__(self, folder: Path) -> None:
        self.slow = folder.name.startswith("slow")  # a 30 ms sample in 8, in worker 1
        with gzip.open(folder / "t.json.gz", "rt", encoding="utf-8") as f:
            trace = json.load(f, parse_float=Decimal)
        complete = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
        self.origin = min(_ns(e["ts"]) for e in complete)
        self.zero = int(trace["baseTimeNanoseconds"]) + self.origin
        self.steps = {
            e["name"]: (_ns(e["ts"]) - self.origin, _ns(e["ts"]) + _ns(e["dur"]) - self.origin)
            for e in complete
            if e["name"].startswith("ProfilerStep#")
        }
        self.calls = sorted(
            (_ns(e["ts"]) - self.origin, _ns(e["ts"]) + _ns(e["dur"]) - self.origin)
            for e in complete
            if e["name"] == NEXT
        )
        self.nexts = [
            json.loads(line)
            for path in sorted((folder / "t.workers").glob("main-*.jsonl"))
            for line in path.read_text().splitlines()
        ]
        self.workers = []
        for path in sorted((folder / "t.workers").glob("worker-*.jsonl")):
            head, *batches = [json.loads(line) for line in path.read_text().splitlines()]
            self.workers.append((head, batches))
        self.workers.sort(key=lambda w: w[0]["worker"])
        (self.pids,) = [r["pids"] for r in self.nexts if r.get("pids")]

    def spans(self, worker: int) -> list[tuple[int, int, str, int, Any]]:
        """(start, end, kind, k, index) of a worker, ns on the table's clock."""
        head, batches = self.workers[worker]
        position = self.pids.index(head["pid"])
        out = []
        for j, batch in enumerate(b for b in batches if b["epoch"] == 0):
            assert batch["batch"] == j
            k = j * len(self.pids) + position
            for index, start, end in batch["samples"]:
                out.append((start - self.zero, end - self.zero, "sample", k, index))
            start, end = batch["collate"]
            out.append((start - self.zero, end - self.zero, "collate", k, None))
        return out

    def in_step(self, worker: int, step: str) -> list[tuple[int, int, str, int, Any]]:
        """The worker's spans drawn in the step: clipped, times from its start."""
        lo, hi = self.steps[step]
        return [
            (max(s, lo) - lo, min(e, hi) - max(s, lo), kind, k, index)
            for s, e, kind, k, index in self.spans(worker)
            if lo <= s < hi or s < lo < e
        ]

    def received(self, step: str) -> list[tuple[int, int, int]]:
        """Per DataLoader call starting in the step: (its start from the step's start, the
        batch k its main record names, that batch's worker id)."""
        lo, hi = self.steps[step]
        out = []
        for start, end in self.calls:
            if not lo <= start < hi:
                continue
            held = [
                (abs(r["start"] - self.zero - start) + abs(r["end"] - self.zero - end), r)
                for r in self.nexts
                if r["start"] - self.zero - TOLERANCE_NS <= start
                and end <= r["end"] - self.zero + TOLERANCE_NS
            ]
            record = min(held, key=lambda h: h[0])[1]
            pid = self.pids[record["batch"] % len(self.pids)]
            worker = next(h["worker"] for h, _ in self.workers if h["pid"] == pid)
            out.append((start - lo, record["batch"], worker))
        return out


def _lanes(path: Path) -> Lanes:
    _, lanes = analyze_source(path, lanes=True)
    assert lanes is not None
    return lanes


@pytest.fixture(scope="module", params=["slow-fork", "slow-spawn", "cheap"])
def captured(request: pytest.FixtureRequest) -> tuple[Raw, Lanes]:
    """slow-fork, and the same checks on the other two captures."""
    folder = SLOW_FORK.parent / request.param
    return Raw(folder), _lanes(folder / "t.json.gz")


def test_each_step_has_one_lane_per_worker_equal_to_the_raw_files(
    captured: tuple[Raw, Lanes],
) -> None:
    raw, lanes = captured
    assert [s.name for s in lanes.steps] == sorted(raw.steps, key=lambda n: int(n[13:]))
    for step in lanes.steps:
        lo, hi = raw.steps[step.name]
        assert (step.start_us * 1000, step.wall_ns) == (pytest.approx(lo, abs=1), hi - lo)
        kinds = [lane.kind for lane in step.lanes]
        assert kinds == ["cpu", "worker", "worker"]  # under the main thread's lane
        for w, lane in enumerate(step.lanes[1:]):
            head = raw.workers[w][0]
            assert lane.label == f"worker {head['worker']} (pid {head['pid']})"
            assert lane.worker is not None and lane.worker.pid == head["pid"]
            assert lane.bands == ()  # every span longer than the resolution here
            drawn = [
                (b.start_ns, b.dur_ns, lanes.kinds[b.kind], k, lanes.names[b.name])
                for b, k in zip(lane.bars, lane.worker.batches, strict=True)
            ]
            expected = raw.in_step(w, step.name)
            assert [d[:4] for d in drawn] == [e[:4] for e in expected], (step.name, w)
            for (*_, name), (*_, kind, k, index) in zip(drawn, expected, strict=True):
                said = f"batch {k} from worker {head['worker']}"
                assert name == (f"{index} ({said})" if kind == "sample" else said)
            assert lane.events == len(expected)


def test_the_slow_samples_are_worker_ones_and_long_on_its_lane(
    captured: tuple[Raw, Lanes],
) -> None:
    raw, lanes = captured
    if not raw.slow:  # cheap samples (0.2 ms): no sample bar anywhere near a slow one's
        bars = [b for s in lanes.steps for lane in s.lanes if lane.worker for b in lane.bars]
        assert bars and max(b.dur_ns for b in bars) < 5_000_000
        return
    slow = [
        (w, index, e - s)
        for w in range(len(raw.workers))
        for s, e, kind, _, index in raw.spans(w)
        if kind == "sample" and isinstance(index, int) and index % 8 == 5
    ]
    assert slow and all(w == 1 and ns > 25_000_000 for w, _, ns in slow)
    longest = max((b.dur_ns, lanes.names[b.name]) for s in lanes.steps for b in s.lanes[2].bars)
    assert longest[0] > 19_000_000 and int(longest[1].split()[0]) % 8 == 5


def test_each_wait_is_linked_to_the_batch_its_main_record_names(
    captured: tuple[Raw, Lanes],
) -> None:
    raw, lanes = captured
    linked = expected_links = 0
    for step in lanes.steps:
        expected = raw.received(step.name)
        assert [(w.start_ns, w.batch, w.worker) for w in step.waits] == expected
        main = step.lanes[0]
        expected_links += sum(
            k == batch
            for _, batch, _ in expected
            for w in range(len(raw.workers))
            for *_, k, _ in raw.in_step(w, step.name)
        )
        for wait in step.waits:
            (bar,) = [b for b in main.bars if b.id == wait.bar]
            assert lanes.names[bar.name] == NEXT and bar.start_ns == wait.start_ns
            for lane in step.lanes[1:]:
                assert lane.worker is not None
                for b, k in zip(lane.bars, lane.worker.batches, strict=True):
                    assert (b.owner == wait.bar) == (k == wait.batch), (step.name, k)
                    linked += b.owner == wait.bar
    assert linked == expected_links
    assert linked >= 3 * 4 or not raw.slow  # each slow step: 3 samples of its batch, collate


def test_a_trace_without_worker_files_has_no_worker_lane(tmp_path: Path) -> None:
    shutil.copy(SLOW_FORK / "t.json.gz", tmp_path / "t.json.gz")
    lanes = _lanes(tmp_path / "t.json.gz")
    assert lanes.kinds == KINDS
    assert all(lane.kind == "cpu" and lane.worker is None for s in lanes.steps for lane in s.lanes)
    assert all(s.waits == () for s in lanes.steps)
    assert not any("from worker" in name for name in lanes.names)
