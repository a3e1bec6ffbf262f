"""Real torch.profiler captures on the CPU: labels, scenario, refusals, state, timings."""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="capture needs torch (installed by make test)")

import steptrace  # noqa: E402
from steptrace.capturing import CaptureResult  # noqa: E402
from steptrace.errors import CaptureError, CaptureWarning  # noqa: E402
from steptrace.scenario import sidecar_path  # noqa: E402
from tests import workloads  # noqa: E402
from tests.conftest import read_json  # noqa: E402
from tests.trace.read.test_split import split_or_none  # noqa: E402

LABELS = ["read_batch", "transfer", "train", "forward", "backward", "optimizer_step"]


def train(tmp_path: Path, **window: object) -> CaptureResult:
    """A tiny training capture; ``window``: the ``Window``'s fields (its defaults else)."""
    work = workloads.tiny_training()
    return steptrace.profile_training(
        work.model,
        work.optimizer,
        work.loss_fn,
        work.loader,
        scenario=work.scenario,
        out=tmp_path / "trace.json",
        window=steptrace.Window(**window),  # type: ignore[arg-type]
    )


def test_training_window_has_steps_and_labels(tmp_path: Path) -> None:
    result = train(tmp_path, active=3)
    analysis = steptrace.analyze(result.trace).analysis
    assert [s.name for s in analysis.steps] == [
        "ProfilerStep#2",
        "ProfilerStep#3",
        "ProfilerStep#4",
    ]
    for step in analysis.steps:
        names = [p.name for p in step.phases]
        assert [n for n in names if n in LABELS] == LABELS
    assert len(result.facts.profiled_step_ms) == 3
    assert len(result.facts.cold_start_ms) == 1  # timed apart, before the profiler
    assert not result.facts.gpu_requested and not result.facts.gpu_observed


def test_scenario_round_trips_through_trace_and_sidecar(tmp_path: Path) -> None:
    result = train(tmp_path)
    expected = workloads.training_scenario().to_dict()
    sidecar = json.loads(Path(result.facts.sidecar).read_text())
    assert sidecar["scenario"] == expected
    assert sidecar["capture"]["cold_start_ms"] == list(result.facts.cold_start_ms)
    assert read_json(Path(result.trace))["steptrace"]["scenario"] == expected
    # steptrace's own block does not push its traces off the one-pass decode
    assert split_or_none(Path(result.trace).read_bytes(), 1 << 12) is not None
    from_sidecar = steptrace.analyze(result.trace)
    assert from_sidecar.scenario is not None and from_sidecar.scenario.to_dict() == expected
    Path(result.facts.sidecar).unlink()  # the trace alone still carries its question
    from_trace = steptrace.analyze(result.trace)
    assert from_trace.scenario is not None and from_trace.scenario.to_dict() == expected


def test_dataloader_with_two_workers(tmp_path: Path) -> None:
    work = workloads.tiny_training()
    result = steptrace.profile_training(
        work.model,
        work.optimizer,
        work.loss_fn,
        workloads.tiny_loader(num_workers=2),
        scenario=work.scenario,
        out=tmp_path / "nw2.json",
    )
    phases = {p.name for s in steptrace.analyze(result.trace).analysis.steps for p in s.phases}
    assert "read_batch" in phases
    assert any("_MultiProcessingDataLoaderIter.__next__" in p for p in phases)


