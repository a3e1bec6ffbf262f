"""Findings on real CPU captures (torch.profiler, torch 2.13): each rule changed here fires on
a workload where it must, and stays silent on one where it must not.

The expected figures are worked out from the workload (which mode, which labels) or read
from the trace itself, never copied from a report.
"""

from __future__ import annotations

import contextlib
import importlib.util
import statistics
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import steptrace
from steptrace.capturing import CaptureResult
from steptrace.cli import app
from steptrace.errors import CaptureWarning
from steptrace.hypotheses import Finding
from tests import reference
from tests.paths import EXAMPLES

torch = pytest.importorskip("torch", reason="capture tests need torch (installed by make test)")
nn = torch.nn

INFERENCE = steptrace.Scenario(question="How long does one request take?", kind="inference")
MODES: dict[str, Callable[[], contextlib.AbstractContextManager[Any]]] = {
    "grad": torch.enable_grad,
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
}


class Bertish(nn.Module):
    """A BERT-like encoder: embeddings, one transformer layer, dropout, a classifier head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.encoder = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True)
        self.dropout = nn.Dropout(0.1)
        self.head = nn.Linear(32, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.dropout(self.encoder(self.embed(ids)))[:, 0])


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """One intra-op thread: on a shared, loaded machine, two threads make a tiny matmul
    wait on its barrier for milliseconds, and the workloads' proportions with it."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def bertish(train: bool = False) -> Callable[[], nn.Module]:
    def load() -> nn.Module:
        torch.manual_seed(0)
        return Bertish().train(train)

    return load


def serve(tmp_path: Path, mode: str, *, train: bool = False) -> steptrace.Report:
    """Requests to the BERT-like model under ``mode``; the model in eval mode unless told."""

    def request(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
        with MODES[mode]():
            return model(ids).softmax(-1)

    inputs = [torch.randint(0, 100, (4, 16)) for _ in range(5)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureWarning)  # the harness warns of these modes too
        result = steptrace.profile_inference(
            bertish(train), request, inputs, scenario=INFERENCE, out=tmp_path / f"{mode}.json"
        )
    return steptrace.analyze(result.trace)


def by_rule(report: steptrace.Report) -> dict[str, Finding]:
    return {f.rule: f for f in report.findings}


def operator_names(trace: str | Path) -> set[str]:
    evs = reference.events(reference.read_exact(Path(trace)))
    return {e.name for e in evs if reference.is_cpu_op(e)}


# -- inference-autograd: grad, no_grad and inference_mode ------------------------------------
@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_an_eval_model_without_grad_gets_no_inference_autograd(tmp_path: Path, mode: str) -> None:
    report = serve(tmp_path, mode)
    # the harness still moves each batch in grad mode, and eval dropout still dispatches
    # aten::dropout: neither is the user's request in the wrong mode
    evs = reference.events(reference.read_exact(Path(report.analysis.trace.path)))
    recorded = [e.name for e in evs if "Sequence number" in (e.raw.get("args") or {})]
    assert recorded and set(recorded) <= {"aten::to", "aten::_to_copy", "aten::copy_"}
    assert "aten::dropout" in operator_names(report.analysis.trace.path)
    assert "inference-autograd" not in by_rule(report)


def test_the_same_model_with_grad_on_gets_inference_autograd(tmp_path: Path) -> None:
    report = serve(tmp_path, "grad")
    found = by_rule(report)["inference-autograd"]
    values = found.evidence.values()
    evs = reference.events(reference.read_exact(Path(report.analysis.trace.path)))
    forward = [e for e in evs if reference.is_label(e) and e.name == "forward"]
    recorded = sum(
        1
        for e in evs
        if "Sequence number" in (e.raw.get("args") or {})
        and any(f.start <= e.start < f.end for f in forward)
    )
    assert values["grad_recording_operators"] == recorded > 0
    assert values["training_only_operators"] == ()  # eval mode: its dropout is a no-op
    assert "grad mode was on (neither torch.no_grad nor torch.inference_mode)" in found.observation
    assert found.level == "low"  # what recording costs is not measured: no time is claimed


def test_a_model_left_in_training_mode_is_named_by_its_dropout_masks(tmp_path: Path) -> None:
    report = serve(tmp_path, "inference_mode", train=True)
    found = by_rule(report)["inference-autograd"]
    assert found.evidence.values()["grad_recording_operators"] == 0
    assert "aten::bernoulli_" in found.evidence.values()["training_only_operators"]  # type: ignore[operator]
    assert "aten::bernoulli_" in operator_names(report.analysis.trace.path)


def test_the_inference_example_gets_no_inference_autograd(tmp_path: Path) -> None:
    """examples/03_inference.py: an eval MLP under inference_mode, served correctly."""
    spec = importlib.util.spec_from_file_location("inference_example", EXAMPLES / "03_inference.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    inputs = [torch.randn(8, 128) for _ in range(5)]
    result = steptrace.profile_inference(
        example.load_model,
        example.request,
        inputs,
        scenario=INFERENCE,
        out=tmp_path / "example.json",
    )
    report = steptrace.analyze(result.trace)
    assert "inference-autograd" not in by_rule(report)
    assert {p.name: p.part for p in report.analysis.steps[0].phases} == {
        "request": None,
        "transfer": "transfer",
        "forward": "forward",
    }


# -- profiler-distortion on a compute-bound CPU step -----------------------------------------
def conv_net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 10),
    )


