"""FLOPs and bytes of convolutions, forward and backward, as every vintage records them.

Contract: ``CONV_MODELS`` maps an operator's name to its model, ``(name, call, seen) ->
Cost | None``; None where the recorded inputs do not fit it (never a guess). ``seen`` is
what the trace's own backward calls recorded (``ConvShapes``).

One convolution does 2·prod(weight[1:])·prod(output) FLOPs (a transposed one
2·prod(weight[1:])·prod(input)); each gradient costs what the forward does, the input's
(``dgrad``) and the weight's (``wgrad``), and the bias's is one FLOP per element of the
output's gradient. Bytes: the tensors read and the tensors written.

- **Forward**: ``convolution``, ``_convolution``, ``conv1d``/``2d``/``3d``,
  ``conv_transpose*``, ``_convolution_mode``, and the backends' own (``cudnn_*``,
  ``miopen_*``, ``mkldnn_``, ``slow_conv*``, ``thnn_conv2d``, ...), each with its
  arguments where its signature puts them. The output's size comes from the stride,
  padding, dilation (and output padding) in the concrete inputs; a trace without them
  (before torch 2.1) records the output's shape only in the backward call on the same
  input and weight (its ``grad_output``), which ``seen`` holds: used only when every such
  call agrees.
- **Backward, both gradients at once** (``convolution_backward``,
  ``cudnn_convolution_backward``, ``miopen_convolution_backward``, ...): the gradients
  asked for by its ``output_mask``; without a concrete mask, not known.
- **Backward, one gradient** (``cudnn_convolution_backward_input``/``_weight``,
  ``miopen_*_backward_input``/``_weight``/``_bias``, ...): the size they do not hold as a
  tensor (the input's or the weight's) comes from their concrete inputs, else from
  ``seen``: the roofline gives them what the backward call around them holds (torch 1.x's
  ``cudnn_convolution_backward``: input, output's gradient and weight), so two
  convolutions that share the gradient's shapes are never mixed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import NamedTuple, TypeVar

from steptrace.analysis.efficiency.op_inputs import Call, Cost

Shape = tuple[int, ...]
T = TypeVar("T")


class ConvShapes:
    """What the trace's backward calls recorded of each convolution: the input, weight and
    output (``grad_output``) shapes together, and whether it was transposed."""

    def __init__(self, seen: Iterable[tuple[Shape, Shape, Shape, bool | None]] = ()) -> None:
        self._out: dict[tuple[Shape, Shape], set[Shape]] = {}
        self._x: dict[tuple[Shape, Shape], set[Shape]] = {}
        self._w: dict[tuple[Shape, Shape], set[Shape]] = {}
        self._transposed: dict[tuple[Shape, Shape], set[bool | None]] = {}
        for x, w, out, transposed in seen:
            self._out.setdefault((x, w), set()).add(out)
            self._x.setdefault((out, w), set()).add(x)
            self._w.setdefault((out, x), set()).add(w)
            self._transposed.setdefault((x, w), set()).add(transposed)

    @classmethod
    def learn(cls, calls: Iterable[tuple[str, Call]]) -> ConvShapes:
        """From backward calls that hold the input, the weight and the output's gradient."""
        found = []
        for name, call in calls:
            places = _WHOLE_BACKWARD.get(name)
            if places is None:
                continue
            go, x, w = (call.tensor(i) for i in places.tensors)
            if go is not None and x is not None and w is not None:
                found.append(
                    (x.shape, w.shape, go.shape, _transposed(name, call, places.transposed))
                )
        return cls(found)

    def output(self, x: Shape, w: Shape) -> Shape | None:
        return _one(self._out.get((x, w)))

    def input(self, out: Shape, w: Shape) -> Shape | None:
        return _one(self._x.get((out, w)))

    def weight(self, out: Shape, x: Shape) -> Shape | None:
        return _one(self._w.get((out, x)))

    def transposed(self, x: Shape, w: Shape) -> bool | None:
        return _one(self._transposed.get((x, w)))


NOTHING_SEEN = ConvShapes()


def _one(values: set[T] | None) -> T | None:
    return next(iter(values)) if values is not None and len(values) == 1 else None


class Forward(NamedTuple):
    """Where a forward convolution's arguments are (None: not in its signature)."""

    stride: int | None
    padding: int | None
    dilation: int | None
    groups: int | None
    transposed: bool | int | None  # a fixed kind, or the argument that says it
    output_padding: int | None = None
    shift_without_bias: bool = False  # older signatures had a bias at 2: shift by one
    bias: int = 2  # where a bias would be (not a tensor there: none)


