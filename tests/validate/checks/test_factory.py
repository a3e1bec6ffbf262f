"""The findings' check factories on real CPU workloads: what B changes, what must agree,
and when a check is not testable here (truth known by construction)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the checks need torch (installed by make test)")
pytest.importorskip("scipy")

from steptrace.errors import CaptureError, NotTestable  # noqa: E402
from steptrace.validate import (  # noqa: E402
    CheckPlan,
    ConstantCache,
    Timed,
    TimingPlan,
    autocast_check,
    inference_mode_check,
    optimizer_check,
)
from steptrace.validate.checks.autocast import autocast_compare  # noqa: E402
from steptrace.validate.checks.optimizer import faster_state  # noqa: E402
from tests import check_steps as steps  # noqa: E402

QUICK = TimingPlan(warmup=2, block_steps=3, budget_s=1.5)
VERDICTS = ("faster", "slower", "no-detectable-difference")


def timed(result: Any) -> None:
    """The comparison ran to a verdict on measured steps (not which verdict: 2 shared cores)."""
    assert isinstance(result, Timed), result.sentence
    assert result.verdict in VERDICTS and result.samples.a and result.samples.b
    assert result.ratio > 0


def test_inference_mode_changes_no_value() -> None:
    result = inference_mode_check(
        steps.serve, make_state=steps.serving_state, batches=steps.inputs(), plan=QUICK
    )
    assert result.correctness.ok and result.correctness.start_identical
    outputs = [d for d in result.correctness.differences if d.name.endswith("output")]
    assert len(outputs) == 3 and all(d.max_abs == 0 for d in outputs)  # bit for bit
    assert not result.accepted_difference
    timed(result)


def test_inference_mode_refuses_a_training_step() -> None:
    def make() -> dict[str, Any]:
        model = steps.many_small_params()
        return {"model": model, "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}

    with pytest.raises(NotTestable, match="optimizer") as refused:
        inference_mode_check(steps.train, make_state=make, batches=steps.small_batches())
    assert refused.value.instead and str(refused.value) == refused.value.reason


def test_a_step_that_needs_autograd_is_not_testable_under_inference_mode() -> None:
    def backward_only(state: dict[str, Any], batch: Any) -> Any:
        loss = state["model"](batch).sum()
        loss.backward()
        return loss.detach()

    with pytest.raises(NotTestable, match=r"cannot run under torch\.inference_mode"):
        inference_mode_check(
            backward_only, make_state=steps.serving_state, batches=steps.inputs(), plan=QUICK
        )


def test_inference_mode_accepts_no_difference() -> None:
    with pytest.raises(CaptureError, match="accept_difference is not an option"):
        inference_mode_check(
            steps.serve,
            make_state=steps.serving_state,
            batches=steps.inputs(),
            check=CheckPlan(accept_difference=True),
        )


def adam_state(kind: type, **flags: Any) -> dict[str, Any]:
    model = steps.many_small_params()
    return {"model": model, "optimizer": kind(model.parameters(), lr=1e-3, **flags)}


@pytest.mark.parametrize("kind", [torch.optim.Adam, torch.optim.AdamW])
def test_optimizer_check_switches_to_fused(kind: type) -> None:
    result = optimizer_check(
        steps.train,
        make_state=lambda: adam_state(kind, foreach=False),
        batches=steps.small_batches(),
        plan=QUICK,
    )
    assert "optimizer fused: A None, B True" in result.by_design  # CPU has fused Adam(W)
    assert result.correctness.ok and result.correctness.start_identical
    assert result.correctness.differences[0].rtol == 1e-4  # float32 over 3 steps
    assert result.verdict != "outputs-differ"  # timed, or too few steps fit on a busy machine


def test_the_rebuilt_optimizer_keeps_groups_hyperparameters_and_state() -> None:
    model = steps.many_small_params()
    params = list(model.parameters())
    optimizer = torch.optim.Adam(
        [{"params": params[:10], "lr": 1e-2}, {"params": params[10:]}],
        lr=1e-3,
        betas=(0.8, 0.9),
        weight_decay=0.1,
        foreach=False,
    )
    state = {"model": model, "optimizer": optimizer}
    for batch in steps.small_batches()[:2]:  # moments and step counts to keep
        steps.train(state, batch)
    before = copy.deepcopy(optimizer.state_dict())
    rebuilt = faster_state(state)
    new = rebuilt["optimizer"]
    assert type(new) is torch.optim.Adam and new.defaults["fused"] is True
    assert [g["lr"] for g in new.param_groups] == [1e-2, 1e-3]
    assert all(g["betas"] == (0.8, 0.9) and g["weight_decay"] == 0.1 for g in new.param_groups)
    copied = list(rebuilt["model"].parameters())
    assert [p for g in new.param_groups for p in g["params"]] == copied  # the copy's own
    assert all(c is not p for c, p in zip(copied, params, strict=True))
    for index, p in enumerate(copied):
        kept, was = new.state[p], before["state"][index]
        assert torch.equal(kept["exp_avg"], was["exp_avg"])
        assert float(kept["step"]) == float(was["step"]) == 2
    assert optimizer.defaults["foreach"] is False and optimizer.defaults["fused"] is None
    assert optimizer.state_dict()["param_groups"] == before["param_groups"]  # untouched


def test_without_fused_the_rebuilt_optimizer_is_foreach() -> None:
    rebuilt = faster_state(adam_state(torch.optim.RMSprop, foreach=False))  # no fused RMSprop
    assert rebuilt["optimizer"].defaults["foreach"] is True


def test_an_optimizer_already_foreach_is_not_testable() -> None:
    def make() -> dict[str, Any]:
        model = steps.many_small_params()
        return {"model": model, "optimizer": torch.optim.SGD(model.parameters(), 0.1, foreach=True)}

    with pytest.raises(NotTestable, match="already runs a multi-tensor"):
        optimizer_check(steps.train, make_state=make, batches=steps.small_batches())


class Halving(torch.optim.Optimizer):
    """A custom optimizer: no foreach, no fused."""

    def __init__(self, params: Any) -> None:
        super().__init__(params, {})

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.sub_(p.grad, alpha=0.5)


def test_a_custom_optimizer_is_not_testable() -> None:
    def make() -> dict[str, Any]:
        model = steps.many_small_params()
        return {"model": model, "optimizer": Halving(model.parameters())}

    with pytest.raises(NotTestable, match="takes neither fused= nor foreach="):
        optimizer_check(steps.train, make_state=make, batches=steps.small_batches())


def test_autocast_on_the_cpu_is_not_testable() -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the refusal cannot be shown here")
    with pytest.raises(NotTestable, match="CUDA GPU") as refused:
        autocast_check(steps.serve, make_state=steps.serving_state, batches=steps.inputs())
    assert "torch.autocast('cuda'" in refused.value.instead


def test_autocast_accepts_the_difference_and_says_how_large() -> None:
    """The comparison itself, run on the CPU's bfloat16 autocast (the GPU path is the same)."""
    result = autocast_compare(
        steps.serve,
        make_state=steps.serving_state,
        batches=steps.inputs(),
        device=torch.device("cpu"),
        dtype=torch.bfloat16,
        plan=QUICK,
    )
    assert result.accepted_difference or result.correctness.ok
    outputs = [d for d in result.correctness.differences if d.name.endswith("output")]
    assert outputs and all(d.max_abs is not None and d.max_abs > 0 for d in outputs)  # bf16
    assert all(d.rtol == 1e-2 and d.atol == 1e-3 for d in outputs)
    assert "precision: B under torch.autocast('cpu', torch.bfloat16)" in result.by_design
    measured = result.by_design[-1]
    assert measured.startswith("difference accepted by design: largest")
    assert "rtol 0.01, atol 0.001" in measured
    timed(result)


