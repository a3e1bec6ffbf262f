"""input-pipeline with the DataLoader's workers beside the trace (tests/fixtures/loader/):
the step's waits for a late batch are the finding's share, its cause told from the workers'
files: slow samples named with their worker; workers that keep up make no finding; the
workers decide where the median step's read says little (a Lightning fit's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import steptrace
from steptrace.hypotheses.thresholds import Thresholds
from tests import reference
from tests.paths import FIXTURES

LOADER = FIXTURES / "loader"
NEXT = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def _late(folder: Path) -> tuple[int, int, set[int]]:
    """From the raw files: (ns the steps' __next__ calls spent before their batch was
    collated, the steps' summed wall ns, the workers of those late batches)."""
    doc = reference.read_exact(folder / "t.json.gz")
    evs = reference.events(doc)
    first = min(reference.ns(e["ts"]) for e in reference.complete_events(doc))
    zero = int(doc["baseTimeNanoseconds"]) + first
    files = folder / "t.workers"
    (main,) = files.glob("main-*.jsonl")
    nexts = [json.loads(x) for x in main.read_text().splitlines()]
    pids = nexts[0]["pids"]
    batches = {}
    for path in files.glob("worker-*.jsonl"):
        head, *lines = [json.loads(x) for x in path.read_text().splitlines()]
        for b in lines:
            if b["epoch"] == 0:
                batches[b["batch"] * len(pids) + head["worker"]] = (head["worker"], b)
    behind = wall = 0
    workers = set()
    for _, lo, hi in reference.counted_windows(evs):
        wall += hi - lo
        for e in evs:
            if e.name == NEXT and lo <= e.start < hi:
                record = min(
                    nexts,
                    key=lambda r: abs(r["start"] - zero - e.start) + abs(r["end"] - zero - e.end),
                )
                worker, batch = batches[record["batch"]]
                ready = batch["collate"][1] - zero
                if ready > e.start:
                    behind += min(e.end, ready) - e.start
                    workers.add(worker)
    return behind, wall, workers


@pytest.mark.parametrize("kind", ["slow-fork", "slow-spawn"])
def test_slow_samples_are_named_with_their_worker(kind: str) -> None:
    folder = LOADER / kind
    behind, wall, workers = _late(folder)
    assert workers == {1}  # the raw files: every late batch is worker 1's
    report = steptrace.analyze(folder / "t.json.gz")
    (found,) = [f for f in report.findings if f.rule == "input-pipeline"]
    values = found.evidence.values()
    assert found.severity == pytest.approx(behind / wall, rel=1e-6)
    assert values["cause"] == "slow-samples"
    assert values["workers_waited_for"] == (1,)
    named = {int(i) for i in values["slow_sample_indices"]}  # type: ignore[union-attr]
    assert named and all(i % 8 == 5 for i in named)
    assert "worker 1" in found.observation and "worker 1" in found.hypothesis
    assert all(str(i) in found.next_check for i in named)


def test_workers_that_keep_up_make_no_input_finding() -> None:
    """Cheap samples: every batch was collated before its __next__ call began; the call's
    time is receiving the batch (the trace's reading share alone would have fired)."""
    behind, wall, _ = _late(LOADER / "cheap")
    assert behind < 0.1 * wall
    report = steptrace.analyze(LOADER / "cheap" / "t.json.gz")
    assert not [f for f in report.findings if f.rule == "input-pipeline"]
    reading = [s.reading.ms / s.wall_ms for s in report.analysis.steps if s.reading]
    assert sorted(reading)[len(reading) // 2] > 0.1  # what fired before the workers' files


def test_the_workers_decide_where_a_ready_batch_lowers_the_median_read() -> None:
    """A Lightning fit (``lightning-fork/record.py``): worker 1's odd batches hold the slow
    samples, and Lightning's fetcher reads ahead, so a step whose batch was ready reads in
    a few percent of its time: the median step's read is low, while the steps waited for
    late batches a far larger share of their time (from the raw files). At an input_share
    between the two, the finding is there, its share the workers'."""
    folder = LOADER / "lightning-fork"
    behind, wall, workers = _late(folder)
    assert workers == {1}
    report = steptrace.analyze(folder / "t.json.gz")
    reading = sorted(s.reading.ms / s.wall_ms for s in report.analysis.steps if s.reading)
    median = (reading[1] + reading[2]) / 2  # four steps
    assert median < 0.3 < behind / wall
    limits = Thresholds(input_share=0.3)
    found = [f for f in steptrace.analyze(folder / "t.json.gz", thresholds=limits).findings]
    (finding,) = [f for f in found if f.rule == "input-pipeline"]
    assert finding.severity == pytest.approx(behind / wall, rel=1e-6)
    assert finding.evidence.values()["workers_waited_for"] == (1,)
