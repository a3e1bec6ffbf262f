"""The DataLoader's workers read back from their files beside a real capture (fork and
spawn, 2 workers, 4 samples a batch, every eighth sample slow: tests/fixtures/loader/), each
figure against an independent reference from the raw JSON lines and the trace's raw
events, in integer nanoseconds on the trace's clock."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

import steptrace
from tests import reference
from tests.paths import FIXTURES

LOADER = FIXTURES / "loader"
CAPTURES = [LOADER / "slow-fork", LOADER / "slow-spawn", LOADER / "cheap"]
NEXT = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def _lines(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text().splitlines()]


class Raw:
    """The capture's trace and files, on the trace's clock: ns since its first event."""

    def __init__(self, folder: Path) -> None:
        doc = reference.read_exact(folder / "t.json.gz")
        self.evs = reference.events(doc)
        first = min(reference.ns(e["ts"]) for e in reference.complete_events(doc))
        self.zero = int(doc["baseTimeNanoseconds"]) + first
        self.windows = reference.counted_windows(self.evs)
        self.workers = {}
        for path in (folder / "t.workers").glob("worker-*.jsonl"):
            head, *batches = _lines(path)
            self.workers[head["pid"]] = (head, batches)
        (main,) = (folder / "t.workers").glob("main-*.jsonl")
        self.nexts = _lines(main)
        self.pids = self.nexts[0]["pids"]

    def t(self, ns: int) -> int:
        return ns - self.zero

    def batch(self, k: int) -> tuple[int, dict]:  # type: ignore[type-arg]
        """Batch k of the capture's iterator: worker k mod n, its (k // n)-th batch."""
        n = len(self.pids)
        pid = self.pids[k % n]
        (found,) = [b for b in self.workers[pid][1] if b["epoch"] == 0 and b["batch"] == k // n]
        return k % n, found

    def calls(self) -> list[tuple[str, int, int, int]]:
        """(step, start, end, k) of each __next__ call in a counted step, k from the main
        record whose span is nearest the call's."""
        found = []
        for name, lo, hi in self.windows:
            for e in self.evs:
                if e.name == NEXT and lo <= e.start < hi:
                    k = min(
                        self.nexts,
                        key=lambda r: (
                            abs(self.t(r["start"]) - e.start) + abs(self.t(r["end"]) - e.end)
                        ),
                    )["batch"]
                    found.append((name, e.start, e.end, k))
        return found


@pytest.mark.parametrize("folder", CAPTURES, ids=lambda p: p.name)
def test_each_step_waits_for_the_batch_its_worker_made(folder: Path) -> None:
    raw = Raw(folder)
    loader = steptrace.analyze(folder / "t.json.gz").analysis.loader
    assert loader is not None and loader.num_workers == 2
    calls = raw.calls()
    assert [(s.step, s.batch) for s in loader.steps] == [(n, k) for n, _, _, k in calls]
    for step, (_, start, end, k) in zip(loader.steps, calls, strict=True):
        worker, batch = raw.batch(k)
        samples = batch["samples"]
        assert [s[0] for s in samples] == list(range(4 * k, 4 * k + 4))  # sequential sampler
        assert step.worker == worker
        fetch = max(s[2] for s in samples) - min(s[1] for s in samples)
        assert step.fetch_ms == pytest.approx(fetch / 1e6, abs=1e-6)
        collate_end = raw.t(batch["collate"][1])
        assert step.collate_ms == pytest.approx((batch["collate"][1] - batch["collate"][0]) / 1e6)
        assert step.wait_ms == pytest.approx((end - start) / 1e6, abs=1e-6)
        # causality: the batch was collated before the call that returned it ended
        assert collate_end <= end
        assert step.ready_ms == pytest.approx((end - collate_end) / 1e6, abs=1e-6)
        assert step.behind_ms == pytest.approx(
            max(min(end, collate_end) - start, 0) / 1e6, abs=1e-6
        )


@pytest.mark.parametrize("folder", CAPTURES, ids=lambda p: p.name)
def test_each_worker_s_busy_time_is_the_union_of_its_spans_in_the_window(folder: Path) -> None:
    raw = Raw(folder)
    loader = steptrace.analyze(folder / "t.json.gz").analysis.loader
    assert loader is not None
    lo, hi = raw.windows[0][1], max(h for _, _, h in raw.windows)
    assert loader.window_ms == pytest.approx((hi - lo) / 1e6, abs=1e-6)
    for load in loader.workers:
        head, batches = raw.workers[load.pid]
        assert head["worker"] == load.worker
        spans = [(raw.t(s[1]), raw.t(s[2])) for b in batches for s in b["samples"]]
        spans += [(raw.t(b["collate"][0]), raw.t(b["collate"][1])) for b in batches]
        clipped = [(max(a, lo), min(b, hi)) for a, b in spans if b > lo and a < hi]
        busy = reference.merged_length(clipped)
        assert load.busy_ms == pytest.approx(busy / 1e6, abs=1e-5)
        assert load.share == pytest.approx(busy / (hi - lo), abs=1e-6)


def test_the_slow_samples_are_those_the_recording_planted_and_all_are_worker_1_s() -> None:
    """index % 8 == 5 sleeps 30 ms, the others 0.2 ms; 4 a batch: batch 2m + 1 holds
    index 8m + 5, an odd batch, worker 1's."""
    for folder in CAPTURES[:2]:
        loader = steptrace.analyze(folder / "t.json.gz").analysis.loader
        assert loader is not None
        raw = Raw(folder)
        late = {k for _, _, _, k in raw.calls()}
        assert loader.slow_samples
        for slow in loader.slow_samples:
            assert isinstance(slow.index, int) and slow.index % 8 == 5
            assert slow.worker == 1 and slow.batch == slow.index // 4
        # every planted sample of a batch a step waited for is named
        planted = {4 * k + i for k in late for i in range(4) if (4 * k + i) % 8 == 5}
        assert planted <= {s.index for s in loader.slow_samples}
        durations = [
            (s[2] - s[1]) / 1e6 for _, bs in raw.workers.values() for b in bs for s in b["samples"]
        ]
        assert statistics.median(durations) < 1 < min(s.ms for s in loader.slow_samples)
        worker_1 = next(w for w in loader.workers if w.worker == 1)
        assert loader.imbalance == pytest.approx(
            worker_1.busy_ms / statistics.fmean(w.busy_ms for w in loader.workers)
        )


def test_cheap_samples_are_never_slow_and_a_trace_without_files_has_no_loader() -> None:
    cheap = steptrace.analyze(LOADER / "cheap" / "t.json.gz").analysis.loader
    assert cheap is not None and cheap.slow_samples == ()
    from tests.conftest import report_of

    assert report_of("cpu_train_trace.json.gz").analysis.loader is None
