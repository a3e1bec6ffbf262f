"""``diff`` per label: hand-built analyses whose label times are known by construction, then
two real CPU captures (a DataLoader without and with workers) against their raw JSON."""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

import steptrace
from steptrace.across.diff import TraceDiff, diff_analyses
from steptrace.across.labels import LabelChange
from steptrace.analysis.measure import StepResult, TraceAnalysis
from steptrace.pipeline import diff as diff_paths
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.diff import diff_document
from tests.analyses import analysis, phase, step, steps
from tests.conftest import read_json

NEXT0 = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
NEXT2 = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
LOADER_NEXT = re.compile(r"^enumerate\(DataLoader\)#\w+\.__next__$")

# per step: the DataLoader's __next__, train, a checkpoint (every step before, one after), log
BEFORE = {
    NEXT0: [6.0, 8.0, 7.0],
    "train": [10.0, 10.2, 10.1],
    "ckpt": [2.0, 2.0, 2.0],
    "log": [0.5, 0.5, 0.5],
}
AFTER = {
    NEXT2: [0.4, 0.2, 0.3],
    "train": [10.0, 10.1, 10.3],
    "ckpt": [2.0, None, None],
    "prefetch": [1.0, 1.2, None],
}


def side(labels: dict[str, list[Any]], extra: StepResult | None = None) -> TraceAnalysis:
    """Three steps with these labels (None: absent from that step), and maybe one more."""
    phases = [
        tuple(phase(name, ms[k]) for name, ms in labels.items() if ms[k] is not None)
        for k in range(3)
    ]
    made = steps(20.0, 21.0, 22.0, phases=phases)
    return analysis([*made, extra] if extra else made)


def row(result: TraceDiff, name: str) -> LabelChange:
    return next(c for c in result.labels if c.name == name)


def test_labels_known_by_construction() -> None:
    result = diff_analyses(side(BEFORE), side(AFTER))
    median = statistics.median
    loader = row(result, NEXT0)
    assert (loader.after_name, loader.status) == (NEXT2, "changed")  # one label, renamed
    assert loader.before_ms == median(BEFORE[NEXT0]) and loader.after_ms == median(AFTER[NEXT2])
    assert loader.delta_ms == pytest.approx(median(AFTER[NEXT2]) - median(BEFORE[NEXT0]))
    assert (loader.before_steps, loader.after_steps) == (3, 3)
    train = row(result, "train")
    assert train.status == "unchanged" and train.after_name is None
    assert train.delta_ms == pytest.approx(median(AFTER["train"]) - median(BEFORE["train"]))
    # same time when it runs, but in one step of three instead of every step
    ckpt = row(result, "ckpt")
    assert (ckpt.status, ckpt.before_ms, ckpt.after_ms) == ("changed", 2.0, 2.0)
    assert (ckpt.before_steps, ckpt.after_steps) == (3, 1)
    # on one side only: the other side is not observed (None), never 0
    log, prefetch = row(result, "log"), row(result, "prefetch")
    assert (log.status, log.before_ms, log.after_ms, log.delta_ms) == (
        "disappeared",
        0.5,
        None,
        None,
    )
    assert (log.before_steps, log.after_steps) == (3, 0)
    assert (prefetch.status, prefetch.before_ms, prefetch.after_ms) == (
        "appeared",
        None,
        median([1.0, 1.2]),
    )
    assert prefetch.delta_ms is None and prefetch.after_steps == 2
    # by the size of the change: |delta|, or the time on the one side that has it
    assert [c.name for c in result.labels] == [NEXT0, "prefetch", "log", "ckpt", "train"]
    counts = result.label_counts
    assert (counts.appeared, counts.disappeared, counts.changed, counts.unchanged) == (1, 1, 2, 1)
    assert counts.unknown == 0


def test_a_partial_step_moves_no_label() -> None:
    cut = step("ProfilerStep#4", 1.0, phases=(phase(NEXT2, 50.0), phase("cleanup", 0.9)))
    partial = msgspec.structs.replace(cut, partial=True)
    with_partial = diff_analyses(side(BEFORE), side(AFTER, partial))
    assert with_partial.labels == diff_analyses(side(BEFORE), side(AFTER)).labels
    counted = diff_analyses(side(BEFORE), side(AFTER, cut))  # the same step, complete: counted
    assert "cleanup" in [c.name for c in counted.labels]


def test_a_diff_against_itself_moves_no_label() -> None:
    result = diff_analyses(side(BEFORE), side(BEFORE))
    assert {c.status for c in result.labels} == {"unchanged"}
    assert all(c.delta_ms == 0.0 for c in result.labels)
    assert result.label_counts.unchanged == len(BEFORE)


