"""Convolutions on the roofline, every vintage: a 2021 trace's cuDNN calls (no concrete
inputs) against a reference joined by autograd's sequence numbers, torch 2.13's calls
against torch's own FLOP counter, and the backends' signatures one by one."""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter, defaultdict
from typing import Any

import pytest

from steptrace.analysis.efficiency.conv_models import CONV_MODELS, ConvShapes
from steptrace.analysis.efficiency.op_inputs import Call
from steptrace.analysis.efficiency.op_models import cost, rank
from tests.conftest import gpu_trace, report_of

V100_RESNET = "kineto_v100_resnet50"
FLOAT = 4  # bytes: the trace's tensors are float32
GRADIENTS = ("aten::cudnn_convolution_backward_input", "aten::cudnn_convolution_backward_weight")


def _events(name_part: str) -> list[dict[str, Any]]:
    with gzip.open(gpu_trace(name_part), "rt", encoding="utf-8") as f:
        events: list[dict[str, Any]] = json.load(f)["traceEvents"]
    return events


def _inside(outer: dict[str, Any], inner: dict[str, Any]) -> bool:
    return (
        outer["tid"] == inner["tid"]
        and outer["ts"] <= inner["ts"]
        and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
    )


def _reference(events: list[dict[str, Any]]) -> dict[tuple[str, str], Counter[tuple[int, int]]]:
    """Per (operator, input dims as recorded): how many of its calls cost each (FLOPs,
    bytes), from the shapes autograd recorded for the same convolution: a forward call is
    joined to its backward node by sequence number, a gradient call to the backward call
    around it."""
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("Operator", "cpu_op")]
    nodes = {
        e["args"]["Sequence number"]: e
        for e in ops
        if e["name"] == "CudnnConvolutionBackward" and "Sequence number" in e["args"]
    }
    whole = [e for e in ops if e["name"] == "aten::cudnn_convolution_backward"]

    def around(call: dict[str, Any]) -> dict[str, Any]:
        (found,) = [w for w in whole if _inside(w, call)]
        return found

    found: dict[tuple[str, str], Counter[tuple[int, int]]] = defaultdict(Counter)
    for e in ops:
        name, dims = e["name"], e["args"].get("Input Dims")
        if name == "aten::cudnn_convolution":
            node = nodes[e["args"]["Sequence number"]]
            (backward,) = [w for w in whole if _inside(node, w)]
            x, w = dims[0], dims[1]
            out = backward["args"]["Input Dims"][1]
        elif name in GRADIENTS:
            x, out, w = around(e)["args"]["Input Dims"][:3]
        else:
            continue
        flops = 2 * math.prod(w[1:]) * math.prod(out)
        moved = (math.prod(x) + math.prod(w) + math.prod(out)) * FLOAT
        found[(name, json.dumps(dims))][(flops, moved)] += 1
    return found


def test_a_2021_trace_s_convolutions_are_costed_as_autograd_recorded_them() -> None:
    """Every forward convolution and every gradient is costed as its own autograd record
    says: a gradient whose missing shape two convolutions share (a 3×3 at stride 1 and 2)
    is a row per convolution, joined to the backward call around it."""
    reference = _reference(_events(V100_RESNET))
    rows = [r for r in report_of(V100_RESNET).analysis.roofline if "convolution" in r.operator]
    assert {r.operator for r in rows} == {"aten::cudnn_convolution", *GRADIENTS}
    ours: dict[tuple[str, str], Counter[tuple[int, int]]] = defaultdict(Counter)
    for row in rows:
        assert row.model == "convolution", row
        assert row.flops_per_call is not None and row.bytes_per_call is not None
        key = (row.operator, json.dumps(json.loads(row.input_shapes or "")))
        ours[key][(row.flops_per_call, row.bytes_per_call)] += row.calls
    assert ours == reference
    assert any(len(costs) > 1 for costs in reference.values())  # the shared shapes exist


def test_a_2021_trace_s_batch_norm_backward_is_on_the_roofline() -> None:
    rows = [
        r
        for r in report_of(V100_RESNET).analysis.roofline
        if r.operator == "aten::cudnn_batch_norm_backward"
    ]
    assert rows
    for row in rows:
        x, grad, *rest = json.loads(row.input_shapes or "")
        assert row.model == "normalization"
        assert row.flops_per_call == math.prod(x)
        assert row.bytes_per_call == FLOAT * (
            math.prod(x) + math.prod(grad) + sum(math.prod(s) for s in rest if s) + math.prod(x)
        )
        assert row.bound == "memory"


def test_the_roofline_covers_most_of_a_2021_resnet_s_gpu_time() -> None:
    """The convolutions (57.6% of its GPU time) were all without a model before."""
    analysis = report_of(V100_RESNET).analysis
    covered = analysis.roofline_coverage
    assert covered is not None
    assert covered.share >= 0.95
    assert not [n for n in covered.unmodelled if "conv" in n]
    assert covered.compute_ms > covered.memory_ms  # the convolutions are compute-bound