# torch's signatures (native_functions.yaml); input 0 is the input, 1 the weight
_FORWARD: dict[str, Forward] = {
    "aten::convolution": Forward(3, 4, 5, 8, 6, 7),
    "aten::_convolution": Forward(3, 4, 5, 8, 6, 7),
    "aten::convolution_overrideable": Forward(3, 4, 5, 8, 6, 7),
    "aten::_convolution_mode": Forward(3, 4, 5, 6, False),
    **dict.fromkeys(("aten::conv1d", "aten::conv2d", "aten::conv3d"), Forward(3, 4, 5, 6, False)),
    **dict.fromkeys(
        ("aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d"),
        Forward(3, 4, 7, 6, True, 5),
    ),
    # (self, weight, padding, stride, dilation, groups, ...); a bias at 2 before torch 1.8
    "aten::cudnn_convolution": Forward(3, 2, 4, 5, False, shift_without_bias=True),
    "aten::cudnn_convolution_transpose": Forward(4, 2, 5, 6, True, 3, shift_without_bias=True),
    "aten::cudnn_convolution_relu": Forward(3, 4, 5, 6, False),
    "aten::cudnn_convolution_add_relu": Forward(5, 6, 7, 8, False, bias=4),
    **dict.fromkeys(
        (
            "aten::miopen_convolution",
            "aten::miopen_depthwise_convolution",
            "aten::mkldnn_convolution",
            "aten::_mps_convolution",
        ),
        Forward(4, 3, 5, 6, False),
    ),
    "aten::miopen_convolution_transpose": Forward(5, 3, 6, 7, True, 4),
    "aten::_nnpack_spatial_convolution": Forward(4, 3, None, None, False),
    # (self, weight, kernel_size, bias, stride, padding, ...)
    **dict.fromkeys(
        ("aten::_slow_conv2d_forward", "aten::thnn_conv2d", "aten::slow_conv3d"),
        Forward(4, 5, None, None, False, bias=3),
    ),
    **dict.fromkeys(
        ("aten::slow_conv_dilated2d", "aten::slow_conv_dilated3d"),
        Forward(4, 5, 6, None, False, bias=3),
    ),
    **dict.fromkeys(
        ("aten::slow_conv_transpose2d", "aten::slow_conv_transpose3d"),
        Forward(4, 5, 7, None, True, 6, bias=3),
    ),
}


class WholeBackward(NamedTuple):
    """Where a backward call that holds all three tensors has them, and its mask."""

    tensors: tuple[int, int, int]  # grad_output, input, weight (output_mask: the last)
    transposed: bool | int  # a fixed kind, or the argument that says it


_WHOLE_BACKWARD: dict[str, WholeBackward] = {
    "aten::convolution_backward": WholeBackward((0, 1, 2), 7),
    "aten::convolution_backward_overrideable": WholeBackward((0, 1, 2), 6),
    "aten::cudnn_convolution_backward": WholeBackward((1, 0, 2), False),
    "aten::cudnn_convolution_transpose_backward": WholeBackward((1, 0, 2), True),
    "aten::miopen_convolution_backward": WholeBackward((1, 0, 2), False),
    "aten::miopen_depthwise_convolution_backward": WholeBackward((1, 0, 2), False),
    "aten::miopen_convolution_transpose_backward": WholeBackward((1, 0, 2), True),
    "aten::mkldnn_convolution_backward": WholeBackward((1, 0, 2), False),
    "aten::_slow_conv2d_backward": WholeBackward((0, 1, 2), False),
    "aten::slow_conv2d_backward": WholeBackward((0, 1, 2), False),
    "aten::thnn_conv2d_backward": WholeBackward((0, 1, 2), False),
}

LEARNED_FROM = frozenset(_WHOLE_BACKWARD)  # the calls ``ConvShapes.learn`` reads

