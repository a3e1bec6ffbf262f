"""Correctness before speed: A's and B's outputs, loss, gradients and parameters compared.

Tolerances follow ``torch.testing.assert_close``'s defaults for each dtype (overridable):
an element agrees when ``|a - b| <= atol + rtol * |b|``. Every difference is reported
with its largest absolute and relative error, whether it passes or not; the relative
error of an element is ``|a - b| / max(|a|, |b|)`` (at most 2, and 1 when one side is 0:
an exact 0 on one side is no reason for a 1e305).

Tolerances for training steps: the defaults hold for one step of the same computation.
Over several steps the same maths in another order (a foreach or fused optimizer, another
reduction order, TF32) drifts: float32 parameters after 3 Adam steps commonly differ by
1e-6 to 1e-5 relative, gradients more where they are small. Check one step first
(``CheckPlan(steps=1)``); for several float32 steps ``rtol=1e-4, atol=1e-6`` is a
sensible start, for bfloat16 ``rtol=1e-2, atol=1e-3``; a difference by design (other
data, dropout) is ``accept_difference=True``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import torch

from steptrace.validate.inputs import Output, State
from steptrace.validate.results import Correctness, Difference

# dtype -> (rtol, atol), torch.testing.assert_close's defaults
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1.3e-6, 1e-5),
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
}
COMPILED = "_orig_mod."  # torch.compile's wrapper: the same parameter under another name


def flatten(value: Output, prefix: str) -> Iterator[tuple[str, Output]]:
    """Tensors and numbers inside tuples, lists and dicts, with readable names."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from flatten(item, f"{prefix}.{key}")
    elif isinstance(value, tuple | list):
        for index, item in enumerate(value):
            yield from flatten(item, f"{prefix}[{index}]")
    else:
        yield prefix, value


def compare_values(
    name: str, a: Output, b: Output, rtol: float | None, atol: float | None
) -> Difference:
    a, b = _as_tensor(a), _as_tensor(b)
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return _compare_tensors(name, a, b, rtol, atol)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return _compare_tensors(name, torch.tensor(float(a)), torch.tensor(float(b)), rtol, atol)
    same = (a is None and b is None) or (type(a) is type(b) and a == b)
    return Difference(name, same, None, None, rtol, atol, None if same else "values differ")


def _compare_tensors(
    name: str, a: torch.Tensor, b: torch.Tensor, rtol: float | None, atol: float | None
) -> Difference:
    if a.shape != b.shape or a.dtype != b.dtype:
        note = f"A {tuple(a.shape)} {a.dtype} vs B {tuple(b.shape)} {b.dtype}"
        return Difference(name, False, None, None, rtol, atol, note)
    default_rtol, default_atol = TOLERANCES.get(a.dtype, (0.0, 0.0))
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    wide = torch.complex128 if a.is_complex() else torch.float64
    x, y = a.detach().to(wide).cpu(), b.detach().to(wide).cpu()
    if x.numel() == 0:
        return Difference(name, True, 0.0, 0.0, rtol, atol)
    same = (x == y) | (x.isnan() & y.isnan())  # equal infinities and NaNs agree
    error = torch.where(same, torch.zeros(()), (x - y).abs().double())
    scale = torch.maximum(x.abs(), y.abs()).double()
    relative = torch.where(error > 0, error / scale, torch.zeros(()))  # scale > 0 there
    ok = bool((same | (error <= atol + rtol * y.abs().double())).all())
    return Difference(name, ok, float(error.max()), float(relative.max()), rtol, atol)


def explain(check: Correctness) -> str:
    """Why there is no speed verdict, by how much, and what to try next."""
    failing = [d for d in check.differences if not d.ok]
    if not check.start_identical:
        return (
            "B's outputs differ from A's: the two states do not start from the same weights "
            "(seed both the same way, or load one state_dict into both); no speed verdict."
        )
    if not failing:
        return "B's outputs differ from A's beyond tolerance: no speed verdict is given."
    worst = max(failing, key=lambda d: (d.max_rel is not None, d.max_rel or 0, d.max_abs or 0))
    if worst.note:
        how = f"{worst.name}: {worst.note}"
    else:
        how = (
            f"{worst.name} by up to {worst.max_abs:.3g} ({100 * (worst.max_rel or 0):.3g}% "
            f"relative; tolerance rtol {worst.rtol:g}, atol {worst.atol:g})"
        )
    more = f" and {len(failing) - 1} other values" if len(failing) > 1 else ""
    return (
        f"B's outputs differ from A's after {check.steps} steps: {how}{more}; no speed verdict. "
        "Next: CheckPlan(steps=1) (--check-steps 1) to see whether the first step already "
        "differs; tolerances for the dtype (rtol/atol: several training steps drift); or "
        "accept_difference=True (--accept-difference) if the difference is by design."
    )


def _as_tensor(value: Output) -> Output:
    """numpy arrays are compared as tensors (never with ``==``)."""
    return torch.from_numpy(np.asarray(value)) if isinstance(value, np.ndarray) else value


def snapshot(state: State) -> dict[str, torch.Tensor]:
    """Parameters and gradients of the state's model, cloned, by name."""
    model = state["model"]
    taken: dict[str, torch.Tensor] = {}
    for raw, parameter in model.named_parameters():
        name = raw.replace(COMPILED, "")
        taken[f"param:{name}"] = parameter.detach().clone()
        if parameter.grad is not None:
            taken[f"grad:{name}"] = parameter.grad.detach().clone()
    for name, buffer in model.named_buffers():
        taken[f"buffer:{name.replace(COMPILED, '')}"] = buffer.detach().clone()
    return taken


def same_start(a: State, b: State) -> bool:
    """Bit-for-bit equal parameters and buffers."""
    left, right = snapshot(a), snapshot(b)
    return left.keys() == right.keys() and all(_identical(left[k], right[k]) for k in left)


def _identical(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equal, NaN included (``torch.equal`` says NaN differs from itself)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a, b) or bool(((a == b) | (a.isnan() & b.isnan())).all())
