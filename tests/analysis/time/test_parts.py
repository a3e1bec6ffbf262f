"""``part_of``: which part of the scenario's step a label stands for."""

from __future__ import annotations

import re

import pytest

from steptrace.analysis.time.parts import USUAL_NAMES, part_of
from steptrace.scenario import INFERENCE_STEP, TRAINING_STEP
from tests.paths import DOCS as DOC_FOLDER

DOCS = DOC_FOLDER / "findings.md"


@pytest.mark.parametrize("part", TRAINING_STEP)
@pytest.mark.parametrize(
    "write",
    [
        str,
        str.upper,
        lambda p: p.replace("_", " "),
        lambda p: p.replace("_", "-"),
        lambda p: f"## {p} ##",
        lambda p: f"[pl][profile]{p}",
    ],
)
def test_the_scenarios_own_names_count(part: str, write: object) -> None:
    """The report prints the step as data_read, transfer, ...: a label of that name counts,
    however it is cased or separated."""
    assert callable(write)
    assert part_of(write(part)) == part


def test_every_part_of_an_inference_step_is_a_training_part() -> None:
    assert set(INFERENCE_STEP) <= set(TRAINING_STEP)


@pytest.mark.parametrize(
    ("label", "part"),
    [
        ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "data_read"),
        ("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "data_read"),
        ("read_batch", "data_read"),
        ("load_batches", "data_read"),
        ("data_loading", "data_read"),
        ("[pl][profile][_TrainingEpochLoop].train_dataloader_next", "data_read"),
        ("[pl][profile][_EvaluationLoop].val_next", "data_read"),
        ("to_device", "transfer"),
        ("copy_h2d", "transfer"),
        ("[pl][profile][Strategy]SingleDeviceStrategy.batch_to_device", "transfer"),
        ("[pl][profile][LightningModule]Model.transfer_batch_to_device", "transfer"),
        ("model_forward", "forward"),
        ("DistributedDataParallel.forward", "forward"),
        ("[pl][profile][Strategy]SingleDeviceStrategy.training_step", "forward"),
        ("[pl][profile][Strategy]DDPStrategy.validation_step", "forward"),
        ("loss.backward", "backward"),
        ("[pl][profile][Strategy]SingleDeviceStrategy.backward", "backward"),
        ("Optimizer.step#AdamW.step", "optimizer_step"),
        ("[pl][profile][LightningModule]Model.optimizer_step", "optimizer_step"),
        ("optimizer.step", "optimizer_step"),
    ],
)
def test_usual_names(label: str, part: str) -> None:
    assert part_of(label) == part


@pytest.mark.parametrize(
    "label",
    [
        "train",
        "request",
        "preprocess",
        "thread_batch",  # read_batch inside a word does not count
        "forwarder",
        "readiness",
        "Optimizer.zero_grad#AdamW.zero_grad",
        "[pl][profile]run_training_batch",
        "[pl][profile]run_training_epoch",
        "training_step",  # a user's whole step, unlike Lightning's [Strategy]...training_step
    ],
)
def test_labels_that_name_no_part(label: str) -> None:
    assert part_of(label) is None


def test_a_label_of_two_parts_is_the_first_in_the_steps_order() -> None:
    assert part_of("forward_backward") == "forward"
    assert part_of("read_batch_to_device") == "data_read"


def test_the_usual_names_are_documented() -> None:
    """docs/findings.md lists, for each part, the names the code reads, as the code has them."""
    text = DOCS.read_text(encoding="utf-8")
    items = re.findall(r"^- `([a-z_]+)`: (.*?)(?=^- |^$)", text, re.M | re.S)
    listed = {part: " ".join(body.split()) for part, body in items if part in TRAINING_STEP}
    assert list(listed) == list(TRAINING_STEP)
    for part, patterns in USUAL_NAMES.items():
        for pattern in patterns:
            assert f"`{pattern}`" in listed[part], (part, pattern)
