"""FLOPs and bytes of matrix work: GEMMs and attention (TraceLens's formulas).

Contract: ``MATRIX_MODELS`` maps an operator's name to its model, ``(name, call) -> Cost |
None``; None where the recorded inputs do not fit the model (never a guess).

- GEMM: ``mm`` 2·M·N·K; ``addmm`` + M·N (the bias); ``bmm`` and ``baddbmm`` × the batch;
  ``linear`` and ``matmul`` by their shapes (with broadcast batches); ``_scaled_mm`` (FP8)
  likewise. Bytes: the inputs read (bias included) and the output written.
- Convolution: ``conv_models``.
- Attention (SDPA, flash, efficient, cuDNN, CPU, math): 2·B·H·Nq·Nkv·(d + dv), that is
  4·B·H·Nq·Nkv·d, halved when causal (``is_causal`` in the concrete inputs: without them
  it is not known, and nothing is modelled). Bytes: Q, K, V, the mask, and the output.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from steptrace.analysis.efficiency.dtypes import scalar_type
from steptrace.analysis.efficiency.op_inputs import Call, Cost, Tensor

Model = Callable[[str, Call], Cost | None]


def _gemm(flops: int, tensors: list[Tensor | None], out: int, like: Tensor) -> Cost:
    read = sum(t.bytes for t in tensors if t is not None)
    return Cost("GEMM", flops, read + out * like.dtype.size, like.dtype.precision, True)


def _mm(name: str, call: Call) -> Cost | None:
    a, b = call.tensor(0), call.tensor(1)
    if a is None or b is None or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    (m, k), n = a.shape, b.shape[1]
    return _gemm(2 * m * n * k, [a, b], m * n, a)


def _addmm(name: str, call: Call) -> Cost | None:
    bias, a, b = call.tensor(0), call.tensor(1), call.tensor(2)
    if bias is None or a is None or b is None or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    (m, k), n = a.shape, b.shape[1]
    return _gemm(2 * m * n * k + m * n, [bias, a, b], m * n, a)


def _bmm(name: str, call: Call) -> Cost | None:
    first = 1 if name.endswith("baddbmm") else 0
    a, b = call.tensor(first), call.tensor(first + 1)
    if a is None or b is None or len(a.shape) != 3 or len(b.shape) != 3:
        return None
    (batch, m, k), n = a.shape, b.shape[2]
    added = call.tensor(0) if first else None
    flops = 2 * batch * m * n * k + (batch * m * n if added is not None else 0)
    return _gemm(flops, [added, a, b], batch * m * n, a)


def _linear(name: str, call: Call) -> Cost | None:
    x, weight, bias = call.tensor(0), call.tensor(1), call.tensor(2)
    if x is None or weight is None or not x.shape or len(weight.shape) != 2:
        return None
    n, k = weight.shape
    m = math.prod(x.shape[:-1])
    flops = 2 * m * n * k + (m * n if bias is not None else 0)
    return _gemm(flops, [x, weight, bias], m * n, x)


def _matmul(name: str, call: Call) -> Cost | None:
    a, b = call.tensor(0), call.tensor(1)
    if a is None or b is None or not a.shape or not b.shape:
        return None
    left = a.shape if len(a.shape) > 1 else (1, *a.shape)
    right = b.shape if len(b.shape) > 1 else (*b.shape, 1)
    batch = _broadcast(left[:-2], right[:-2])
    if batch is None or left[-1] != right[-2]:
        return None
    m, k, n = left[-2], left[-1], right[-1]
    out = math.prod(batch) * m * n
    return _gemm(2 * out * k, [a, b], out, a)


def _scaled_mm(name: str, call: Call) -> Cost | None:
    a, b = call.tensor(0), call.tensor(1)
    if a is None or b is None or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    (m, k), n = a.shape, b.shape[1]
    code = call.value(6)
    out = scalar_type(code) if code is not None else a.dtype
    if out is None:
        return None
    read = sum(t.bytes for t in call.tensors())  # A, B, their scales, the bias
    return Cost("GEMM", 2 * m * n * k, read + m * n * out.size, a.dtype.precision, True)


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The broadcast of two shapes; None when they do not broadcast."""
    out = []
    for x, y in zip((1,) * (len(b) - len(a)) + a, (1,) * (len(a) - len(b)) + b, strict=True):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(out)


# attention: where is_causal and the mask are, per operator
_ATTENTION = {
    "aten::scaled_dot_product_attention": (5, 3),
    "aten::_scaled_dot_product_attention_math": (5, 3),
    "aten::_scaled_dot_product_flash_attention": (4, None),
    "aten::_scaled_dot_product_flash_attention_for_cpu": (4, 5),
    "aten::_scaled_dot_product_efficient_attention": (6, 3),
    "aten::_scaled_dot_product_cudnn_attention": (6, 3),
}


def _attention(name: str, call: Call) -> Cost | None:
    q, k, v = call.tensor(0), call.tensor(1), call.tensor(2)
    causal_at, mask_at = _ATTENTION[name]
    causal = call.value(causal_at)
    if q is None or k is None or v is None or causal not in ("True", "False"):
        return None
    if len(q.shape) < 2 or len(k.shape) != len(q.shape) or len(v.shape) != len(q.shape):
        return None
    heads, nq, d = math.prod(q.shape[:-2]), q.shape[-2], q.shape[-1]
    nkv, dv = k.shape[-2], v.shape[-1]
    flops = 2 * heads * nq * nkv * (d + dv)
    if causal == "True":
        flops //= 2
    mask = call.tensor(mask_at) if mask_at is not None else None
    read = sum(t.bytes for t in (q, k, v, mask) if t is not None)
    out = heads * nq * dv * q.dtype.size
    return Cost("attention", flops, read + out, q.dtype.precision, True)


MATRIX_MODELS: dict[str, Model] = {
    "aten::mm": _mm,
    "aten::addmm": _addmm,
    "aten::bmm": _bmm,
    "aten::baddbmm": _bmm,
    "aten::linear": _linear,
    "aten::matmul": _matmul,
    "aten::_scaled_mm": _scaled_mm,
    **dict.fromkeys(_ATTENTION, _attention),
}