torch = pytest.importorskip("torch")


def _step(groups: int) -> None:
    """Strided, dilated (grouped), transposed and 1-d convolutions, forward and backward;
    the first's input is a leaf without a gradient (output_mask [False, True, True])."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, stride=2, padding=1),
        torch.nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=groups, bias=False),
        torch.nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1),
    )
    conv1d = torch.nn.Conv1d(4, 6, 5, stride=3, padding="valid")
    y = model(torch.randn(2, 3, 17, 19))
    z = conv1d(y.flatten(2)[:, :, :40])
    (y.sum() + z.sum()).backward()


def _captured_convolutions(tmp_path: Any, groups: int = 1) -> list[dict[str, Any]]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        _step(groups)
    path = tmp_path / "conv.json"
    prof.export_chrome_trace(str(path))
    return [e for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "cpu_op"]


def _torch_flops(groups: int = 1) -> dict[str, int]:
    """torch's own count of the same work (torch.utils.flop_counter), per operator."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        _step(groups)
    return {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}


def _costed(event: dict[str, Any], seen: ConvShapes) -> int | None:
    args = event["args"]
    call = Call.parse(
        json.dumps(args["Input Dims"]),
        json.dumps(args["Input type"]),
        None,
        json.dumps(args.get("Concrete Inputs")) if "Concrete Inputs" in args else None,
    )
    assert call is not None
    found = cost(event["name"], call, seen)
    return found.flops if found is not None else None


def _by_name(events: list[dict[str, Any]]) -> dict[str, int]:
    """Our FLOPs of the generic calls, summed per operator, less the bias gradients (a
    reduction: torch's counter leaves them out)."""
    by_name: dict[str, int] = defaultdict(int)
    for event in events:
        if event["name"] in ("aten::convolution", "aten::convolution_backward"):
            flops = _costed(event, ConvShapes())
            assert flops is not None, event
            if event["name"] == "aten::convolution_backward":
                go = event["args"]["Input Dims"][0]
                mask = event["args"]["Concrete Inputs"][-1]
                flops -= math.prod(go) if mask.endswith("True]") else 0
            by_name[event["name"]] += flops
    return by_name


def test_torch_2_s_convolutions_cost_what_torch_counts(tmp_path: Any) -> None:
    """Each generic call costed as torch's FLOP counter counts the same step."""
    ours, counted = _by_name(_captured_convolutions(tmp_path)), _torch_flops()
    assert ours["aten::convolution"] == counted["aten.convolution"]
    assert ours["aten::convolution_backward"] == counted["aten.convolution_backward"]


def test_a_grouped_convolution_s_gradients_each_cost_its_forward(tmp_path: Any) -> None:
    """torch's counter agrees on the forward; its weight gradient counts every input
    channel against every output channel, groups or not (torch 2.13's
    flop_counter.conv_backward_flop), so the backward is held to twice the forward here."""
    events = _captured_convolutions(tmp_path, groups=4)
    assert _by_name(events)["aten::convolution"] == _torch_flops(4)["aten.convolution"]
    grouped = [e for e in events if [8, 2, 3, 3] in e["args"].get("Input Dims", [])]
    forward = [e for e in grouped if e["name"] == "aten::convolution"]
    backward = [e for e in grouped if e["name"] == "aten::convolution_backward"]
    assert len(forward) == len(backward) == 1
    assert _costed(backward[0], ConvShapes()) == 2 * (_costed(forward[0], ConvShapes()) or 0)


def test_a_backend_s_own_call_costs_what_the_generic_call_around_it_costs(tmp_path: Any) -> None:
    """mkldnn's forward (padding before stride in its signature) against the
    ``aten::convolution`` around it."""
    events = _captured_convolutions(tmp_path)
    generic = [e for e in events if e["name"] == "aten::convolution"]
    inner = [e for e in events if e["name"] in CONV_MODELS and e["name"] != "aten::convolution"]
    backends = [e for e in inner if not e["name"].startswith(("aten::conv", "aten::_conv"))]
    assert backends, sorted({e["name"] for e in inner})
    for event in backends:
        (outer,) = [g for g in generic if _inside(g, event)]
        if event["name"].endswith("backward"):
            continue
        assert _costed(event, ConvShapes()) == _costed(outer, ConvShapes()), event["name"]


def _call(dims: list[Any], types: list[str], concrete: list[str] | None = None) -> Call:
    parsed = Call.parse(
        json.dumps(dims), json.dumps(types), None, json.dumps(concrete) if concrete else None
    )
    assert parsed is not None
    return parsed


