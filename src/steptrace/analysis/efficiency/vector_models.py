"""FLOPs and bytes of vector work: elementwise operators, reductions, normalizations.

Contract: ``VECTOR_MODELS`` maps an operator's name to its model, ``(name, call) -> Cost |
None``; None where the recorded inputs do not fit it (never a guess).

One FLOP per element computed, as TraceLens counts them (a count of element operations,
not of arithmetic: such work is bound by memory, where its bytes decide). Bytes: every
tensor input read at its dtype (a broadcast view counts the elements it holds) and the
output written at its dtype.

- Elementwise: the output is the inputs' broadcast shape, at their promoted dtype (``bool``
  for comparisons); an in-place operator (``add_``) writes its first input; ``copy_``
  reads its source and writes its destination; ``fill_`` and ``zero_`` only write.
- Reductions (``sum``, ``mean``, ``amax``, ...): one FLOP per input element; the output
  keeps the dimensions not reduced (``dim`` from the concrete inputs; none given: all).
  Softmax and its log: the output has the input's shape.
- Normalizations (layer, batch, group, RMS norm) and their backward: one FLOP per
  element; they read every tensor they are given (the input, weights and statistics; the
  backward the output's gradient too) and write one tensor of the input's shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from steptrace.analysis.efficiency.dtypes import (
    BY_NAME,
    Dtype,
    number_category,
    promote,
    scalar_type,
)
from steptrace.analysis.efficiency.op_inputs import Call, Cost, Tensor

Model = Callable[[str, Call], Cost | None]


def _words(text: str) -> list[str]:
    return text.split()


_UNARY = _words(
    "abs neg exp exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal sin cos tan tanh "
    "sigmoid relu relu6 silu gelu erf erfinv sign floor ceil round trunc frac hardtanh "
    "hardswish hardsigmoid leaky_relu elu selu celu softplus mish clamp clamp_min "
    "clamp_max pow threshold nan_to_num logical_not bitwise_not square"
)
_BINARY = _words(
    "add sub rsub mul div remainder fmod maximum minimum atan2 eq ne lt le gt ge "
    "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor where "
    "masked_fill lerp addcmul addcdiv threshold_backward sigmoid_backward tanh_backward "
    "silu_backward gelu_backward hardtanh_backward leaky_relu_backward"
)
_COMPARISONS = frozenset(_words("eq ne lt le gt ge logical_not logical_and logical_or logical_xor"))
_REDUCTIONS = _words("sum mean amax amin prod var std logsumexp")  # dim: the 2nd input
_INDEX_REDUCTIONS = frozenset({"argmax", "argmin"})
_SOFTMAX = _words("softmax _softmax log_softmax _log_softmax")
_NORMS = _words(
    "layer_norm native_layer_norm rms_norm _fused_rms_norm batch_norm native_batch_norm "
    "_batch_norm_impl_index cudnn_batch_norm miopen_batch_norm group_norm native_group_norm "
    "_batch_norm_with_update _batch_norm_no_update _native_batch_norm_legit "
    "_native_batch_norm_legit_no_training "
    # their backward: the gradient read with the input, the input's gradient written
    "native_batch_norm_backward cudnn_batch_norm_backward miopen_batch_norm_backward "
    "batch_norm_backward native_layer_norm_backward native_group_norm_backward"
)


def _elementwise(name: str, call: Call) -> Cost | None:
    base = name.removeprefix("aten::").rstrip("_")
    inputs = call.tensors()
    if base == "copy" and len(inputs) >= 2:
        out, inputs = inputs[0], inputs[1:2]
    elif base in ("fill", "zero") and inputs:
        out, inputs = inputs[0], inputs[1:]
    elif name.endswith("_") and inputs:
        out = inputs[0]
    else:
        made = _result(base, call, inputs)
        if made is None:
            return None
        out = made
    read = sum(t.bytes for t in inputs)
    flops = 0 if base in ("fill", "zero") else out.elements
    return Cost("elementwise", flops, read + out.elements * out.dtype.size, _prec(out), False)


def _result(base: str, call: Call, inputs: list[Tensor]) -> Tensor | None:
    """The output of an out-of-place elementwise operator: broadcast shape, promoted type."""
    if not inputs:
        return None
    shape: tuple[int, ...] | None = ()
    for t in inputs:
        shape = _broadcast(shape, t.shape) if shape is not None else None
    numbers = [
        c
        for i, kind in enumerate(call.types)
        if kind in ("Scalar", "Int", "Double", "Bool")
        and (c := number_category(call.value(i) or "")) is not None
    ]
    dimensioned = [t.dtype for t in inputs if t.shape]
    dtype = promote(dimensioned, [t.dtype for t in inputs if not t.shape], numbers)
    if shape is None or dtype is None:
        return None
    return Tensor(shape, BY_NAME["bool"] if base in _COMPARISONS else dtype)


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    width = max(len(a), len(b))
    a, b = (1,) * (width - len(a)) + a, (1,) * (width - len(b)) + b
    if any(x != y and 1 not in (x, y) for x, y in zip(a, b, strict=True)):
        return None
    return tuple(max(x, y) for x, y in zip(a, b, strict=True))


def _reduction(name: str, call: Call) -> Cost | None:
    x = call.tensor(0)
    if x is None:
        return None
    base = name.removeprefix("aten::")
    kept = _kept(call, x)
    if kept is None:
        return None
    dtype = _reduced_dtype(base, call, x)
    out = kept * dtype.size
    return Cost("reduction", x.elements, x.bytes + out, _prec(x), False)


def _kept(call: Call, x: Tensor) -> int | None:
    """How many elements the reduction keeps: those of the dimensions not reduced."""
    if len(call.types) < 2 or call.types[1] in ("", "None"):
        return 1  # no dim argument: everything is reduced
    dims = call.ints(1)
    if dims is None:
        return 1 if call.concrete is not None and not call.value(1) else None
    if not dims:
        return 1  # dim=[]: all of them
    rank = len(x.shape)
    reduced = {d % rank for d in dims} if rank else set()
    return math.prod(n for d, n in enumerate(x.shape) if d not in reduced)


def _reduced_dtype(base: str, call: Call, x: Tensor) -> Dtype:
    if base in _INDEX_REDUCTIONS:
        return BY_NAME["int64"]
    if base in ("sum", "prod") and x.dtype.category < 2:
        return BY_NAME["int64"]
    asked = scalar_type(call.value(3) or "") if base in ("sum", "mean") else None
    return asked or x.dtype


def _softmax(name: str, call: Call) -> Cost | None:
    x = call.tensor(0)
    if x is None:
        return None
    half_to_float = name.startswith("aten::_") and call.value(2) == "True"
    asked = None if name.startswith("aten::_") else scalar_type(call.value(2) or "")
    out = BY_NAME["float32"] if half_to_float else asked or x.dtype
    written = x.elements * out.size
    return Cost("reduction", x.elements, x.bytes + written, _prec(x), False)


def _norm(name: str, call: Call) -> Cost | None:
    tensors = call.tensors()
    if not tensors:
        return None
    x = tensors[0]
    read = sum(t.bytes for t in tensors)  # the input, weights, running statistics
    return Cost("normalization", x.elements, read + x.elements * x.dtype.size, _prec(x), False)


def _prec(t: Tensor) -> str | None:
    return t.dtype.precision


def _names(bases: list[str], *, in_place: bool = False) -> list[str]:
    return [f"aten::{b}" for b in bases] + ([f"aten::{b}_" for b in bases] if in_place else [])


VECTOR_MODELS: dict[str, Model] = {
    **dict.fromkeys(_names(_UNARY + _BINARY, in_place=True), _elementwise),
    **dict.fromkeys(_names(["copy", "fill", "zero"], in_place=True), _elementwise),
    **dict.fromkeys(_names(_REDUCTIONS + sorted(_INDEX_REDUCTIONS)), _reduction),
    **dict.fromkeys(_names(_SOFTMAX), _softmax),
    **dict.fromkeys(_names(_NORMS), _norm),
}