def state_of(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    tensors = [t.detach().clone() for t in model.state_dict().values()]
    for state in optimizer.state_dict()["state"].values():
        tensors += [v.clone() for v in state.values() if isinstance(v, torch.Tensor)]
    return tensors


def test_user_state_is_restored_bit_exactly(tmp_path: Path) -> None:
    work = workloads.tiny_training()
    model, optimizer = work.model, work.optimizer
    assert model is not None and optimizer is not None
    # give the optimizer some state first, as a user's session would have
    loss = work.loss_fn(model(torch.randn(4, workloads.FEATURES)), torch.tensor([0, 1, 2, 3]))  # type: ignore[misc]
    loss.backward()
    optimizer.step()
    before = state_of(model, optimizer)
    torch.manual_seed(123)
    random.seed(5)
    np.random.seed(9)
    rng = (torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy())
    steptrace.profile_training(
        model,
        optimizer,
        work.loss_fn,
        work.loader,
        scenario=work.scenario,
        out=tmp_path / "t.json",
        window=steptrace.Window(measure_overhead=True, count_flops=True),
    )
    after = state_of(model, optimizer)
    assert len(before) == len(after)
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert torch.equal(torch.get_rng_state(), rng[0])
    assert random.getstate() == rng[1]
    assert (np.random.get_state()[1] == rng[2]).all()
    assert model.training


def test_restore_state_false_keeps_the_updates(tmp_path: Path) -> None:
    work = workloads.tiny_training()
    assert work.model is not None and work.optimizer is not None
    before = state_of(work.model, work.optimizer)
    steptrace.profile_training(
        work.model,
        work.optimizer,
        work.loss_fn,
        work.loader,
        scenario=work.scenario,
        out=tmp_path / "t.json",
        restore_state=False,
    )
    after = [t.detach() for t in work.model.state_dict().values()]
    assert not all(torch.equal(a, b) for a, b in zip(before, after, strict=False))


def test_an_existing_trace_is_never_overwritten(tmp_path: Path) -> None:
    existing = tmp_path / "trace.json"
    existing.write_text("precious")
    with pytest.raises(CaptureError, match=f"{existing} exists already"):
        train(tmp_path)
    assert existing.read_text() == "precious"
    assert not sidecar_path(existing).exists()


def test_an_existing_sidecar_is_never_overwritten(tmp_path: Path) -> None:
    sidecar = sidecar_path(tmp_path / "trace.json")
    sidecar.write_text("{}")
    with pytest.raises(CaptureError, match="exists already"):
        train(tmp_path)
    assert sidecar.read_text() == "{}"
    assert not (tmp_path / "trace.json").exists()


def test_a_short_loader_is_refused_before_anything_runs(tmp_path: Path) -> None:
    work = workloads.tiny_training()
    assert work.model is not None
    calls = []
    work.model.register_forward_hook(lambda *_: calls.append(1))
    with pytest.raises(CaptureError, match=r"yields 3 batches.*need 5"):
        steptrace.profile_training(
            work.model,
            work.optimizer,
            work.loss_fn,
            workloads.tiny_loader(batches=3),  # type: ignore[arg-type]
            scenario=work.scenario,
            out=tmp_path / "t.json",
        )
    assert calls == []
    assert list(tmp_path.iterdir()) == []


def test_an_iterable_that_runs_out_is_a_clear_error(tmp_path: Path) -> None:
    work = workloads.tiny_training()
    batches = iter(list(workloads.tiny_loader(batches=3)))  # no len(): found out while running
    with pytest.raises(CaptureError, match="ran out after 3 batches; 5 are needed"):
        steptrace.profile_training(
            work.model,
            work.optimizer,
            work.loss_fn,
            batches,  # type: ignore[arg-type]
            scenario=work.scenario,
            out=tmp_path / "t.json",
        )
    assert list(tmp_path.iterdir()) == []  # the placeholder files were removed


def test_cuda_requested_on_a_cpu_build_is_refused(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the refusal cannot be shown here")
    work = workloads.tiny_training()
    with pytest.raises(CaptureError, match="sees no GPU"):
        steptrace.profile_training(
            work.model,
            work.optimizer,
            work.loss_fn,
            work.loader,  # type: ignore[arg-type]
            scenario=workloads.training_scenario(device="cuda"),
            out=tmp_path / "t.json",
        )
    assert list(tmp_path.iterdir()) == []


def hodges_lehmann(logs: list[float]) -> float:
    """The median of the pairwise means (i <= j), from the definition."""
    means = [(logs[i] + logs[j]) / 2 for i in range(len(logs)) for j in range(i, len(logs))]
    return math.exp(statistics.median(means))


def test_overhead_and_flops(tmp_path: Path) -> None:
    result = train(tmp_path, active=3, measure_overhead=True, count_flops=True)
    cost = result.facts.overhead
    assert cost is not None and result.facts.unprofiled_step_ms == cost.bare_ms
    # profiled and bare blocks interleaved, in both orders, the same number of steps each
    assert set(cost.order) <= {"PB", "BP"} and len(cost.order) >= 6
    assert len(cost.profiled_ms) == len(cost.bare_ms) == len(cost.order) * cost.block_steps
    size = cost.block_steps
    logs = [
        math.log(
            statistics.median(cost.profiled_ms[k : k + size])
            / statistics.median(cost.bare_ms[k : k + size])
        )
        for k in range(0, len(cost.bare_ms), size)
    ]
    assert result.facts.overhead_ratio == cost.ratio == pytest.approx(hodges_lehmann(logs))
    assert cost.ci[0] <= cost.ratio <= cost.ci[1]
    b, f, h, c = workloads.BATCH, workloads.FEATURES, workloads.HIDDEN, workloads.CLASSES
    # each Linear: forward 2*B*in*out; backward: input grad + weight grad, twice that.
    # The first layer's input needs no grad: its backward is the weight grad alone.
    expected = 2 * b * f * h * 2 + 2 * b * h * c * 3
    assert result.facts.flops_per_step == expected
    assert result.facts.mfu is None and result.facts.peak_tflops is None  # no peak known for a CPU
    assert result.facts.achieved_tflops == pytest.approx(
        expected / (np.median(result.facts.unprofiled_step_ms) / 1000) / 1e12
    )


def test_costly_options_are_recorded_and_warned(tmp_path: Path) -> None:
    with pytest.warns(CaptureWarning, match="record_shapes was on"):
        result = train(tmp_path, record_shapes=True)
    assert result.facts.window is not None and result.facts.window.record_shapes
    text = json.dumps(steptrace.analyze(result.trace).analysis.trace.options)
    assert "record_shapes" in text


def test_custom_loop_capture(tmp_path: Path) -> None:
    work = workloads.tiny_training()
    model, optimizer = work.model, work.optimizer
    assert model is not None and optimizer is not None
    scenario = workloads.training_scenario()
    with steptrace.capture(
        scenario, out=tmp_path / "custom.json", window=steptrace.Window(active=2)
    ) as window:
        for x, y in work.loader:  # type: ignore[union-attr]
            with window.phase("my_forward"):
                loss = work.loss_fn(model(x), y)  # type: ignore[misc]
            loss.backward()
            optimizer.step()
            window.step()
            if window.done:
                break
    assert window.result is not None
    report = steptrace.analyze(window.result.trace)
    assert len(report.analysis.steps) == 2
    assert all("my_forward" in [p.name for p in s.phases] for s in report.analysis.steps)
    assert report.scenario is not None and report.scenario.question == scenario.question


def test_a_custom_loop_that_stops_early_is_an_error(tmp_path: Path) -> None:
    with (
        pytest.raises(CaptureError, match="ran 1 of the 4 scheduled steps"),
        steptrace.capture(workloads.training_scenario(), out=tmp_path / "t.json") as window,
    ):
        window.step()
    assert list(tmp_path.iterdir()) == []


def test_inference_keeps_model_load_apart(tmp_path: Path) -> None:
    work = workloads.tiny_inference()
    result = steptrace.profile_inference(
        work.load_model,
        work.request,
        work.inputs,  # type: ignore[arg-type]
        scenario=work.scenario,
        out=tmp_path / "infer.json",
    )
    assert result.facts.model_load_ms is not None and result.facts.model_load_ms > 0
    assert len(result.facts.cold_start_ms) == 1 and result.facts.warnings == ()
    analysis = steptrace.analyze(result.trace).analysis
    assert len(analysis.steps) == 2
    assert all(s.phases[0].name == "request" for s in analysis.steps)


def test_inference_in_training_mode_with_autograd_is_reported(tmp_path: Path) -> None:
    def request(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        return model(x)  # no inference_mode, and the model was left in train()

    with pytest.warns(CaptureWarning) as caught:
        result = steptrace.profile_inference(
            workloads.tiny_model,
            request,
            [torch.randn(2, workloads.FEATURES)] * 5,
            scenario=steptrace.Scenario(question="q", kind="inference"),
            out=tmp_path / "i.json",
        )
    messages = " ".join(str(w.message) for w in caught)
    assert "training mode" in messages and "autograd" in messages
    assert len(result.facts.warnings) == 2


def test_wrong_kind_is_refused(tmp_path: Path) -> None:
    work = workloads.tiny_training()
    with pytest.raises(CaptureError, match="needs a training scenario"):
        steptrace.profile_training(
            work.model,
            work.optimizer,
            work.loss_fn,
            work.loader,  # type: ignore[arg-type]
            scenario=steptrace.Scenario(question="q", kind="inference"),
            out=tmp_path / "t.json",
        )


def test_state_is_restored_even_when_the_loop_fails(tmp_path: Path) -> None:
    work = workloads.tiny_training()
    assert work.model is not None and work.optimizer is not None
    before = state_of(work.model, work.optimizer)
    batches = iter(list(workloads.tiny_loader(batches=4)))  # runs out inside the window
    with pytest.raises(CaptureError, match="ran out"):
        steptrace.profile_training(
            work.model,
            work.optimizer,
            work.loss_fn,
            batches,  # type: ignore[arg-type]
            scenario=work.scenario,
            out=tmp_path / "t.json",
        )
    after = state_of(work.model, work.optimizer)
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_a_profiler_that_fails_to_start_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: object) -> None:
        raise RuntimeError("CUPTI initialization failed")

    monkeypatch.setattr(torch.profiler.profile, "__enter__", broken)
    with (
        pytest.raises(RuntimeError, match="CUPTI"),
        steptrace.capture(workloads.training_scenario(), out=tmp_path / "t.json"),
    ):
        pass
    assert list(tmp_path.iterdir()) == []


def test_window_files_for_repeats() -> None:
    from steptrace.capturing.files import cycle_path

    assert cycle_path(Path("run/trace.json.gz"), 1) == Path("run/trace-2.json.gz")
    assert cycle_path(Path("run/trace.json"), 2) == Path("run/trace-3.json")
    assert cycle_path(Path("run/trace"), 1) == Path("run/trace-2")
    assert cycle_path(Path("run/trace"), 0) == Path("run/trace")


def test_repeat_writes_one_trace_per_window(tmp_path: Path) -> None:
    result = train(tmp_path, active=1, repeat=2)
    assert [Path(t).name for t in result.facts.traces] == ["trace.json", "trace-2.json"]
    assert all(len(steptrace.analyze(t).analysis.steps) == 1 for t in result.facts.traces)


def test_batches_as_namedtuples_and_mappings_move_to_the_device() -> None:
    from collections import namedtuple

    from steptrace.devices import to_device

    pair = namedtuple("pair", "x y")
    batch = pair(torch.ones(2), {"mask": torch.zeros(3, dtype=torch.bool), "id": 7})
    moved = to_device(batch, torch.device("meta"))  # a device other than the CPU, on any machine
    assert type(moved) is pair and type(moved.y) is dict
    assert moved.x.device.type == "meta" and moved.x.shape == (2,)
    assert moved.y["mask"].device.type == "meta" and moved.y["mask"].dtype == torch.bool
    assert moved.y["id"] == 7 and batch.x.device.type == "cpu"  # the original is untouched


def test_training_only_measurements_asked_of_inference_are_said_to_be_skipped(
    tmp_path: Path,
) -> None:
    work = workloads.tiny_inference()
    with pytest.warns(CaptureWarning, match="measure_overhead is for training"):
        result = steptrace.profile_inference(
            work.load_model,
            work.request,
            work.inputs,  # type: ignore[arg-type]
            scenario=work.scenario,
            out=tmp_path / "i.json",
            window=steptrace.Window(measure_overhead=True),
        )
    assert result.facts.overhead_ratio is None