def train_conv(tmp_path: Path, **window: Any) -> tuple[CaptureResult, dict[str, Finding]]:
    model = conv_net()
    generator = torch.Generator().manual_seed(1)
    batches = [
        (torch.randn(16, 3, 32, 32, generator=generator), torch.randint(0, 10, (16,)))
        for _ in range(8)
    ]
    scenario = steptrace.Scenario(question="Where does a conv step go?", batch_size=16)
    result = steptrace.profile_training(
        model,
        torch.optim.SGD(model.parameters(), lr=0.01),
        nn.functional.cross_entropy,
        batches,
        scenario=scenario,
        out=tmp_path / "conv.json",
        window=steptrace.Window(**window),
    )
    return result, by_rule(steptrace.analyze(result.trace))


def test_a_compute_bound_conv_net_gets_no_high_profiler_distortion(tmp_path: Path) -> None:
    result, found = train_conv(tmp_path)
    assert result.facts.overhead_ratio is None  # not measured
    assert "profiler-distortion" not in found  # not measured: a line of context at most
    assert all(f.severity <= 1 for f in found.values())


def test_a_measured_profiler_distortion_is_ranked_by_the_measure(tmp_path: Path) -> None:
    result, found = train_conv(tmp_path, measure_overhead=True)
    ratio = result.facts.overhead_ratio
    assert ratio is not None
    distortion = found.get("profiler-distortion")
    if ratio < steptrace.Thresholds().overhead_ratio:
        assert distortion is None  # the measure decides, however short the operators
    else:
        assert distortion is not None
        assert distortion.severity == pytest.approx(1 - 1 / ratio)


# -- input-pipeline: the labels the user gave ----------------------------------------------
def read_heavy(tmp_path: Path, label: str) -> steptrace.Report:
    """A custom loop whose reading (many small tensors built one by one, then stacked) is
    labelled ``label`` and dwarfs a tiny model's step."""
    model = nn.Linear(3 * 8 * 8, 4)
    scenario = steptrace.Scenario(question="Does the step wait for data?", batch_size=64)
    with steptrace.capture(scenario, out=tmp_path / "read.json") as run:
        for _ in range(run.total_steps):
            with run.phase(label):
                batch = torch.stack([torch.randn(3, 8, 8).flip(-1) * 0.5 for _ in range(64)])
            with run.phase("train"):
                model(batch.flatten(1)).sum().backward()
            run.step()
    assert run.result is not None
    return steptrace.analyze(run.result.trace)