def test_labels_in_every_format() -> None:
    result = diff_analyses(side(BEFORE), side(AFTER))
    document = diff_document(result, top=15)
    data = json.loads(renderer("json").render([document]))
    by_name = {r["name"]: r for r in data["labels"]}
    assert by_name["log"]["after_ms"] is None and by_name["prefetch"]["before_ms"] is None
    assert by_name[NEXT0]["after_name"] == NEXT2
    assert msgspec.json.decode(msgspec.json.encode(result), type=TraceDiff) == result
    md = renderer("md").render([document])
    log_row = next(line for line in md.splitlines() if line.startswith("| `log` |"))
    assert "not observed" in log_row and "0.000" not in log_row
    assert "labels: 1 appeared, 1 disappeared, 2 changed, 1 unchanged" in md
    for name in ("text", "html"):
        out = renderer(name).render([document])
        assert "not observed" in out and "_MultiProcessingDataLoaderIter.__next__" in out
        assert out.index("Labels") < out.index("Operators")


# -- two real captures ---------------------------------------------------------------------
class SlowDataset:
    """Samples that take 4 ms each to read: a batch of 2 takes 8 ms in the main process."""

    def __len__(self) -> int:
        return 40

    def __getitem__(self, index: int) -> float:
        time.sleep(0.004)
        return float(index)  # not a tensor: no shared memory to hand over between processes


def capture_loader(out: Path, num_workers: int) -> Path:
    """Four active steps reading a batch and computing for 8 ms (labelled ``compute``).

    With workers, every batch the window takes is read ahead before it starts (2 workers x 4
    in flight): the window shows reading overlapped, not the workers' start-up or a loaded
    machine's scheduling."""
    from torch.utils.data import DataLoader

    ahead = {"prefetch_factor": 4} if num_workers else {}
    loader = DataLoader(
        SlowDataset(), batch_size=2, num_workers=num_workers, collate_fn=list, **ahead
    )
    batches = iter(loader)
    next(batches)
    if num_workers:
        time.sleep(0.5)
    window = steptrace.Window(cold_steps=0, wait=1, warmup=1, active=4)
    scenario = steptrace.Scenario(question="Does the step wait for data?", device="cpu")
    with steptrace.capture(scenario, out=out, window=window) as run:
        for _batch in batches:
            with run.phase("compute"):
                time.sleep(0.008)
            run.step()
            if run.done:
                break
    assert run.result is not None
    return Path(run.result.trace)


def loader_next_per_step(trace: Path) -> tuple[str, float]:
    """The __next__ label's name, and the median over the steps of its durations summed per
    step, read from the raw JSON."""
    events = read_json(trace)["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"]
    steps = [e for e in spans if re.fullmatch(r"ProfilerStep#\d+", e["name"])]
    nexts = [e for e in spans if LOADER_NEXT.match(e["name"])]
    per_step = [
        sum(n["dur"] for n in nexts if s["ts"] <= n["ts"] < s["ts"] + s["dur"]) / 1000
        for s in steps
    ]
    assert len(steps) == 4 and len({n["name"] for n in nexts}) == 1
    return nexts[0]["name"], statistics.median(per_step)


def test_workers_move_time_out_of_the_loaders_next(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="capture needs torch")
    before = capture_loader(tmp_path / "nw0.json", num_workers=0)
    after = capture_loader(tmp_path / "nw2.json", num_workers=2)
    (old_name, old_ms), (new_name, new_ms) = (
        loader_next_per_step(before),
        loader_next_per_step(after),
    )
    assert (old_name, new_name) == (NEXT0, NEXT2)
    result = diff_paths(before, after)
    loader = row(result, NEXT0)
    assert loader.after_name == NEXT2 and loader.status == "changed"
    assert loader.before_ms == pytest.approx(old_ms, rel=1e-9, abs=1e-6)
    assert loader.after_ms == pytest.approx(new_ms, rel=1e-9, abs=1e-6)
    assert loader.before_ms > 8.0  # two samples read in the main process, 4 ms each
    assert loader.delta_ms is not None and loader.delta_ms < -loader.before_ms / 2
    assert result.labels[0] == loader  # the largest change
    sizes = [abs(c.delta_ms) if c.delta_ms is not None else 0.0 for c in result.labels]
    assert sizes == sorted(sizes, reverse=True)  # both sides have every label here
    text = renderer("text").render([diff_document(result, top=15)])
    assert "_SingleProcessDataLoaderIter.__next__ →" in text
    assert steptrace.analyze(before).analysis.summary.count == 4