X, W, OUT = [8, 16, 28, 28], [32, 16, 3, 3], [8, 32, 14, 14]
DIRECT = 2 * math.prod(W[1:]) * math.prod(OUT)  # one pass of the convolution


@pytest.mark.parametrize(
    ("name", "dims", "types", "concrete", "passes"),
    [
        # torch <= 1.7: a bias before the padding; torch 1.8 to 2.x: none
        (
            "aten::cudnn_convolution",
            [X, W, [32], [], [], [], [], [], []],
            [
                "float",
                "float",
                "float",
                "GenericList",
                "GenericList",
                "GenericList",
                "Int",
                "Bool",
                "Bool",
            ],
            ["", "", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False"],
            1,
        ),
        (
            "aten::cudnn_convolution",
            [X, W, [], [], [], [], [], [], []],
            [
                "float",
                "float",
                "ScalarList",
                "ScalarList",
                "ScalarList",
                "Int",
                "Bool",
                "Bool",
                "Bool",
            ],
            ["", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False", "True"],
            1,
        ),
        (
            "aten::miopen_convolution",
            [X, W, [], [], [], [], [], [], []],
            ["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Int", "Bool", "Bool"],
            ["", "", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False"],
            1,
        ),
        (
            "aten::miopen_convolution_backward",
            [X, OUT, W, [], [], [], [], [], [], []],
            [
                "float",
                "float",
                "float",
                "ScalarList",
                "ScalarList",
                "ScalarList",
                "Int",
                "Bool",
                "Bool",
                "GenericList",
            ],
            [
                "",
                "",
                "",
                "[1, 1]",
                "[2, 2]",
                "[1, 1]",
                "1",
                "False",
                "False",
                "[True, True, False]",
            ],
            2,
        ),
        (
            "aten::miopen_convolution_backward_input",
            [[], OUT, W, [], [], [], [], [], []],
            [
                "GenericList",
                "float",
                "float",
                "ScalarList",
                "ScalarList",
                "ScalarList",
                "Int",
                "Bool",
                "Bool",
            ],
            [str(X), "", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False"],
            1,
        ),
        (
            "aten::miopen_convolution_backward_weight",
            [[], OUT, X, [], [], [], [], [], []],
            [
                "GenericList",
                "float",
                "float",
                "ScalarList",
                "ScalarList",
                "ScalarList",
                "Int",
                "Bool",
                "Bool",
            ],
            [str(W), "", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False"],
            1,
        ),
        (
            "aten::convolution_backward",
            [OUT, X, W, [], [], [], [], [], [], [], []],
            [
                "float",
                "float",
                "float",
                "ScalarList",
                "ScalarList",
                "ScalarList",
                "ScalarList",
                "Scalar",
                "ScalarList",
                "Scalar",
                "ScalarList",
            ],
            [
                "",
                "",
                "",
                "[32]",
                "[2, 2]",
                "[1, 1]",
                "[1, 1]",
                "False",
                "[0, 0]",
                "1",
                "[False, True, False]",
            ],
            1,
        ),
    ],
)
def test_every_backend_s_signature(
    name: str, dims: list[Any], types: list[str], concrete: list[str], passes: int
) -> None:
    found = cost(name, _call(dims, types, concrete))
    assert found is not None
    assert (found.model, found.flops, found.matrix) == ("convolution", passes * DIRECT, True)
    assert rank(name) == 2


def test_without_concrete_inputs_the_output_comes_from_the_backward_call_alone() -> None:
    forward = _call(
        [X, W, [], [], [], [], [], [], []],
        ["float", "float", *["GenericList"] * 3, "Int", "Bool", "Bool", "Bool"],
    )
    backward = _call(
        [X, OUT, W, [], [], [], [], [], [], [], []],
        [
            "float",
            "float",
            "float",
            *["GenericList"] * 3,
            "Int",
            "Bool",
            "Bool",
            "Bool",
            "GenericList",
        ],
    )
    assert cost("aten::cudnn_convolution", forward) is None  # not known alone
    seen = ConvShapes.learn([("aten::cudnn_convolution_backward", backward)])
    found = cost("aten::cudnn_convolution", forward, seen)
    assert found is not None and found.flops == DIRECT
    assert found.bytes == FLOAT * (math.prod(X) + math.prod(W) + math.prod(OUT))
    # two convolutions on the same input and weight, two outputs: not known
    other = _call(
        [X, [8, 32, 28, 28], W, [], [], [], [], [], [], [], []],
        [
            "float",
            "float",
            "float",
            *["GenericList"] * 3,
            "Int",
            "Bool",
            "Bool",
            "Bool",
            "GenericList",
        ],
    )
    both = ConvShapes.learn(
        [
            ("aten::cudnn_convolution_backward", backward),
            ("aten::cudnn_convolution_backward", other),
        ]
    )
    assert cost("aten::cudnn_convolution", forward, both) is None
