"""torch.compile's findings checked outside the profiler: where the frame breaks, and why it
compiles again.

- ``break_sites`` (graph-break): the model's inputs are taken from one step run eagerly on a
  copy of the state (a forward pre-hook on the model), then ``torch._dynamo.explain`` runs
  the model's own module on them: its graphs, and each break's reason and source line.
- ``recompiles`` (recompilation, recompile-limit): the step over the batches on a fresh
  compile of a copy of the model, then the same with ``dynamic=True``; each compile's id
  and, for a recompile, the guard that failed, from Dynamo's compilation metrics, as a
fresh process compiles (no dynamic dimension remembered from an earlier run: Dynamo's
profile-guided state on disk is not read). Both use
  Dynamo's ``"eager"`` backend: its guards, graph breaks and recompiles are those of any
  backend, without Inductor's code generation (seconds per graph on a CPU); the compile
  time the trace recorded is the cost. The two sides' outputs are compared, batch by batch.

The model is the workload's compiled module (``torch.compile(model)``: an
``OptimizedModule``, whose ``_orig_mod`` is the user's module) or a plain module. Dynamo's
caches are reset before and after each run (``torch._dynamo.reset``): the user's compiled
code is compiled again at its next call, nothing else of theirs changes (their state is
deep-copied, never run).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec
import torch

from steptrace.errors import NotTestable
from steptrace.validate.checks.factory import one_line
from steptrace.validate.correctness import compare_values, flatten
from steptrace.validate.inputs import Batch, MakeState, State, Step

RTOL, ATOL = 1e-5, 1e-6  # the two sides' outputs: float32, the same operators
REASON_CHARS = 240  # of a reason, its first line, at most
BY_HAND = (
    "run the model under torch._dynamo.explain (graph breaks) or with "
    "TORCH_LOGS=recompiles (recompiles) and read the reasons"
)


class Break(msgspec.Struct, frozen=True):
    """One graph break: Dynamo's reason, and where in the user's code."""

    reason: str  # its first line
    site: str  # "file:line in function: code", the innermost user frame; "" when not said


class BreakSites(msgspec.Struct, frozen=True):
    """What ``torch._dynamo.explain`` found in the model's forward."""

    graphs: int
    breaks: tuple[Break, ...]


class Compile(msgspec.Struct, frozen=True):
    """One compile of a frame: its id, the frame, and for a recompile the failed guard."""

    compile_id: str
    frame: str  # "function (file:line)"
    reason: str | None  # the guard that failed (a recompile), None for a first compile


class Recompiles(msgspec.Struct, frozen=True):
    """The step over the same batches compiled as it is (A) and with dynamic=True (B)."""

    batches: int
    as_compiled: tuple[Compile, ...]
    dynamic: tuple[Compile, ...]
    outputs_differ: str | None  # None: every batch's outputs agree

    @property
    def recompiled(self) -> tuple[Compile, ...]:
        return tuple(c for c in self.as_compiled if c.reason is not None)

    @property
    def recompiled_dynamic(self) -> tuple[Compile, ...]:
        return tuple(c for c in self.dynamic if c.reason is not None)


def break_sites(
    step: Step, *, make_state: MakeState, batches: Sequence[Batch], device: torch.device
) -> BreakSites:
    """The model's graphs and breaks on the first batch's inputs (see module)."""
    if not batches:
        raise NotTestable("no batch to run the model on", BY_HAND)
    state = _eager_copy(make_state)
    model = state["model"]
    args, kwargs = _model_inputs(step, state, batches[0], model)
    with _quiet_dynamo():
        try:
            torch._dynamo.reset()
            found = torch._dynamo.explain(model)(*args, **kwargs)
        except Exception as error:  # the user's model: one line
            raise NotTestable(f"torch._dynamo.explain failed: {one_line(error)}", BY_HAND) from None
        finally:
            torch._dynamo.reset()
    return BreakSites(
        graphs=int(found.graph_count),
        breaks=tuple(_break(r) for r in found.break_reasons),
    )


def recompiles(
    step: Step, *, make_state: MakeState, batches: Sequence[Batch], device: torch.device
) -> Recompiles:
    """Each compile over ``batches``, as compiled and with dynamic=True (see module)."""
    if len(batches) < 2:
        raise NotTestable("fewer than two batches: nothing can change between them", BY_HAND)
    first = _compiled_run(step, make_state, batches, dynamic=None)
    second = _compiled_run(step, make_state, batches, dynamic=True)
    return Recompiles(len(batches), first[0], second[0], _first_difference(first[1], second[1]))


def _first_difference(a: list[Any], b: list[Any]) -> str | None:
    """Where the two sides' outputs first disagree, in words; None when they all agree
    (float32's tolerances: the eager backend runs the same operators)."""
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        for (name, u), (_, v) in zip(flatten(x, "output"), flatten(y, "output"), strict=False):
            found = compare_values(name, u, v, RTOL, ATOL)
            if not found.ok:
                how = found.note or f"by up to {found.max_abs:.3g}"
                return f"batch {k}: {name} {how}"
    return None


