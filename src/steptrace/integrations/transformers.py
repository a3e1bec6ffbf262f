"""``StepTraceCallback``: a Hugging Face ``TrainerCallback`` recording one steptrace window.

    trainer = transformers.Trainer(
        model=model, args=args, train_dataset=data,
        callbacks=[StepTraceCallback(scenario=scenario, out="traces")],
    )

The step is one optimizer step of the Trainer (all its gradient-accumulation micro-batches):
a steptrace ``Capture`` (``steptrace.capturing.session``) opens at train begin, its step
boundary is each ``on_step_end``, and after ``wait`` + ``warmup`` + ``active`` steps it
closes and writes ``<out>/rank<R>.<time_ns>.pt.trace.json.gz`` with the scenario embedded
and its ``.scenario.json`` sidecar (R: the process index). What the callbacks and the
model's hooks can see is labelled, with the names steptrace reads as step parts:
``forward`` (the model's forward while it is training: the loss too when the model
computes it), ``backward`` from the forward's end to the optimizer step (with gradient
clipping inside when ``max_grad_norm`` > 0, then labelled ``backward + clip_grad_norm``),
``optimizer_step``; reading the batch is torch's own ``enumerate(DataLoader)`` label.
Moving the batch to the device happens inside the Trainer, before the forward, unlabelled.
A training loader with workers (``dataloader_num_workers``) has them recorded beside the
trace while the window is open (``capturing.loader_spans``: ``<trace>.workers/``), so that
the report says which worker and which samples a step waited for.
The main process records (``state.is_world_process_zero``); ``per_rank=True`` records
every process, one file each. A run shorter than the window keeps what completed, with a
``CaptureWarning``; a window with no complete active step writes nothing and warns.

``workload_of(trainer, scenario)`` makes a ``Workload`` of a ``Trainer`` (its model,
optimizer, loader and micro-batch step) for ``steptrace investigate``, whose checks run
that step outside the Trainer.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from torch.nn.utils import clip_grad_norm_
from torch.profiler import record_function
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from steptrace.capturing.handler import free_trace_path, worker_label
from steptrace.capturing.loader_spans import LoaderSpans, folder_for
from steptrace.capturing.result import CaptureResult
from steptrace.capturing.session import Capture
from steptrace.capturing.workload import Workload
from steptrace.errors import CaptureError, CaptureWarning
from steptrace.scenario import Scenario
from steptrace.window import Window


class StepTraceCallback(TrainerCallback):
    """Record ``wait`` + ``warmup`` + ``active`` optimizer steps of a Trainer into ``out``.

    ``window`` (a ``steptrace.Window``) replaces ``wait``/``warmup``/``active`` when given,
    profiler options included. After training, ``result`` holds the ``CaptureResult``
    (None on a process that did not record, or when nothing was written).
    """

    def __init__(
        self,
        scenario: Scenario,
        out: str | Path,
        *,
        wait: int = 1,
        warmup: int = 1,
        active: int = 2,
        window: Window | None = None,
        per_rank: bool = False,
    ) -> None:
        self.scenario = scenario
        self.out = Path(out)
        self.window = window or Window(cold_steps=0, wait=wait, warmup=warmup, active=active)
        self.per_rank = per_rank
        self.result: CaptureResult | None = None
        self._capture: Capture | None = None
        self._label: AbstractContextManager[Any] | None = None
        self._hooks: list[Any] = []
        self._backward = "backward"
        self._spans: LoaderSpans | None = None
        self._recording = contextlib.ExitStack()  # the training loader's workers recorded
        self._recorded = False

    # -- the window ---------------------------------------------------------------------
    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        """Open the window (on the main process only unless ``per_rank``)."""
        if self._capture is not None or not (self.per_rank or state.is_world_process_zero):
            return
        if args.max_grad_norm and args.max_grad_norm > 0:
            self._backward = "backward + clip_grad_norm"
        model = kw.get("model")
        if model is not None:
            self._hooks = [
                model.register_forward_pre_hook(self._forward_begins),
                model.register_forward_hook(self._forward_ends),
            ]
        out = free_trace_path(self.out, worker_label(f"rank{args.process_index}"))
        capture = Capture(self.scenario, out=out, window=self.window)
        capture.__enter__()
        self._capture = capture
        loader = kw.get("train_dataloader")  # iterated by the Trainer after this hook
        if loader is not None:
            self._spans = LoaderSpans(folder_for(out))
            self._recorded = self._recording.enter_context(self._spans.recorded(loader))

    def on_pre_optimizer_step(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        """The backward (and clipping) ends: the optimizer step begins."""
        self._switch("optimizer_step")

    def on_optimizer_step(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        """The optimizer step ends."""
        self._switch(None)

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        """The step boundary; the window closes once its last step ran."""
        if self._capture is None:
            return
        self._switch(None)
        self._capture.step()
        if self._capture.done:
            self._close()

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
    ) -> None:
        """Close a window still open (training ended before the window's end)."""
        if self._capture is not None:
            self._close()

    def _close(self) -> None:
        self._switch(None)
        capture, self._capture = self._capture, None
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        recorded, self._recorded = self._recorded, False
        self._recording.close()  # the main process's lines written, the loader as it was
        if capture is None:
            return
        try:
            capture.__exit__(None, None, None)
        except CaptureError as exc:
            if self._spans is not None:
                self._spans.discard()  # no trace: nor are the workers' files kept
            warnings.warn(f"steptrace: {exc}", CaptureWarning, stacklevel=2)
            return
        if recorded and self._spans is not None:
            self.result = capture.amend(loader_spans=str(self._spans.folder))
        else:
            self.result = capture.result

    # -- labels -------------------------------------------------------------------------
    def _switch(self, name: str | None) -> None:
        """End the open label; open ``name`` (None: none)."""
        if self._label is not None:
            self._label.__exit__(None, None, None)
            self._label = None
        if name is not None and self._capture is not None:
            label = record_function(name)
            label.__enter__()
            self._label = label

    def _forward_begins(self, module: Any, inputs: Any) -> None:
        if module.training:
            self._switch("forward")

    def _forward_ends(self, module: Any, inputs: Any, output: Any) -> None:
        if module.training:
            self._switch(self._backward)


def workload_of(trainer: Any, scenario: Scenario) -> Workload:
    """A ``Workload`` for ``steptrace investigate`` from a Hugging Face ``Trainer``: its model,
    its optimizer (``create_optimizer()``), its training loader (``get_train_dataloader()``)
    and one micro-batch per step as the Trainer runs it: ``model(**batch).loss``, divided by
    ``gradient_accumulation_steps``, backward; every that many micro-batches the gradients
    clipped to ``max_grad_norm`` (when > 0) and the optimizer stepped. The learning-rate
    scheduler is not stepped."""
    args = trainer.args
    accumulate = max(int(args.gradient_accumulation_steps), 1)
    max_norm = float(args.max_grad_norm or 0.0)

    def step(model: Any, batch: Any, state: dict[str, Any]) -> Any:
        return _trainer_step(model, batch, state, accumulate, max_norm)

    return Workload(
        scenario=scenario,
        model=trainer.model,
        optimizer=trainer.create_optimizer(),
        loader=trainer.get_train_dataloader(),
        step=step,
    )


def _trainer_step(
    model: Any, batch: Any, state: dict[str, Any], accumulate: int, max_norm: float
) -> Any:
    """One micro-batch of a Trainer's step (see ``workload_of``)."""
    outputs = model(**batch)
    loss = outputs["loss"] if isinstance(outputs, Mapping) else outputs[0]
    if loss is None:
        raise CaptureError("the model returned no loss: its batches need labels")
    (loss / accumulate).backward()
    state["micro"] = state.get("micro", 0) + 1
    if state["micro"] % accumulate == 0:
        if max_norm > 0:
            clip_grad_norm_(model.parameters(), max_norm)
        state["optimizer"].step()
        state["optimizer"].zero_grad(set_to_none=True)
    return loss.detach()
