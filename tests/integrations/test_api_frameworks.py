"""End to end: Lightning, Hugging Face Trainer, Accelerate and a gloo run, as users run them.

Each trains a tiny model on the CPU and reads the trace back with ``steptrace analyze``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")

from steptrace.capturing.loader_spans import folder_for  # noqa: E402
from steptrace.cli import app  # noqa: E402
from steptrace.scenario import sidecar_path  # noqa: E402
from tests.integrations.workloads import QUESTION, SCENARIO, gloo_rank  # noqa: E402

pytestmark = pytest.mark.slow  # real training loops of real frameworks
PARTS = {"forward", "backward", "optimizer_step"}


def analyze_json(*paths: Path) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["analyze", "--format", "json", *map(str, paths)])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def parts_in_every_step(report: dict[str, Any]) -> list[set[str]]:
    return [{p["part"] for p in s["phases"] if p["part"]} for s in report["analysis"]["steps"]]


def only_trace(folder: Path) -> Path:
    (trace,) = (p for p in folder.iterdir() if p.name.endswith(".pt.trace.json.gz"))
    assert sidecar_path(trace).is_file()
    return trace


def test_lightning_step_trace_profiler(tmp_path: Path) -> None:
    pytest.importorskip("lightning")
    from steptrace.integrations.lightning import StepTraceProfiler
    from tests.integrations.workloads import lightning_fit

    profiler = StepTraceProfiler(scenario=SCENARIO, dirpath=tmp_path / "traces")
    lightning_fit(tmp_path, profiler, steps=6)
    trace = only_trace(tmp_path / "traces")
    assert trace.name.startswith("rank0.")
    assert profiler.result is not None and profiler.result.trace == str(trace)
    assert len(profiler.result.facts.cold_start_ms) == 1  # Window(): one cold batch, timed
    report = analyze_json(trace)
    assert report["scenario"]["question"] == QUESTION
    assert [s["name"] for s in report["analysis"]["steps"]] == ["ProfilerStep#2", "ProfilerStep#3"]
    for found in parts_in_every_step(report):  # each step is one whole batch
        assert found >= PARTS | {"data_read", "transfer"}


def test_a_fit_too_short_for_the_window_warns_and_leaves_no_file(tmp_path: Path) -> None:
    pytest.importorskip("lightning")
    from steptrace.errors import CaptureWarning
    from steptrace.integrations.lightning import StepTraceProfiler
    from tests.integrations.workloads import lightning_fit

    profiler = StepTraceProfiler(scenario=SCENARIO, dirpath=tmp_path / "traces")
    # Window(): 1 cold + wait 1 + warm-up 1 + active 2; three batches reach no active step
    with pytest.warns(CaptureWarning, match="no active step completed"):
        lightning_fit(tmp_path, profiler, steps=3)
    assert profiler.result is None
    assert not any((tmp_path / "traces").iterdir())


def _joined_to_their_batches(report: dict[str, Any], steps: int) -> list[dict[str, Any]]:
    """The report's steps joined to the batch each waited for (``analysis.loader``): every
    profiled step's, each from worker k mod 2."""
    loader = report["analysis"]["loader"]
    assert loader is not None and loader["num_workers"] == 2
    joined: list[dict[str, Any]] = loader["steps"]
    assert [s["step"] for s in joined] == [s["name"] for s in report["analysis"]["steps"]]
    assert len(joined) == steps
    assert all(s["worker"] == s["batch"] % 2 for s in joined)
    return joined


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_lightning_records_the_workers_and_names_the_slow_ones(
    tmp_path: Path, context: str
) -> None:
    """Batches of 4 from 2 workers, every eighth sample slow (index % 8 == 5): each slow
    one falls in an odd batch, worker 1's. The profiler records the workers beside its
    trace; the report names worker 1 and those samples; the loader is left as it was."""
    pytest.importorskip("lightning")
    import steptrace
    from steptrace.integrations.lightning import StepTraceProfiler
    from tests.integrations.workloads import SLOW_AT, SLOW_EVERY, Pairs, lightning_fit

    loader = torch.utils.data.DataLoader(
        Pairs(slow=True), batch_size=4, num_workers=2, multiprocessing_context=context
    )
    profiler = StepTraceProfiler(
        scenario=SCENARIO, dirpath=tmp_path / "traces", window=steptrace.Window(active=4)
    )
    lightning_fit(tmp_path, profiler, steps=8, loader=loader)
    trace = only_trace(tmp_path / "traces")
    assert profiler.result is not None
    assert profiler.result.facts.loader_spans == str(folder_for(trace))
    assert loader.worker_init_fn is None and "_get_iterator" not in vars(loader)
    report = analyze_json(trace)
    _joined_to_their_batches(report, 4)
    (found,) = [f for f in report["findings"] if f["rule"] == "input-pipeline"]
    values = {f["name"]: f["value"] for f in found["evidence"]["figures"]}
    assert values["cause"] == "slow-samples" and values["workers_waited_for"] == [1]
    named = [int(i) for i in values["slow_sample_indices"]]
    assert named and all(i % SLOW_EVERY == SLOW_AT for i in named)


