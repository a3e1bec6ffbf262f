"""The DataLoader's workers recorded by a real capture (fork, spawn, persistent workers):
one file per worker beside the trace, each batch's samples those the sampler gave it, the
user's worker_init_fn still run, on the trace's clock (each main-process record holds the
trace's __next__ call), nothing left changed on the loader."""

from __future__ import annotations

import itertools
import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="captures run torch")

import steptrace  # noqa: E402
from steptrace.capturing.loader_spans import LoaderSpans, folder_for  # noqa: E402
from steptrace.capturing.workload import Workload, run_workload  # noqa: E402
from tests import loader_workloads, reference  # noqa: E402

NEXT = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def _marked(folder: str, worker_id: int) -> None:
    """A user's worker_init_fn: leaves a mark steptrace's must not replace."""
    Path(folder, f"user-{worker_id}-{os.getpid()}").touch()


class Marking:
    def __init__(self, folder: str) -> None:
        self.folder = folder

    def __call__(self, worker_id: int) -> None:
        _marked(self.folder, worker_id)


def _captured(workload: Workload, out: Path) -> steptrace.Report:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        captured = run_workload(workload, out=out, window=steptrace.Window(active=4))
    return steptrace.analyze(captured.trace)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_each_worker_writes_its_batches_on_the_trace_s_clock(tmp_path: Path, context: str) -> None:
    workload = loader_workloads.slow_samples(context)
    loader = workload.loader
    marks = tmp_path / "marks"
    marks.mkdir()
    loader.worker_init_fn = Marking(str(marks))  # type: ignore[union-attr]
    user = loader.worker_init_fn  # type: ignore[union-attr]
    report = _captured(workload, tmp_path / "run" / "t.json")
    assert loader.worker_init_fn is user  # type: ignore[union-attr]  # put back
    folder = folder_for(tmp_path / "run" / "t.json")
    assert report.capture is not None and report.capture.loader_spans == str(folder)
    workers = sorted(folder.glob("worker-*.jsonl"))
    assert len(workers) == 2
    assert len(list(marks.iterdir())) == 2  # the user's worker_init_fn ran in each
    pids = set()
    for path in workers:
        head, *batches = [json.loads(x) for x in path.read_text().splitlines()]
        pids.add(head["pid"])
        assert head["workers"] == 2 and path.name == f"worker-{head['worker']}-{head['pid']}.jsonl"
        for b in batches:
            k = 2 * b["batch"] + head["worker"]  # batch k from worker k mod 2
            assert [s[0] for s in b["samples"]] == list(range(4 * k, 4 * k + 4))
            assert all(s[1] <= s[2] <= b["collate"][0] <= b["collate"][1] for s in b["samples"])
    (main,) = folder.glob("main-*.jsonl")
    nexts = [json.loads(x) for x in main.read_text().splitlines()]
    assert set(nexts[0]["pids"]) == pids
    doc = reference.read_exact(Path(report.analysis.trace.path))
    base = int(doc["baseTimeNanoseconds"])
    calls = [e for e in reference.complete_events(doc) if e["name"] == NEXT]
    assert calls
    for call in calls:
        start = reference.ns(call["ts"])
        end = start + reference.ns(call["dur"])
        held = [r for r in nexts if r["start"] - base <= start and end <= r["end"] - base]
        assert len(held) == 1  # the main process's record holds the trace's call


def test_persistent_workers_are_recorded_and_a_loader_without_workers_is_left_alone(
    tmp_path: Path,
) -> None:
    from torch.utils.data import DataLoader

    loader = DataLoader(
        loader_workloads.Samples(slow=False), batch_size=4, num_workers=2, persistent_workers=True
    )
    spans = LoaderSpans(tmp_path / "w")
    with spans.installed(loader) as recorded:
        assert recorded
        for _ in range(2):  # two epochs on the same two worker processes
            for k, _batch in enumerate(spans.iterate(loader)):
                if k == 5:
                    break
    epochs = set()
    for path in (tmp_path / "w").glob("worker-*.jsonl"):
        epochs |= {json.loads(x)["epoch"] for x in path.read_text().splitlines()[1:]}
    assert epochs == {0, 1}
    plain = DataLoader(loader_workloads.Samples(slow=False), batch_size=4)
    with LoaderSpans(tmp_path / "none").installed(plain) as recorded:
        assert not recorded
    assert not (tmp_path / "none").exists()


def test_a_folder_already_there_is_never_written_into(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "mine.txt").write_text("the user's")
    loader = loader_workloads.cheap("fork").loader
    with LoaderSpans(folder).installed(loader) as recorded:
        assert not recorded
    assert sorted(p.name for p in folder.iterdir()) == ["mine.txt"]


def test_without_workers_the_report_is_as_before(tmp_path: Path) -> None:
    report = _captured(loader_workloads.in_process(), tmp_path / "t.json")
    assert report.capture is not None and report.capture.loader_spans is None
    assert report.analysis.loader is None
    assert not folder_for(tmp_path / "t.json").exists()
    (found,) = [f for f in report.findings if f.rule == "input-pipeline"]
    assert "cause" not in found.evidence.values()


