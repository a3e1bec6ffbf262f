"""The check factories on a CUDA GPU: autocast (GPU only), fused optimizers, the profiler
with GPU activity, constants built on (or moved to) the device. Skipped without CUDA
(conftest); ``make test-gpu`` runs them. Tiny models and budgets: well under a minute.
"""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch", reason="the CUDA paths need torch")
pytest.importorskip("scipy")

from steptrace.errors import NotTestable  # noqa: E402
from steptrace.validate import (  # noqa: E402
    Timed,
    TimingPlan,
    TooFewSamples,
    autocast_check,
    constant_once_check,
    optimizer_check,
    profiler_check,
)
from tests import check_steps as steps  # noqa: E402

PLAN = TimingPlan(warmup=2, block_steps=5, budget_s=2.0)
HOST_CONSTANT = torch.tensor(steps.BIG_LIST)  # on the host, moved to the GPU every step


def on_gpu(batches: list[torch.Tensor]) -> list[torch.Tensor]:
    return [b.cuda() for b in batches]


def serving_state() -> dict[str, Any]:
    return {"model": steps.mlp().cuda().eval()}


def test_autocast_on_cuda_accepts_the_difference_and_says_so() -> None:
    result = autocast_check(
        steps.serve,
        make_state=serving_state,
        batches=on_gpu(steps.inputs()),
        device="cuda",
        plan=PLAN,
    )
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    assert f"precision: B under torch.autocast('cuda', {dtype})" in result.by_design
    assert result.by_design[-1].startswith("difference accepted by design: largest")
    assert isinstance(result, Timed | TooFewSamples), result.sentence
    assert result.samples.a and result.device == "cuda"


def cuda_adam(**flags: Any) -> dict[str, Any]:
    model = steps.many_small_params().cuda()
    return {"model": model, "optimizer": torch.optim.Adam(model.parameters(), **flags)}


def test_optimizer_check_on_cuda_switches_a_for_loop_adam_to_fused() -> None:
    result = optimizer_check(
        steps.train,
        make_state=lambda: cuda_adam(foreach=False),
        batches=on_gpu(steps.small_batches()),
        device="cuda",
        plan=PLAN,
    )
    assert "optimizer fused: A None, B True" in result.by_design
    assert result.correctness.ok, result.sentence


def test_a_default_adam_on_cuda_already_runs_foreach() -> None:
    with pytest.raises(NotTestable, match="already runs a multi-tensor"):
        optimizer_check(
            steps.train,
            make_state=cuda_adam,
            batches=on_gpu(steps.small_batches()),
            device="cuda",
        )


def test_the_profiler_with_gpu_activity_slows_a_dispatch_bound_step() -> None:
    result = profiler_check(
        steps.tiny_ops,
        make_state=steps.identity_state,
        batches=on_gpu(steps.inputs(2, 8)),
        device="cuda",
        plan=PLAN,
    )
    assert result.verdict == "faster", result.sentence
    assert any("(CPU+CUDA" in line for line in result.by_design)


def test_a_constant_built_on_the_device_each_step_is_built_once() -> None:
    def built_on_device(state: dict[str, Any], batch: torch.Tensor) -> torch.Tensor:
        return state["model"](batch * torch.tensor(steps.BIG_LIST, device=batch.device))

    def moved_each_step(state: dict[str, Any], batch: torch.Tensor) -> torch.Tensor:
        return state["model"](batch * HOST_CONSTANT.to(batch.device))

    def wide() -> dict[str, Any]:
        return {"model": steps.wide_state()["model"].cuda()}

    batches = on_gpu(steps.inputs(2, steps.WIDE))
    for step in (built_on_device, moved_each_step):
        result = constant_once_check(
            step, make_state=wide, batches=batches, device="cuda", plan=PLAN
        )
        assert result.correctness.ok, result.sentence
        assert "(1 built," in result.by_design[-2], result.by_design
        assert result.verdict == "faster", result.sentence
