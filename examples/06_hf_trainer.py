"""A Hugging Face ``Trainer`` run profiled with ``StepTraceCallback``; no download.

A tiny BERT classifier is built from a ``BertConfig`` (random weights) and trained four
optimizer steps on random token ids; the callback waits one step, warms up one and
records two, labelling ``forward``, ``backward`` (with gradient clipping) and
``optimizer_step``.

    python examples/06_hf_trainer.py [OUTPUT_FOLDER]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

import steptrace
from steptrace.integrations.transformers import StepTraceCallback

LENGTH, BATCH = 32, 8


class RandomTokens(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    def __len__(self) -> int:
        return BATCH * 8

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        generator = torch.Generator().manual_seed(index)
        ids = torch.randint(0, 1000, (LENGTH,), generator=generator)
        return {"input_ids": ids, "labels": torch.tensor(index % 2)}


def main(folder: Path) -> None:
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=1000,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=LENGTH,
        num_labels=2,
    )
    scenario = steptrace.Scenario(
        question="Is the BERT step dominated by the backward pass?",
        batch_size=BATCH,
        sequence_length=LENGTH,
        data_origin="random token ids in memory",
        simplifications="a two-layer BERT from a config, random weights, one CPU process",
    )
    callback = StepTraceCallback(scenario=scenario, out=folder, wait=1, warmup=1, active=2)
    args = TrainingArguments(
        output_dir=str(folder / "trainer"),
        max_steps=4,
        per_device_train_batch_size=BATCH,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    model = BertForSequenceClassification(config)
    Trainer(model=model, args=args, train_dataset=RandomTokens(), callbacks=[callback]).train()
    if callback.result is None:
        raise SystemExit("no trace was written (see the warning above)")
    report = steptrace.analyze(callback.result.trace)
    print(f"trace: {callback.result.trace}")
    print(f"question: {report.scenario.question if report.scenario else None}")
    for step in report.analysis.steps:
        said = ", ".join(f"{p.name} {p.exclusive_ms:.2f}" for p in step.phases if p.part)
        print(f"{step.name}: {step.wall_ms:.2f} ms — {said}")
    if report.throughput is not None and report.throughput.tokens_per_s is not None:
        print(f"throughput: {report.throughput.tokens_per_s:,.0f} tokens/s")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-out"))
