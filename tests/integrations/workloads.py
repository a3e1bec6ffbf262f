"""Tiny framework workloads for the integration tests (each imports its framework)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch

from steptrace.capturing import trace_handler
from steptrace.scenario import Scenario

QUESTION = "Which part of my framework's step takes the time?"
SCENARIO = Scenario(question=QUESTION, batch_size=8)


# A sample at index % 8 == 5 takes 100 ms to read: worker 1's batches (of 4) come every
# 100 ms, twice a step's time even beside another test (at 30 ms, a fit beside another
# test slowed Lightning's step to the workers' pace, and they kept up).
SLOW_S, SLOW_EVERY, SLOW_AT = 0.1, 8, 5


class Pairs(torch.utils.data.Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """64 (x, y) pairs of 16 features, deterministic; with ``slow``, every eighth sample
    (``index % SLOW_EVERY == SLOW_AT``) sleeps ``SLOW_S`` (a read waiting on storage)."""

    def __init__(self, slow: bool = False) -> None:
        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(64, 16, generator=generator)
        self.y = torch.randn(64, 1, generator=generator)
        self.slow = slow

    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.slow and index % SLOW_EVERY == SLOW_AT:
            time.sleep(SLOW_S)
        return self.x[index], self.y[index]


def lightning_fit(
    root: Path,
    profiler: Any,
    steps: int = 6,
    loader: torch.utils.data.DataLoader[Any] | None = None,
) -> None:
    """Train a two-layer model ``steps`` batches with Lightning on the CPU, on ``loader``
    (64 pairs in batches of 8 when None)."""
    import lightning.pytorch as pl

    class Tiny(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(
                torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)
            )

        def training_step(self, batch: Any, index: int) -> torch.Tensor:
            x, y = batch
            return torch.nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.01)

    trainer = pl.Trainer(
        max_steps=steps,
        profiler=profiler,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(root),
    )
    trainer.fit(Tiny(), loader or torch.utils.data.DataLoader(Pairs(), batch_size=8))


class Tokens(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    """Random token ids of 16 with a binary label: deterministic per index; with ``slow``,
    every eighth sample sleeps ``SLOW_S``, as ``Pairs``'."""

    def __init__(self, slow: bool = False) -> None:
        self.slow = slow

    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if self.slow and index % SLOW_EVERY == SLOW_AT:
            time.sleep(SLOW_S)
        generator = torch.Generator().manual_seed(index)
        ids = torch.randint(0, 100, (16,), generator=generator)
        return {"input_ids": ids, "labels": torch.tensor(index % 2)}


def hf_train(root: Path, callback: Any, steps: int = 4, workers: int = 0) -> None:
    """Train a tiny BertForSequenceClassification (built from a config) ``steps`` steps;
    with ``workers``, the Trainer's loader has that many, and its samples are ``slow``."""
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    config = BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
        num_labels=2,
    )
    args = TrainingArguments(
        output_dir=str(root / "hf"),
        max_steps=steps,
        per_device_train_batch_size=8,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
        dataloader_num_workers=workers,
    )
    model = BertForSequenceClassification(config)
    data = Tokens(slow=workers > 0)
    Trainer(model=model, args=args, train_dataset=data, callbacks=[callback]).train()


def gloo_rank(rank: int, folder: str, world_size: int, port: int) -> None:
    """One rank of a gloo run: an explicit all-reduce each step, traced by trace_handler."""
    import torch.distributed as dist
    from torch.profiler import profile, schedule

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        model = torch.nn.Linear(16, 4)
        handler = trace_handler(folder, scenario=SCENARIO)
        with profile(
            schedule=schedule(wait=1, warmup=1, active=2, repeat=1), on_trace_ready=handler
        ) as prof:
            for _ in range(4):
                model(torch.randn(8, 16)).sum().backward()
                for parameter in model.parameters():
                    assert parameter.grad is not None
                    dist.all_reduce(parameter.grad)
                prof.step()
    finally:
        dist.destroy_process_group()
