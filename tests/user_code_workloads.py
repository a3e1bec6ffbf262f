"""User code that misbehaves, for ``investigate``, ``profile`` and ``compare`` (CPU).

- ``chatty``: the workload factory, the model's loading and every request print to stdout.
- ``raises_in_capture``: every request raises (the capture cannot run).
- ``raises_in_check``: a request raises only under ``torch.inference_mode``, which only the
  inference-mode check turns on: the capture and the other checks run.
- ``exits``: the workload's request calls ``sys.exit(0)`` or ``os._exit(0)``.
- steps for ``compare``: ``chatty_step`` prints, ``exiting_step``/``hard_exiting_step`` end
  the process, ``interrupting_step`` raises a ``BaseException``, ``late_sleeper`` sleeps
  for ever once its correctness steps are done.
"""

from __future__ import annotations

import os
import sys
import time

import torch

from steptrace.capturing import Workload
from steptrace.scenario import Scenario
from tests import compare_steps
from tests.investigate_workloads import served_with_autograd

SAID = "user code says hello"


def _served(request_check: object = None) -> Workload:
    workload = served_with_autograd()
    inner_request = workload.request
    assert inner_request is not None

    def request(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        if callable(request_check):
            request_check()
        return inner_request(model, x)

    return Workload(
        scenario=Scenario(question="How long does a request take?", kind="inference"),
        load_model=workload.load_model,
        request=request,
        inputs=workload.inputs,
    )


def chatty() -> Workload:
    print(f"{SAID}: making the workload")
    return _served(lambda: print(f"{SAID}: a request"))


def raises_in_capture() -> Workload:
    def fail() -> None:
        raise ValueError("planted failure in the request")

    return _served(fail)


def raises_in_check() -> Workload:
    def fail_under_inference_mode() -> None:
        if torch.is_inference_mode_enabled():
            raise RuntimeError("planted: this model refuses inference_mode")

    return _served(fail_under_inference_mode)


def exits() -> Workload:
    how = os.environ.get("STEPTRACE_TEST_EXIT", "sys")
    return _served(lambda: os._exit(0) if how == "os" else sys.exit(0))


def chatty_step(state: dict[str, object], batch: object) -> object:
    print(f"{SAID}: a step")
    return compare_steps.same_step(state, batch)  # type: ignore[arg-type]


def exiting_step(state: dict[str, object], batch: object) -> object:
    sys.exit(0)


def hard_exiting_step(state: dict[str, object], batch: object) -> object:
    os._exit(0)


def interrupting_step(state: dict[str, object], batch: object) -> object:
    raise GeneratorExit("planted: not an Exception")


_CALLS = {"late_sleeper": 0}


def late_sleeper(state: dict[str, object], batch: object) -> object:
    """Well behaved for its first three steps (the correctness steps), then sleeps for ever."""
    _CALLS["late_sleeper"] += 1
    if _CALLS["late_sleeper"] > 3:
        time.sleep(3600)
    return compare_steps.same_step(state, batch)  # type: ignore[arg-type]