def _main_lines(folder: Path) -> list[dict[str, Any]]:
    (path,) = folder.glob("main-*.jsonl")
    return [json.loads(x) for x in path.read_text().splitlines()]


def _worker_pids(folder: Path) -> set[int]:
    return {int(p.name.split("-")[2].split(".")[0]) for p in folder.glob("worker-*.jsonl")}


def test_recorded_times_the_iterators_a_loop_makes_itself(tmp_path: Path) -> None:
    """A loop that iterates the loader itself (as Lightning's and the Trainer's do): each
    ``iter`` of a loader with persistent workers is a numbered iterator whose every batch
    is timed; at the exit the lines are written and the loader is as it was."""
    from torch.utils.data import DataLoader

    loader = DataLoader(
        loader_workloads.Samples(slow=False), batch_size=4, num_workers=2, persistent_workers=True
    )
    spans = LoaderSpans(tmp_path / "w")
    with spans.recorded(loader) as recorded:
        assert recorded
        taken = [sum(1 for _ in zip(range(k), loader, strict=False)) for k in (6, 3)]
    lines = _main_lines(tmp_path / "w")
    assert [(x["iterator"], x["batch"]) for x in lines] == [
        (i, k) for i, n in enumerate(taken) for k in range(n)
    ]
    assert all(int(x["start"]) <= int(x["end"]) for x in lines)
    assert {int(p) for p in lines[0]["pids"]} == _worker_pids(tmp_path / "w")
    assert loader.worker_init_fn is None and "_get_iterator" not in vars(loader)
    assert sum(1 for _ in loader) == len(loader)  # it goes on as itself


def test_an_accelerate_shard_is_recorded_through_the_dataloader_it_holds(tmp_path: Path) -> None:
    accelerate = pytest.importorskip("accelerate")
    shard = accelerate.data_loader.DataLoaderShard(
        loader_workloads.Samples(slow=False), batch_size=4, num_workers=2
    )
    base = shard.base_dataloader
    spans = LoaderSpans(tmp_path / "w")
    with spans.recorded(shard) as recorded:
        assert recorded
        batches = sum(1 for _ in zip(range(5), shard, strict=False))
    assert batches == 5
    assert len(_worker_pids(tmp_path / "w")) == 2
    # the shard reads one batch ahead: its DataLoader's nexts, each timed
    assert len(_main_lines(tmp_path / "w")) >= batches
    assert base.worker_init_fn is None and "_get_iterator" not in vars(base)


def _profiled(tmp_path: Path, loader: Any, epochs: int, active: int) -> steptrace.Report:
    """docs/capture.md's recipe: ``spans.recorded(loader)`` around a plain torch.profiler
    loop (wait 1, warm-up 1, ``active``) over ``epochs`` of the loader, 2 + ``active`` steps
    at most; the exported trace's report."""
    from torch.profiler import profile, schedule

    model = torch.nn.Linear(loader_workloads.FEATURES, 4)
    spans = LoaderSpans(tmp_path / "t.workers")
    plan = schedule(wait=1, warmup=1, active=active, repeat=1)
    with spans.recorded(loader), profile(schedule=plan) as prof:
        batches = itertools.chain.from_iterable(loader for _ in range(epochs))
        for x, _y in itertools.islice(batches, 2 + active):
            model(x).sum().backward()
            prof.step()
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return steptrace.analyze(tmp_path / "t.json")


def test_the_torch_profiler_recipe_joins_each_step_to_its_batch(tmp_path: Path) -> None:
    """The recipe: the report joins each profiled step's wait to the batch from worker
    k mod 2."""
    report = _profiled(tmp_path, loader_workloads.slow_samples("fork").loader, 1, 3)
    found = report.analysis.loader
    assert found is not None and found.num_workers == 2
    assert [s.step for s in found.steps] == [s.name for s in report.analysis.steps]
    assert found.steps and all(s.worker == s.batch % 2 for s in found.steps)


def test_an_epoch_starting_in_the_window_makes_no_input_finding(tmp_path: Path) -> None:
    """Cheap samples, 3 batches an epoch, the window across the second epoch's start: the
    new iterator's first batch waits for its spawned workers to start (the raw files say
    so), which is not the pipeline's pace: no input finding (it was a 'slow-worker' one)."""
    data = loader_workloads.Samples(slow=False, length=12)
    loader = torch.utils.data.DataLoader(
        data, batch_size=4, num_workers=2, multiprocessing_context="spawn"
    )
    report = _profiled(tmp_path, loader, 2, 4)  # 6 steps: the last 4 hold epoch 2's start
    found = report.analysis.loader
    assert found is not None
    starts = [s for s in found.steps if s.batch < found.num_workers]  # the second epoch's
    assert any(s.behind_ms > s.fetch_ms + s.collate_ms for s in starts)  # waited for a start
    assert not [f for f in report.findings if f.rule == "input-pipeline"]
