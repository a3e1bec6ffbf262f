"""``investigate`` for a LightningModule and a Hugging Face Trainer: ``workload_of`` builds a
Workload whose step the capture runs and the checks run again, from copies, outside the
framework's loop."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the frameworks run on torch")

import steptrace  # noqa: E402
from steptrace.capturing import Workload, run_workload  # noqa: E402
from steptrace.errors import CaptureError  # noqa: E402
from steptrace.investigation.subject import subject_of  # noqa: E402
from steptrace.validate import TimingPlan  # noqa: E402
from steptrace.validate.results import OutputsDiffer  # noqa: E402

pytestmark = pytest.mark.slow  # the frameworks take seconds to import
SCENARIO = steptrace.Scenario(question="Can the checks run my framework's step?", batch_size=8)


def captured_and_checked(workload: Workload, tmp_path: Path, optimizer: str) -> None:
    """The capture runs the step (torch's optimizer label inside), the user's model is
    untouched, and compare runs the same step on two copies: outputs agree, timed."""
    assert workload.model is not None
    before = [p.detach().clone() for p in workload.model.parameters()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        captured = run_workload(workload, out=tmp_path / "t.json", window=steptrace.Window())
        report = steptrace.analyze(captured.trace)
        names = {p.name for s in report.analysis.steps for p in s.phases}
        assert any(n.startswith(f"Optimizer.step#{optimizer}") for n in names), names
        subject = subject_of(workload, torch.device("cpu"))
        same = steptrace.compare(
            subject.step,
            subject.step,
            make_state=subject.make_state,
            batches=subject.batches,
            plan=TimingPlan(budget_s=3, warmup=1),
        )
    assert not isinstance(same, OutputsDiffer) and same.correctness.ok, same.sentence
    assert all(torch.equal(a, b) for a, b in zip(before, workload.model.parameters(), strict=True))


def test_a_lightning_module_is_captured_and_checked(tmp_path: Path) -> None:
    pl = pytest.importorskip("lightning.pytorch")
    from steptrace.integrations.lightning import workload_of

    class Logged(pl.LightningModule):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Linear(32, 1))

        def training_step(self, batch: Any, index: int) -> dict[str, Any]:
            loss = torch.nn.functional.mse_loss(self.net(batch[0]), batch[1])
            self.log("loss", loss)  # no trainer here: logs nothing
            return {"loss": loss}

        def configure_optimizers(self) -> dict[str, Any]:
            optimizer = torch.optim.Adam(self.parameters(), lr=1e-3)
            schedule = torch.optim.lr_scheduler.StepLR(optimizer, 1)
            return {"optimizer": optimizer, "lr_scheduler": schedule}

    torch.manual_seed(0)
    batches = [(torch.randn(8, 16), torch.randn(8, 1)) for _ in range(8)]
    captured_and_checked(workload_of(Logged(), batches, SCENARIO), tmp_path, "Adam")

    class Manual(Logged):
        automatic_optimization = False

    with pytest.raises(CaptureError, match="manual optimization"):
        workload_of(Manual(), batches, SCENARIO)


def test_a_hugging_face_trainer_is_captured_and_checked(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    from steptrace.integrations.transformers import workload_of

    config = transformers.BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=16,
        num_labels=2,
    )
    torch.manual_seed(0)
    data = [
        {"input_ids": torch.randint(0, 100, (16,)), "labels": torch.tensor(i % 2)}
        for i in range(64)
    ]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "trainer"),
        per_device_train_batch_size=8,
        gradient_accumulation_steps=2,
        max_grad_norm=1.0,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    model = transformers.BertForSequenceClassification(config)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data)
    captured_and_checked(workload_of(trainer, SCENARIO), tmp_path, "AdamW")