# one gradient: (grad_output, the tensor it holds, the size it holds as a list) and which
# tensor it computes; the weight's for "weight", the input's for "input"
_INPUT_GRAD = {  # (self_size, grad_output, weight, ...)
    "aten::cudnn_convolution_backward_input": (1, 2, 0, False),
    "aten::miopen_convolution_backward_input": (1, 2, 0, False),
    "aten::miopen_depthwise_convolution_backward_input": (1, 2, 0, False),
    "aten::mkldnn_convolution_backward_input": (1, 2, 0, False),
    "aten::cudnn_convolution_transpose_backward_input": (0, 1, None, True),
    "aten::miopen_convolution_transpose_backward_input": (0, 1, None, True),
}
_WEIGHT_GRAD = {  # (weight_size, grad_output, self, ...)
    "aten::cudnn_convolution_backward_weight": (1, 2, 0, False),
    "aten::miopen_convolution_backward_weight": (1, 2, 0, False),
    "aten::miopen_depthwise_convolution_backward_weight": (1, 2, 0, False),
    "aten::mkldnn_convolution_backward_weights": (1, 2, 0, False),
    "aten::cudnn_convolution_transpose_backward_weight": (1, 2, 0, True),
    "aten::miopen_convolution_transpose_backward_weight": (1, 2, 0, True),
}
ONE_GRADIENT = frozenset(_INPUT_GRAD) | frozenset(_WEIGHT_GRAD)  # read with the call around
_BIAS_GRAD = ("aten::miopen_convolution_backward_bias", "aten::cudnn_convolution_backward_bias")


def _flops(x: Shape, w: Shape, out: Shape, transposed: bool) -> int:
    """One pass of the convolution (the forward, or one of its two large gradients)."""
    return 2 * math.prod(w[1:]) * math.prod(x if transposed else out)


def _fits(x: Shape, w: Shape, out: Shape, transposed: bool) -> bool:
    """Do the channels of the three shapes agree with a (transposed) convolution?"""
    if not (len(x) == len(w) == len(out) >= 3) or x[0] != out[0]:
        return False
    inner, outer = (out, x) if transposed else (x, out)
    return w[0] == outer[1] and w[1] > 0 and inner[1] % w[1] == 0


def _bytes(*tensors: tuple[Shape, int]) -> int:
    return sum(math.prod(shape) * size for shape, size in tensors)


def _forward(name: str, call: Call, seen: ConvShapes) -> Cost | None:
    x, w = call.tensor(0), call.tensor(1)
    if x is None or w is None or len(x.shape) != len(w.shape) or len(x.shape) < 3:
        return None
    places = _shifted(_FORWARD[name], call)
    transposed = _transposed(name, call, places.transposed)
    out = _output(x.shape, w.shape, places, call, transposed)
    if out is None:  # not in the concrete inputs: the backward call on x and w says it
        out = seen.output(x.shape, w.shape)
        transposed = transposed if transposed is not None else seen.transposed(x.shape, w.shape)
    if out is None or transposed is None or not _fits(x.shape, w.shape, out, transposed):
        return None
    bias = call.tensor(places.bias)
    size = x.dtype.size
    read = x.bytes + w.bytes + (bias.bytes if bias is not None else 0)
    flops = _flops(x.shape, w.shape, out, transposed)
    return Cost("convolution", flops, read + math.prod(out) * size, x.dtype.precision, True)


def _shifted(places: Forward, call: Call) -> Forward:
    """Older signatures of the same name with a bias at 2 (a tensor, or None as ``''``)."""
    if not places.shift_without_bias or len(call.types) < 3 or _is_list(call.types[2]):
        return places

    def plus(at: int | None) -> int | None:
        return at + 1 if at is not None else None

    return places._replace(
        stride=plus(places.stride),
        padding=plus(places.padding),
        dilation=plus(places.dilation),
        groups=plus(places.groups),
        output_padding=plus(places.output_padding),
    )


def _is_list(kind: str) -> bool:
    return "List" in kind or kind.endswith("[]")


def _transposed(name: str, call: Call, kind: bool | int | None) -> bool | None:
    if kind is None or isinstance(kind, bool):
        return kind
    value = call.value(kind)
    return {"True": True, "False": False, "1": True, "0": False}.get(value or "")


def _output(
    x: Shape, w: Shape, places: Forward, call: Call, transposed: bool | None
) -> Shape | None:
    """The output's shape from the concrete stride, padding, dilation; None: not recorded."""
    if transposed is None or places.stride is None or places.padding is None:
        return None
    spatial = len(x) - 2
    stride, padding = call.ints(places.stride), _padding(call, places.padding, spatial)
    dilation = call.ints(places.dilation) if places.dilation is not None else [1]
    extra = [0]
    if transposed and places.output_padding is not None:
        extra = call.ints(places.output_padding) or []
    groups = call.ints(places.groups) if places.groups is not None else [1]
    if not (stride and padding and dilation and extra and groups) or groups[0] <= 0:
        return None
    sizes = tuple(
        _out_size(
            x[2 + d],
            w[2 + d],
            (_at(stride, d), _at(padding, d), _at(dilation, d), _at(extra, d)),
            transposed,
        )
        for d in range(spatial)
    )
    if any(s <= 0 for s in sizes):
        return None
    channels = w[1] * groups[0] if transposed else w[0]
    return (x[0], channels, *sizes)


