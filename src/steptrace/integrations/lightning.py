"""``StepTraceProfiler``: a Lightning profiler that records one short steptrace window.

    trainer = lightning.pytorch.Trainer(
        max_steps=100,
        profiler=StepTraceProfiler(scenario=scenario, dirpath="traces"),
    )

The step is one Lightning training batch: the profiler's step boundary falls at the end of
each ``run_training_batch``, so a step holds reading the next batch
(``[_TrainingEpochLoop].train_dataloader_next``), moving it (``batch_to_device``), the
forward (``training_step``), ``backward`` and ``optimizer_step``. The first
``window.cold_steps`` batches run unprofiled and timed (the cold start); then a steptrace
``Capture`` (``steptrace.capturing.session``) runs the window (wait, warm-up, active) and
writes ``<dirpath>/rank<R>.<time_ns>.pt.trace.json.gz`` with the scenario embedded and its
sidecar. While the window is open every Lightning action is labelled
``[pl][profile]<action>``, as Lightning's own ``PyTorchProfiler`` labels them, and each
label is read as the step part its name says (``steptrace.analysis.time.parts``). A fit that
ends before the window's end keeps what completed (with a ``CaptureWarning``); a window
with no complete active step writes nothing and warns. Training only: the window opens at
the first training batch of ``fit``. A training loader with workers has them recorded
beside the trace (``capturing.loader_spans``: ``<trace>.workers/``) from the fit's start,
since Lightning makes the loader's iterator then, before the first batch: the trace's name
is chosen at the profiler's ``setup``.

``workload_of(module, loader, scenario)`` makes a ``Workload`` of a ``LightningModule``
(its ``training_step``, backward and optimizer step) for ``steptrace investigate``, whose
checks run that step outside any Trainer.

For traces made by Lightning's ``PyTorchProfiler`` nothing is needed: its labels are read
as step parts, and its steps (cut after the forward) are replaced by Lightning's batches
(``steptrace.analysis.time.lightning_steps``).
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.profilers import Profiler
from torch.profiler import record_function

from steptrace.capturing.handler import free_trace_path, worker_label
from steptrace.capturing.loader_spans import LoaderSpans, folder_for
from steptrace.capturing.result import CaptureResult
from steptrace.capturing.session import Capture
from steptrace.capturing.workload import Workload
from steptrace.errors import CaptureError, CaptureWarning
from steptrace.scenario import Scenario
from steptrace.window import Window

BATCH_ACTION = "run_training_batch"
READ_ACTION = "[_TrainingEpochLoop].train_dataloader_next"
LABEL_PREFIX = "[pl][profile]"  # Lightning's PyTorchProfiler writes the same
_SELECT = "_select_data_fetcher"  # FitLoop.setup_data's fetcher, set up then iterated


class StepTraceProfiler(Profiler):
    """A Lightning ``Profiler`` recording one steptrace window of training batches.

    ``window``: the steps and profiler options (``steptrace.Window()`` by default: 1 cold
    batch, wait 1, warm-up 1, active 2: six training batches cover it). ``dirpath``: the
    folder for the trace (Lightning's log folder when None). After ``fit``, ``result``
    holds the ``CaptureResult`` (None when nothing was written).
    """

    def __init__(
        self,
        scenario: Scenario,
        dirpath: str | Path | None = None,
        *,
        window: Window | None = None,
    ) -> None:
        super().__init__(dirpath=dirpath)
        self.scenario = scenario
        self.window = window if window is not None else Window()
        self.result: CaptureResult | None = None
        self._capture: Capture | None = None
        self._labels: dict[str, AbstractContextManager[Any]] = {}
        self._cold_ms: list[float] = []
        self._mark: float | None = None
        self._finished = False
        self._out: Path | None = None  # the trace's path, chosen at the fit's setup
        self._spans: LoaderSpans | None = None
        self._recording = contextlib.ExitStack()  # the training loaders' workers recorded
        self._recorded = False

    def setup(self, stage: str, local_rank: int | None = None, log_dir: str | None = None) -> None:
        """Choose the trace's path; have the training loaders' workers recorded beside it."""
        super().setup(stage, local_rank, log_dir)
        if stage != "fit" or self._out is not None:
            return
        directory = Path(self.dirpath) if self.dirpath is not None else Path.cwd()
        self._out = free_trace_path(directory, worker_label(f"rank{self.local_rank}"))
        self._spans = LoaderSpans(folder_for(self._out))
        module = getattr(self, "_lightning_module", None)  # set by the Trainer before setup
        trainer = getattr(module, "trainer", None)
        if trainer is not None:
            _before_iteration(trainer.fit_loop, self._record)

    def _record(self, loaders: Iterable[object]) -> None:
        """Record the workers of the first training loader that has them."""
        spans = self._spans
        for loader in loaders:
            if spans is None or self._finished or self._recorded:
                return
            self._recorded = self._recording.enter_context(spans.recorded(loader))

    def start(self, action_name: str) -> None:
        """Open the window at the first training batch due; label the action inside it."""
        training = action_name in (READ_ACTION, BATCH_ACTION)
        if training and self._mark is None:
            self._mark = time.perf_counter()
        if training and self._due():
            self._open()
        if self._capture is not None and action_name not in self._labels:
            label = record_function(LABEL_PREFIX + action_name)
            label.__enter__()
            self._labels[action_name] = label

    def stop(self, action_name: str) -> None:
        """Close the action's label; a training batch's end is the step boundary."""
        label = self._labels.pop(action_name, None)
        if label is not None:
            label.__exit__(None, None, None)
        if action_name != BATCH_ACTION or self._finished:
            return
        if self._capture is None:
            now = time.perf_counter()
            self._cold_ms.append((now - (self._mark or now)) * 1000)
            self._mark = now
            if self._due():
                self._open()
            return
        self._capture.step()
        if self._capture.done:
            self._close()

    def _due(self) -> bool:
        return (
            self._capture is None
            and not self._finished
            and len(self._cold_ms) >= self.window.cold_steps
        )

    def _open(self) -> None:
        out = self._out
        if out is None:  # no fit's setup (a profiler driven by hand)
            directory = Path(self.dirpath) if self.dirpath is not None else Path.cwd()
            out = free_trace_path(directory, worker_label(f"rank{self.local_rank}"))
        capture = Capture(self.scenario, out=out, window=self.window)
        capture.__enter__()
        self._capture = capture

    def _close(self) -> None:
        capture, self._capture = self._capture, None
        self._finished = True
        for label in reversed(list(self._labels.values())):
            label.__exit__(None, None, None)
        self._labels.clear()
        recorded, self._recorded = self._recorded, False
        self._recording.close()  # the main process's lines written, the loader as it was
        if capture is None:
            self._discard_spans()
            return
        try:
            capture.__exit__(None, None, None)
        except CaptureError as exc:
            self._discard_spans()
            warnings.warn(f"steptrace: {exc}", CaptureWarning, stacklevel=2)
            return
        folder = str(self._spans.folder) if recorded and self._spans else None
        self.result = capture.amend(cold_start_ms=tuple(self._cold_ms), loader_spans=folder)

    def _discard_spans(self) -> None:
        """No trace: nor are the workers' files kept."""
        if self._spans is not None:
            self._spans.discard()

    def summary(self) -> str:
        """Where the trace is, and the command that reads it."""
        if self.result is None:
            return ""
        trace = self.result.trace
        return f"steptrace: wrote {trace}; read it with: steptrace analyze '{trace}'"

    def teardown(self, stage: str | None) -> None:
        """End a window still open (the fit stopped early) and close Lightning's streams."""
        if self._capture is not None:
            self._close()
        elif not self._finished and stage == "fit":  # the window never opened
            self._finished = True
            self._recording.close()
            self._discard_spans()
        super().teardown(stage)


def _before_iteration(fit_loop: Any, record: Callable[[Iterable[object]], None]) -> None:
    """Have ``record`` called with the training loaders (``CombinedLoader.flattened``)
    after Lightning prepared them and before it makes their iterators (in
    ``FitLoop.setup_data``, which does both at once): only that call of ``setup_data``
    sees the data fetcher's ``setup`` wrapped. Where Lightning's loop is not as in 2.x,
    nothing is recorded."""
    import lightning.pytorch.loops.fit_loop as loop_module

    select = getattr(loop_module, _SELECT, None)
    setup_data = getattr(fit_loop, "setup_data", None)
    if select is None or setup_data is None:
        return

    def selecting(*args: object, **kwargs: object) -> object:
        fetcher = select(*args, **kwargs)
        setup = fetcher.setup

        def setup_recorded(combined_loader: object) -> None:
            record(getattr(combined_loader, "flattened", ()))
            setup(combined_loader)

        fetcher.setup = setup_recorded
        return fetcher

    def watched() -> None:
        setattr(loop_module, _SELECT, selecting)
        try:
            setup_data()
        finally:
            setattr(loop_module, _SELECT, select)
            del fit_loop.setup_data  # the loop's own again, for later epochs

    fit_loop.setup_data = watched  # this loop only: an instance attribute


def workload_of(
    module: Any, loader: Iterable[Any], scenario: Scenario, optimizer: Any = None
) -> Workload:
    """A ``Workload`` for ``steptrace investigate`` from a ``LightningModule``: its own
    ``training_step`` (its loss, or a dict's ``"loss"``), the backward and the optimizer step
    as Lightning's automatic optimization runs them, on ``loader``'s batches. The optimizer
    is ``optimizer`` or the first one ``configure_optimizers()`` returns (schedulers are not
    stepped). ``self.log`` finds no trainer here and logs nothing. A module with manual
    optimization is refused (its step calls ``self.optimizers()``, which needs a trainer)."""
    if not getattr(module, "automatic_optimization", True):
        raise CaptureError(
            "workload_of: this LightningModule uses manual optimization; give steptrace a "
            "Workload with your own step(model, batch, state) instead"
        )
    chosen = optimizer if optimizer is not None else _first_optimizer(module)
    return Workload(
        scenario=scenario,
        model=module,
        optimizer=chosen,
        loader=loader,
        step=_lightning_step,
    )


def _lightning_step(model: Any, batch: Any, state: dict[str, Any]) -> Any:
    """One automatic-optimization step of a LightningModule: its loss, backward, step."""
    index = state.get("batch_idx", 0)
    output = model.training_step(batch, index)
    loss = output["loss"] if isinstance(output, Mapping) else output
    if loss is None:
        raise CaptureError("the LightningModule's training_step returned no loss")
    state["optimizer"].zero_grad(set_to_none=True)
    loss.backward()
    state["optimizer"].step()
    state["batch_idx"] = index + 1
    return loss.detach()


def _first_optimizer(module: Any) -> Any:
    """The first optimizer of whatever ``configure_optimizers`` returns: an optimizer, a
    list or tuple of them (or of lists), or a dict with an ``"optimizer"`` key."""
    found = module.configure_optimizers()
    while not isinstance(found, torch.optim.Optimizer):
        if isinstance(found, Mapping) and "optimizer" in found:
            found = found["optimizer"]
        elif isinstance(found, (list, tuple)) and found:
            found = found[0]
        else:
            raise CaptureError(
                "workload_of: configure_optimizers() returned no optimizer steptrace can "
                f"use ({type(found).__name__}); pass optimizer=..."
            )
    return found