def _compiled_run(
    step: Step, make_state: MakeState, batches: Sequence[Batch], *, dynamic: bool | None
) -> tuple[tuple[Compile, ...], list[Any]]:
    """The step over copies of ``batches`` on a fresh copy of the state whose model is
    compiled anew (backend "eager"): each compile, and each step's output."""
    from torch._dynamo.utils import clear_compilation_metrics, get_compilation_metrics

    state = _eager_copy(make_state)
    module = type(state["model"]).__name__
    state["model"] = torch.compile(state["model"], backend="eager", dynamic=dynamic)
    outputs: list[Any] = []
    # as a fresh process compiles: no dynamic dimensions carried from the capture's run
    # (profile-guided automatic dynamic, kept on disk)
    fresh = torch._dynamo.config.patch(
        automatic_dynamic_local_pgo=False, automatic_dynamic_remote_pgo=False
    )
    with _quiet_dynamo(), fresh:
        torch._dynamo.reset()
        clear_compilation_metrics()
        try:
            for batch in batches:
                outputs.append(_detached(step(state, _unmarked(batch))))
            metrics = get_compilation_metrics()
        except Exception as error:  # the user's step: one line
            raise NotTestable(f"the compiled step failed: {one_line(error)}", BY_HAND) from None
        finally:
            torch._dynamo.reset()
    return tuple(_compile(m, module) for m in metrics if m.compile_id), outputs


def _eager_copy(make_state: MakeState) -> State:
    """A deep copy of the user's state, its model the user's own module (not compiled)."""
    state = copy.deepcopy(make_state())
    model = state.get("model")
    if not isinstance(model, torch.nn.Module):
        raise NotTestable("the workload's state has no model to compile", BY_HAND)
    state["model"] = getattr(model, "_orig_mod", model)
    return state


def _model_inputs(
    step: Step, state: State, batch: Batch, model: torch.nn.Module
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The positional and keyword inputs of the model's first call in one eager step."""
    seen: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def keep(_: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not seen:
            seen.append((copy.deepcopy(args), copy.deepcopy(kwargs)))

    handle = model.register_forward_pre_hook(keep, with_kwargs=True)
    try:
        step(copy.deepcopy(state), copy.deepcopy(batch))
    except Exception as error:  # the user's step: one line
        raise NotTestable(f"the step failed: {one_line(error)}", BY_HAND) from None
    finally:
        handle.remove()
    if not seen:
        raise NotTestable("the step never called the workload's model", BY_HAND)
    return seen[0]


def _break(reason: Any) -> Break:
    """A break from explain's ``GraphCompileReason``: its first line and the innermost user
    frame."""
    text = str(getattr(reason, "reason", reason)).strip().splitlines()
    stack = list(getattr(reason, "user_stack", None) or [])
    site = ""
    if stack:
        frame = stack[-1]
        code = (frame.line or "").strip()
        site = f"{frame.filename}:{frame.lineno} in {frame.name}" + (f": {code}" if code else "")
    return Break((text[0] if text else "")[:REASON_CHARS], site)


def _compile(metrics: Any, module: str) -> Compile:
    """A compile from Dynamo's metrics; a frame of torch's own (the wrapper that calls a
    compiled module) is named by the module's class."""
    if f"{os.sep}torch{os.sep}" in str(metrics.co_filename):
        frame = f"{module}'s call"
    else:
        frame = f"{metrics.co_name} ({metrics.co_filename}:{metrics.co_firstlineno})"
    reason = metrics.recompile_reason
    if reason is not None:
        reason = " ".join(str(reason).split("User stack trace:")[0].split())[:REASON_CHARS]
    return Compile(str(metrics.compile_id), frame, reason)


def _unmarked(batch: Batch) -> Batch:
    """A deep copy of ``batch`` whose tensors carry none of Dynamo's marks: a compiled run
    leaves the dimensions it made dynamic on the tensors it saw
    (``_dynamo_propagated_dynamic_indices``), which a fresh compile would read."""
    copied = copy.deepcopy(batch)
    for _, value in flatten(copied, "batch"):
        if isinstance(value, torch.Tensor):
            for name in [n for n in vars(value) if n.startswith("_dynamo_")]:
                delattr(value, name)
    return copied


def _detached(output: Any) -> Any:
    """``output`` with every tensor detached and copied (later steps change none of it)."""
    if isinstance(output, torch.Tensor):
        return output.detach().clone()
    if isinstance(output, tuple | list):
        return type(output)(_detached(o) for o in output)
    if isinstance(output, dict):
        return {k: _detached(v) for k, v in output.items()}
    return output


@contextlib.contextmanager
def _quiet_dynamo() -> Iterator[None]:
    """Dynamo's warnings about breaks and recompiles kept off the terminal: the check says
    them in its result."""
    logger = logging.getLogger("torch._dynamo")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
