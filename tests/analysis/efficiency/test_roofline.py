"""The roofline per operator: FLOPs and bytes from the recorded shapes, against TraceLens's
report of the same trace, a plain formula on every real trace, and hand-built traces."""

from __future__ import annotations

import ast
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import steptrace
from steptrace.analysis.efficiency.hardware import DevicePeaks, peaks_for
from steptrace.analysis.efficiency.roofline import RooflineRow
from steptrace.trace.table import Device
from tests import tracegen
from tests.conftest import WriteTrace, report_of, trace_params
from tests.public_traces import B200, MI300X, TRACELENS_H100, public_report

MIB = 1 << 20
GEMM_OPERATORS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")


def _tracelens_rows(sheets: tuple[str, ...]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """TraceLens's rows of these sheets, summed over rows that differ only in what steptrace
    does not group by (strides): by operator, dims, types and concrete inputs."""
    merged: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for row in json.loads(TRACELENS_H100.read_text(encoding="utf-8"))["rows"]:
        if row["sheet"] not in sheets:
            continue
        key = (
            row["operator"],
            json.dumps(ast.literal_eval(row["input_dims"])),
            json.dumps(ast.literal_eval(row["input_types"])),
            json.dumps(ast.literal_eval(row["concrete_inputs"])),
        )
        held = merged.setdefault(key, {**row, "calls": 0, "kernel_time_us_sum": 0.0})
        held["calls"] += row["calls"]
        held["kernel_time_us_sum"] += row["kernel_time_us_sum"]
    return merged


def _ours(rows: tuple[RooflineRow, ...]) -> dict[tuple[str, str, str, str], RooflineRow]:
    return {
        (
            r.operator,
            _canonical(r.input_shapes),
            _canonical(r.input_types),
            _canonical(r.concrete_inputs),
        ): r
        for r in rows
    }


def _canonical(text: str | None) -> str:
    return json.dumps(json.loads(text)) if text else ""


@pytest.mark.parametrize(
    "sheets", [("GEMM", "SDPA_fwd"), ("BinaryElementwise", "UnaryElementwise")], ids=str
)
def test_tracelens_h100_qwen_rows_are_reproduced(sheets: tuple[str, ...]) -> None:
    analysis = report_of("tracelens_h100").analysis
    ours = _ours(analysis.roofline)
    expected = _tracelens_rows(sheets)
    assert expected
    for key, row in expected.items():
        got = ours.get(key)
        assert got is not None, f"no row for {key}"
        assert got.calls == row["calls"], key
        assert got.flops_per_call == round(row["gflops"] * 1e9), key  # exact
        assert got.bytes_per_call == round(row["data_moved_mib"] * MIB), key  # exact
        assert got.gpu_ms == pytest.approx(row["kernel_time_us_sum"] / 1000, rel=0.02), key


def _gemm_flops(operator: str, shapes: list[list[int]]) -> int:
    """The GEMM formulas, written out once more, plainly."""
    if operator == "aten::mm":
        (m, k), (_, n) = shapes[0], shapes[1]
        return 2 * m * n * k
    if operator == "aten::addmm":
        (m, k), (_, n) = shapes[1], shapes[2]
        return 2 * m * n * k + m * n
    if operator == "aten::bmm":
        (b, m, k), (_, _, n) = shapes[0], shapes[1]
        return 2 * b * m * n * k
    (b, m, k), (_, _, n) = shapes[1], shapes[2]  # baddbmm
    return 2 * b * m * n * k + b * m * n


def _with_shapes() -> list[Any]:
    shared = [p for p in trace_params() if p.values[0] is not None]
    return [*shared, pytest.param(B200, id="b200"), pytest.param(MI300X, id="mi300x")]


@pytest.mark.parametrize("path", _with_shapes())
def test_every_gemm_row_holds_the_formula_and_its_achieved_figures(path: Path) -> None:
    if path.parent.name == "public":
        analysis = public_report(path).analysis
    else:
        analysis = report_of(path.name).analysis
    peaks = analysis.roofline_peaks
    for row in analysis.roofline:
        time_ms = row.gpu_ms if analysis.trace.gpu_observed else row.cpu_ms
        assert time_ms is not None and (row.gpu_ms is None) != analysis.trace.gpu_observed
        if row.operator in GEMM_OPERATORS and row.model == "GEMM":
            shapes = json.loads(row.input_shapes or "[]")
            assert row.flops_per_call == _gemm_flops(row.operator, shapes)
        if row.flops_per_call is None or row.bytes_per_call is None or time_ms <= 0:
            assert row.achieved_tflops is None
            continue
        assert row.achieved_tflops == pytest.approx(
            row.calls * row.flops_per_call / (time_ms / 1e3) / 1e12
        )
        assert row.achieved_tbps == pytest.approx(
            row.calls * row.bytes_per_call / (time_ms / 1e3) / 1e12
        )
        if row.peak_tflops is None or row.peak_tbps is None:
            assert row.roofline_pct is None
            continue
        assert peaks is not None and row.peak_tbps == peaks.memory_tbps
        if row.flops_per_call > 0:
            assert row.intensity is not None
            attainable = min(row.peak_tflops, row.intensity * row.peak_tbps)
            assert row.roofline_pct == pytest.approx(100 * row.achieved_tflops / attainable)
            lower = "compute" if row.peak_tflops <= row.intensity * row.peak_tbps else "memory"
            assert row.bound == lower


def test_h100_peaks_come_from_its_datasheet_row() -> None:
    analysis = report_of("tracelens_h100").analysis
    assert analysis.roofline_peaks is not None
    assert analysis.roofline_peaks.name == "H100 SXM"
    (sdpa,) = [r for r in analysis.roofline if "flash_attention" in r.operator]
    assert sdpa.precision == "bfloat16" and sdpa.peak_tflops == 989.5
    fp32_bmm = next(r for r in analysis.roofline if r.operator == "aten::bmm")
    assert fp32_bmm.precision == "float32"  # cutlass_80_simt_sgemm: no tensor cores


@pytest.mark.parametrize(
    ("name", "memory_gb", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", 85, "H100 SXM"),
        ("NVIDIA H100 PCIe", 85, "H100 PCIe"),
        ("NVIDIA A100-SXM4-80GB", 85, "A100 80GB SXM"),
        ("NVIDIA A100 80GB PCIe", 85, "A100 80GB PCIe"),
        ("NVIDIA A100-PG509-200", 42, "A100 40GB"),
        ("NVIDIA H200", 150, "H200 SXM"),
        ("NVIDIA B200", 191, "B200"),
        ("Tesla V100-SXM2-32GB", 34, "V100 SXM2"),
        ("Tesla V100-PCIE-16GB", 16, "V100 PCIe"),
        ("AMD Instinct MI300X VF", 205, "MI300X"),
        ("AMD Instinct MI325X", 270, "MI325X"),
        ("AMD Instinct MI250X", 68, "MI250X (one GCD)"),
        ("AMD Instinct MI250", 68, "MI250 (one GCD)"),
        ("AMD Instinct MI250X / MI250", 68, None),  # names both: not guessed
        ("AMD Radeon Graphics", 68, None),  # ROCm's name for an MI250 GCD: not guessed
        ("Quadro GP100", 17, None),
    ],
)
def test_devices_are_matched_by_name_and_memory(
    name: str, memory_gb: float, expected: str | None
) -> None:
    found = peaks_for((Device(0, name, None, int(memory_gb * 1e9)),))
    assert (found.name if found else None) == expected


def _synthetic(gpu: bool) -> list[dict[str, Any]]:
    """linear > (t, addmm > copy_ of the bias); mul; a custom op: only addmm, mul (and, on
    the GPU, the custom op) are rows; addmm holds the copy's kernel and its own."""
    f32 = ["float", "float", "float", "Scalar", "Scalar"]
    events = [
        tracegen.step(1, 0, 1000),
        tracegen.cpu("aten::linear", 10, 190, **_inputs([[64, 256], [512, 256], [512]], f32[:3])),
        tracegen.cpu("aten::t", 12, 2, **_inputs([[512, 256]], ["float"])),
        tracegen.cpu(
            "aten::addmm", 20, 170, **_inputs([[512], [64, 256], [256, 512], [], []], f32)
        ),
        tracegen.cpu(
            "aten::copy_",
            25,
            10,
            **_inputs([[64, 512], [64, 512], []], ["float", "float", "Scalar"]),
        ),
        tracegen.cpu("aten::mul", 210, 50, **_inputs([[64, 512], [64, 512]], ["float", "float"])),
        tracegen.cpu("vllm::custom", 270, 30, **_inputs([[64, 512]], ["float"])),
    ]
    if gpu:
        events += [
            tracegen.launch(26, 5, 1),
            tracegen.kernel("elementwise_copy_kernel", 300, 10, correlation=1),
            tracegen.launch(40, 5, 2),
            tracegen.kernel("volta_sgemm_128x64_nn", 310, 90, correlation=2),
            tracegen.launch(215, 5, 3),
            tracegen.kernel("vectorized_elementwise_kernel", 400, 20, correlation=3),
            tracegen.launch(275, 5, 4),
            tracegen.kernel("custom_kernel", 420, 80, correlation=4),
        ]
    return events


def _inputs(dims: list[Any], types: list[str]) -> dict[str, Any]:
    return {"Input Dims": dims, "Input type": types, "Concrete Inputs": [""] * len(dims)}


def _document(events: list[dict[str, Any]], name: str) -> dict[str, Any]:
    document = tracegen.document(events, gpu_devices=bool(name))
    if name:
        document["deviceProperties"][0].update(name=name, totalGlobalMem=85 * 10**9)
    return document


def test_rows_on_the_gpu_hold_the_work_of_their_children(write_trace: WriteTrace) -> None:
    path = write_trace(_document(_synthetic(gpu=True), "NVIDIA H100 80GB HBM3"))
    rows = {r.operator: r for r in steptrace.analyze(path).analysis.roofline}
    assert list(rows) == ["aten::addmm", "vllm::custom", "aten::mul"]  # by GPU time
    addmm = rows["aten::addmm"]
    assert addmm.gpu_ms == pytest.approx(0.100)  # the bias copy's kernel and the GEMM's
    assert addmm.flops_per_call == 2 * 64 * 512 * 256 + 64 * 512
    assert addmm.bytes_per_call == 4 * (512 + 64 * 256 + 256 * 512 + 64 * 512)
    assert addmm.precision == "float32" and addmm.peak_tflops == 67.0  # no tensor cores
    assert addmm.achieved_tflops == pytest.approx(addmm.flops_per_call / 100e-6 / 1e12)
    custom = rows["vllm::custom"]
    assert custom.model is None and custom.flops_per_call is None and custom.roofline_pct is None
    assert custom.gpu_ms == pytest.approx(0.080)
    assert rows["aten::mul"].bytes_per_call == 3 * 64 * 512 * 4


def test_rows_on_the_cpu_are_timed_on_the_cpu(write_trace: WriteTrace) -> None:
    path = write_trace(_document(_synthetic(gpu=False), ""))
    analysis = steptrace.analyze(path).analysis
    rows = {r.operator: r for r in analysis.roofline}
    assert list(rows) == ["aten::addmm", "aten::mul"]  # no model: not listed on a CPU trace
    assert rows["aten::addmm"].gpu_ms is None and rows["aten::addmm"].cpu_ms == pytest.approx(0.170)
    assert rows["aten::addmm"].achieved_tflops == pytest.approx(
        rows["aten::addmm"].flops_per_call / 170e-6 / 1e12  # type: ignore[operator]
    )
    assert analysis.roofline_peaks is None and rows["aten::addmm"].roofline_pct is None


def test_given_peaks_replace_the_datasheet_s(write_trace: WriteTrace) -> None:
    path = write_trace(_document(_synthetic(gpu=True), "NVIDIA H100 80GB HBM3"))
    measured = DevicePeaks(name="measured", matrix_tflops={"float32": 50.0}, memory_tbps=3.0)
    analysis = steptrace.analyze(path, peaks=measured).analysis
    addmm = next(r for r in analysis.roofline if r.operator == "aten::addmm")
    assert addmm.peak_tflops == 50.0 and addmm.peak_tbps == 3.0
    assert analysis.roofline_peaks is not None
    assert analysis.roofline_peaks.matrix_tflops["bfloat16"] == 989.5  # the rest: the table's


def test_a_trace_without_shapes_has_no_rows() -> None:
    analysis = report_of("cpu_train_trace.json.gz").analysis
    assert analysis.roofline == ()


def test_gpu_time_per_row_is_the_union_of_what_it_launched() -> None:
    """Against an independent sum: per TraceLens row the kernel time, per call the union."""
    analysis = report_of("tracelens_h100").analysis
    held = defaultdict(float)
    for row in analysis.roofline:
        held[row.operator] += row.gpu_ms or 0.0
    ops = {o.name: o for o in analysis.operators}
    # the GEMMs launch their kernels themselves: the rows hold exactly what they launched
    for name in ("aten::mm", "aten::addmm"):
        assert held[name] == pytest.approx(ops[name].gpu_ms, rel=1e-9)
    assert math.isclose(
        held["aten::_scaled_dot_product_flash_attention"],
        ops["aten::_flash_attention_forward"].gpu_ms or 0.0,
    )


def test_a_copy_from_the_host_is_a_transfer_held_to_no_roof(write_trace: WriteTrace) -> None:
    events = [
        tracegen.step(1, 0, 1000),
        tracegen.cpu(
            "aten::copy_", 10, 100, **_inputs([[1024], [1024], []], ["float", "float", "Bool"])
        ),
        tracegen.launch(20, 5, 1, name="cudaMemcpyAsync"),
        tracegen.gpu(
            "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 200, 4, correlation=1, bytes=4096
        ),
    ]
    path = write_trace(_document(events, "NVIDIA H100 80GB HBM3"))
    (row,) = steptrace.analyze(path).analysis.roofline
    assert row.model == "host transfer" and row.flops_per_call == 0
    assert row.bytes_per_call == 4096  # what the copy carried, not source plus target
    assert row.achieved_tbps == pytest.approx(4096 / 4e-6 / 1e12)
    assert row.peak_tbps is None and row.roofline_pct is None and row.bound is None