@pytest.mark.parametrize(
    "label",
    ["read_batch", "data_read", "[pl][profile][_TrainingEpochLoop].train_dataloader_next"],
)
def test_labels_the_user_gave_fire_input_pipeline(tmp_path: Path, label: str) -> None:
    report = read_heavy(tmp_path, label)
    steps = report.analysis.steps
    shares = [next(p.inclusive_ms for p in s.phases if p.name == label) / s.wall_ms for s in steps]
    # the workload reads for more than the threshold in the median step, as the rule reads
    # it (one step preempted in its training part on a loaded machine read 9%)
    assert statistics.median(shares) >= 0.1
    found = by_rule(report)["input-pipeline"]
    assert found.evidence.values()["labels"] == (label,)
    assert f"(labels read as data_read: {label})" in found.observation


def test_a_label_that_names_no_part_does_not_count_as_reading(tmp_path: Path) -> None:
    report = read_heavy(tmp_path, "make_inputs")
    assert all(s.reading is None for s in report.analysis.steps)
    assert "input-pipeline" not in by_rule(report)


def test_the_report_says_which_label_was_read_as_which_part(tmp_path: Path) -> None:
    report = read_heavy(tmp_path, "data_read")
    out = CliRunner().invoke(app, ["analyze", report.analysis.trace.path, "--format", "md"])
    assert out.exit_code == 0, out.output
    cells = [
        [c.strip(" `").replace("\\", "") for c in line.split("|")[1:3]]
        for line in out.stdout.splitlines()
        if line.startswith("| `")
    ]
    assert ["data_read", "data_read"] in cells  # label, read as
    assert ["train", "—"] in cells


# -- unrecorded-time: Python work no operator records --------------------------------------
def with_python_work(tmp_path: Path, rounds: int) -> steptrace.Report:
    """A small model's training step beside ``rounds`` of pure-Python work per step, in a
    ``metrics`` label (as a loop that computes its metrics on Python lists would)."""
    model = nn.Linear(64, 4)
    batch = torch.randn(32, 64)
    scenario = steptrace.Scenario(question="Where does the step go?", batch_size=32)
    with steptrace.capture(scenario, out=tmp_path / f"python{rounds}.json") as run:
        for _ in range(run.total_steps):
            with run.phase("train"):
                model(batch).sum().backward()
            with run.phase("metrics"):
                total = 0
                for i in range(rounds):
                    total = (total * 31 + i) % 1_000_003
            run.step()
    assert run.result is not None
    return steptrace.analyze(run.result.trace)


def unrecorded_shares(report: steptrace.Report) -> list[float]:
    """Each complete step's share in silences, from the raw JSON (``reference``)."""
    evs = reference.events(reference.read_exact(Path(report.analysis.trace.path)))
    windows = reference.step_windows(evs)
    silent = reference.silences(evs, windows)
    partial = {s.name for s in report.analysis.steps if s.partial}
    return [
        reference.unrecorded_ns(silent, lo, hi) / (hi - lo)
        for name, lo, hi in windows
        if name not in partial
    ]


def test_python_work_between_operators_is_unrecorded_time(tmp_path: Path) -> None:
    report = with_python_work(tmp_path, 200_000)  # ~20 ms of Python beside a ~0.2 ms step
    shares = unrecorded_shares(report)
    assert statistics.median(shares) >= 0.5  # the premise, read from the trace
    found = by_rule(report)["unrecorded-time"]
    assert found.severity == pytest.approx(statistics.median(shares), abs=1e-6)
    assert found.evidence.values()["labels"][0] == "metrics"
    assert report.verdict.top[0].rule == "unrecorded-time"


def test_a_step_of_operators_has_no_unrecorded_time_finding(tmp_path: Path) -> None:
    _, found = train_conv(tmp_path)
    assert "unrecorded-time" not in found
    report = with_python_work(tmp_path, 0)
    assert statistics.median(unrecorded_shares(report)) < 0.5
    assert "unrecorded-time" not in by_rule(report)