def _padding(call: Call, at: int, spatial: int) -> list[int] | None:
    value = call.value(at)
    if value in ("valid", "'valid'"):
        return [0] * spatial
    return call.ints(at)


def _at(values: list[int], d: int) -> int:
    return values[d] if d < len(values) else values[-1]


def _out_size(size: int, kernel: int, args: tuple[int, int, int, int], transposed: bool) -> int:
    """One spatial size of the output, from (stride, padding, dilation, output padding)."""
    stride, padding, dilation, extra = args
    reach = dilation * (kernel - 1)
    if transposed:
        return (size - 1) * stride - 2 * padding + reach + extra + 1
    if stride <= 0:
        return 0
    return (size + 2 * padding - reach - 1) // stride + 1


def _whole_backward(name: str, call: Call, seen: ConvShapes) -> Cost | None:
    places = _WHOLE_BACKWARD[name]
    go, x, w = (call.tensor(i) for i in places.tensors)
    transposed = _transposed(name, call, places.transposed)
    mask = _mask(call.value(len(call.dims) - 1))
    if go is None or x is None or w is None or transposed is None or mask is None:
        return None
    if not _fits(x.shape, w.shape, go.shape, transposed):
        return None
    one = _flops(x.shape, w.shape, go.shape, transposed)
    size = go.dtype.size
    flops = one * (mask[0] + mask[1]) + (go.elements if mask[2] else 0)
    read = go.bytes + (w.bytes if mask[0] else 0) + (x.bytes if mask[1] else 0)
    written = (x.elements if mask[0] else 0) + (w.elements if mask[1] else 0)
    channels = go.shape[1] if mask[2] else 0
    return Cost("convolution", flops, read + (written + channels) * size, go.dtype.precision, True)


def _mask(value: str | None) -> tuple[bool, bool, bool] | None:
    """``[True, True, False]`` (the bias's may be absent: then False); None: not recorded."""
    if value is None:
        return None
    words = value.strip("[]").replace(" ", "").split(",")
    flags = [{"True": True, "False": False, "1": True, "0": False}.get(w) for w in words]
    if len(flags) not in (2, 3) or any(f is None for f in flags):
        return None
    first, second, *rest = (bool(f) for f in flags)
    return (first, second, rest[0] if rest else False)


def _input_grad(name: str, call: Call, seen: ConvShapes) -> Cost | None:
    go_at, w_at, size_at, transposed = _INPUT_GRAD[name]
    go, w = call.tensor(go_at), call.tensor(w_at)
    if go is None or w is None:
        return None
    given = call.ints(size_at) if size_at is not None else None
    x = tuple(given) if given else seen.input(go.shape, w.shape)
    if x is None or not _fits(x, w.shape, go.shape, transposed):
        return None
    flops = _flops(x, w.shape, go.shape, transposed)
    moved = go.bytes + w.bytes + math.prod(x) * go.dtype.size
    return Cost("convolution", flops, moved, go.dtype.precision, True)


def _weight_grad(name: str, call: Call, seen: ConvShapes) -> Cost | None:
    go_at, x_at, size_at, transposed = _WEIGHT_GRAD[name]
    go, x = call.tensor(go_at), call.tensor(x_at)
    if go is None or x is None:
        return None
    given = call.ints(size_at)
    w = tuple(given) if given else seen.weight(go.shape, x.shape)
    if w is None or not _fits(x.shape, w, go.shape, transposed):
        return None
    flops = _flops(x.shape, w, go.shape, transposed)
    moved = go.bytes + x.bytes + math.prod(w) * go.dtype.size
    return Cost("convolution", flops, moved, go.dtype.precision, True)


def _bias_grad(name: str, call: Call, seen: ConvShapes) -> Cost | None:
    """A reduction of the output's gradient to one value per channel."""
    go = call.tensor(0)
    if go is None or len(go.shape) < 2:
        return None
    moved = go.bytes + go.shape[1] * go.dtype.size
    return Cost("reduction", go.elements, moved, go.dtype.precision, False)


Model = Callable[[str, Call, ConvShapes], Cost | None]

CONV_MODELS: dict[str, Model] = {
    **dict.fromkeys(_FORWARD, _forward),
    **dict.fromkeys(_WHOLE_BACKWARD, _whole_backward),
    **dict.fromkeys(_INPUT_GRAD, _input_grad),
    **dict.fromkeys(_WEIGHT_GRAD, _weight_grad),
}
BIAS_GRAD_MODELS: dict[str, Model] = dict.fromkeys(_BIAS_GRAD, _bias_grad)
