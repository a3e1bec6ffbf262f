"""``profile_training`` on the batches people have: pairs, Hugging Face dicts, custom
objects with ``split_batch``; a batch it cannot split is one line, before any step runs."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="capture needs torch")

import steptrace  # noqa: E402
from steptrace.capturing import CaptureResult  # noqa: E402
from steptrace.capturing.batches import split_batch  # noqa: E402
from steptrace.errors import CaptureError  # noqa: E402
from tests.paths import REPO  # noqa: E402

VOCAB, LENGTH, CLASSES = 50, 12, 3


class TokenClassifier(torch.nn.Module):
    """Keyword inputs, as Hugging Face models take them."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = torch.nn.Embedding(VOCAB, 16)
        self.head = torch.nn.Linear(16, CLASSES)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        mask = attention_mask.unsqueeze(-1)
        pooled = (self.embedding(input_ids) * mask).sum(1) / mask.sum(1)
        result: torch.Tensor = self.head(pooled)
        return result


def _dicts(count: int = 64) -> list[dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    return [
        {
            "input_ids": torch.randint(0, VOCAB, (LENGTH,), generator=generator),
            "attention_mask": torch.ones(LENGTH),
            "labels": torch.tensor(i % CLASSES),
        }
        for i in range(count)
    ]


def _capture(tmp_path: Path, loader: object, **options: object) -> CaptureResult:
    model = TokenClassifier()
    return steptrace.profile_training(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        torch.nn.functional.cross_entropy,
        loader,
        scenario=steptrace.Scenario(question="Does a dict batch work?"),
        out=tmp_path / "t.json",
        **options,
    )


def test_hugging_face_dict_batches_train_with_labels_as_the_target(tmp_path: Path) -> None:
    loader = torch.utils.data.DataLoader(_dicts(), batch_size=8)
    result = _capture(tmp_path, loader)
    assert result.facts.observed is not None
    assert result.facts.observed.input_shape == (8, LENGTH)  # the first input tensor
    report = steptrace.analyze(result.trace)
    assert report.analysis.summary.count >= 2
    names = {p.name for s in report.analysis.steps for p in s.phases}
    assert {"forward", "backward", "optimizer_step"} <= names


@dataclass
class Batch:
    tokens: torch.Tensor
    mask: torch.Tensor
    answer: torch.Tensor


def test_a_custom_batch_object_trains_through_split_batch(tmp_path: Path) -> None:
    batches = [
        Batch(
            d["input_ids"][None].repeat(4, 1),
            torch.ones(4, LENGTH),
            torch.full((4,), int(d["labels"])),
        )
        for d in _dicts(12)
    ]
    seen: list[Batch] = []

    def split(batch: Batch) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        seen.append(batch)
        return {"input_ids": batch.tokens, "attention_mask": batch.mask}, batch.answer

    result = _capture(tmp_path, batches, split_batch=split)
    assert steptrace.analyze(result.trace).analysis.summary.count >= 2
    assert seen and all(isinstance(b, Batch) for b in seen)


def test_a_batch_that_cannot_be_split_is_one_line_before_any_step(tmp_path: Path) -> None:
    batches = [
        Batch(
            torch.zeros(4, LENGTH, dtype=torch.long),
            torch.ones(4, LENGTH),
            torch.zeros(4, dtype=torch.long),
        )
    ] * 12
    with pytest.raises(CaptureError, match="pass split_batch=") as caught:
        _capture(tmp_path, batches)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "t.json").exists()  # refused before the window: nothing written


def test_the_default_split_of_pairs_dicts_and_others() -> None:
    x, y = torch.zeros(2), torch.ones(2)
    assert split_batch((x, y)) == (x, y) and split_batch([x, y]) == (x, y)
    inputs, target = split_batch({"input_ids": x, "label": y})
    assert target is y and list(inputs) == ["input_ids"]
    with pytest.raises(CaptureError, match="has no target"):
        split_batch({"input_ids": x})
    with pytest.raises(CaptureError, match="a tuple of 3"):
        split_batch((x, y, x))


def test_make_says_what_it_installs_before_the_long_install() -> None:
    """A fresh clone's first ``make demo`` says what it installs and that it takes a while,
    and pip's own lines show progress (not ``-q``) during the long install."""
    root = REPO
    plan = subprocess.run(
        ["make", "-n", "demo", "VENV=/nonexistent/venv"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    lines = plan.splitlines()
    said = next(i for i, line in enumerate(lines) if "takes a minute or two" in line)
    install = next(i for i, line in enumerate(lines) if "install" in line and ".[dev]" in line)
    assert said < install and " -q " not in lines[install]
    assert "torch==" in plan.split("takes a minute or two")[0]  # what is installed, named