def test_the_constant_cache_keys_by_exact_content() -> None:
    cache = ConstantCache()
    with cache:  # torch 2.13 routes torch.tensor and torch.as_tensor through the mode
        first = torch.tensor([1.0, 2.0])
        assert torch.tensor([1.0, 2.0]) is first
        assert torch.as_tensor([1.0, 2.0]) is not first  # another builder, its own entry
        assert torch.tensor([1, 2]).dtype == torch.int64  # 1 == 1.0, but another type
        assert torch.tensor([True, False]).dtype == torch.bool
        assert torch.tensor([-0.0]).item() == 0 and torch.tensor([-0.0]).signbit().all()
        assert not torch.tensor([0.0]).signbit().any()  # -0.0 and 0.0 kept apart
        assert torch.tensor([1.0, 2.0], dtype=torch.float64).dtype == torch.float64
        first.add_(1)  # changed in place: built again, never the changed one
        assert torch.tensor([1.0, 2.0]).tolist() == [1.0, 2.0]
        graded = torch.tensor([3.0], requires_grad=True)
        assert torch.tensor([3.0], requires_grad=True) is not graded
        inner = torch.ones(2)
        assert torch.tensor([inner.sum(), inner.sum()]) is not torch.tensor([2.0, 2.0])
    assert cache.hits == 2  # the repeated [1.0, 2.0] and one of the two -0.0


def test_the_constant_cache_moves_an_unchanged_tensor_once() -> None:
    cache = ConstantCache()
    host = torch.arange(4.0)
    with cache:
        moved = host.to("meta")  # another device, as host -> GPU
        assert host.to("meta") is moved
        assert host.to("cpu") is host  # no copy: nothing cached
        host.add_(1)
        assert host.to("meta") is not moved  # changed since: moved again
        assert torch.arange(4.0).to("meta") is not moved  # another tensor, same content