def test_a_fit_too_short_for_the_window_leaves_no_worker_files(tmp_path: Path) -> None:
    pytest.importorskip("lightning")
    from steptrace.errors import CaptureWarning
    from steptrace.integrations.lightning import StepTraceProfiler
    from tests.integrations.workloads import Pairs, lightning_fit

    loader = torch.utils.data.DataLoader(Pairs(), batch_size=8, num_workers=2)
    profiler = StepTraceProfiler(scenario=SCENARIO, dirpath=tmp_path / "traces")
    with pytest.warns(CaptureWarning, match="no active step completed"):
        lightning_fit(tmp_path, profiler, steps=3, loader=loader)
    assert not any((tmp_path / "traces").iterdir())
    assert loader.worker_init_fn is None


def test_lightnings_own_profiler_is_read_with_its_labels(tmp_path: Path) -> None:
    pytest.importorskip("lightning")
    from lightning.pytorch.profilers import PyTorchProfiler

    from tests.integrations.workloads import lightning_fit

    out = tmp_path / "own"
    lightning_fit(tmp_path, PyTorchProfiler(dirpath=str(out), filename="p", export_to_chrome=True))
    # Lightning's names hold [ and ]: never glob them, list the folder
    (trace,) = (p for p in out.iterdir() if p.name.endswith(".pt.trace.json"))
    assert "[" in trace.name
    report = analyze_json(trace)
    steps = report["analysis"]["steps"]
    # its schedule (wait 1, warm-up 1, active 3) records 3 markers cut after the forward;
    # two whole batches lie inside them
    assert [s["name"] for s in steps] == ["run_training_batch#1", "run_training_batch#2"]
    for found in parts_in_every_step(report):
        assert found >= PARTS | {"data_read", "transfer"}


def test_hf_trainer_step_trace_callback(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from steptrace.integrations.transformers import StepTraceCallback
    from tests.integrations.workloads import hf_train

    callback = StepTraceCallback(scenario=SCENARIO, out=tmp_path / "traces")
    hf_train(tmp_path, callback, steps=4)
    trace = only_trace(tmp_path / "traces")
    assert callback.result is not None and callback.result.trace == str(trace)
    report = analyze_json(trace)
    assert report["scenario"]["question"] == QUESTION
    assert [s["name"] for s in report["analysis"]["steps"]] == ["ProfilerStep#2", "ProfilerStep#3"]
    for found in parts_in_every_step(report):
        assert found >= PARTS | {"data_read"}


def test_hf_trainer_records_its_loaders_workers(tmp_path: Path) -> None:
    """``dataloader_num_workers=2``: the Trainer's loader (an Accelerate shard, reading one
    batch ahead) has its workers recorded beside the trace, each step's wait joined to the
    batch the step's next fetched."""
    pytest.importorskip("transformers")
    from steptrace.integrations.transformers import StepTraceCallback
    from tests.integrations.workloads import hf_train

    callback = StepTraceCallback(scenario=SCENARIO, out=tmp_path / "traces", active=3)
    hf_train(tmp_path, callback, steps=6, workers=2)
    trace = only_trace(tmp_path / "traces")
    assert callback.result is not None
    assert callback.result.facts.loader_spans == str(folder_for(trace))
    joined = _joined_to_their_batches(analyze_json(trace), 3)
    assert [s["batch"] for s in joined] == [3, 4, 5]  # steps 2-4, each fetching the next


def test_accelerate_recipe_gives_two_steps(tmp_path: Path) -> None:
    pytest.importorskip("accelerate")
    from accelerate import Accelerator

    from steptrace.integrations.accelerate import profile_kwargs

    accelerator = Accelerator(cpu=True, kwargs_handlers=[profile_kwargs(SCENARIO, tmp_path)])
    model = torch.nn.Linear(16, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(48, 16))
    model, optimizer, loader = accelerator.prepare(
        model, optimizer, torch.utils.data.DataLoader(data, batch_size=8)
    )
    with accelerator.profile() as prof:
        for (x,) in loader:  # 6 batches: 2 more than the window needs
            accelerator.backward(model(x).sum())
            optimizer.step()
            optimizer.zero_grad()
            prof.step()
    trace = only_trace(tmp_path)
    assert trace.name.startswith("rank0.")
    report = analyze_json(trace)
    assert report["scenario"]["question"] == QUESTION
    assert len(report["analysis"]["steps"]) == 2


def test_trace_handler_files_of_a_gloo_run_are_one_job(tmp_path: Path) -> None:
    from torch.multiprocessing.spawn import start_processes

    from steptrace.capturing.ranks.distributed import free_port

    folder = tmp_path / "ranks"
    context = start_processes(
        gloo_rank, args=(str(folder), 2, free_port()), nprocs=2, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + 120
    while not context.join(timeout=1.0):
        assert time.monotonic() < deadline, "the gloo run did not finish in 120 s"
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".pt.trace.json.gz"))
    assert [n.split(".")[0] for n in names] == ["rank0", "rank1"]
    report = analyze_json(folder)
    assert report["schema"].startswith("steptrace.ranks")
    assert sorted(r["rank"] for r in report["ranks"]) == [0, 1]
