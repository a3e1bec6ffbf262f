"""Kernel kinds from names: one table of patterns, reviewed on every real trace."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from steptrace.analysis.efficiency.kernel_kinds import (
    DEFAULT,
    KernelKinds,
    category_of,
    kinds_from_json,
    without_parameters,
)
from steptrace.cli import app
from steptrace.errors import TraceError
from tests.conftest import report_of, trace_params
from tests.public_traces import B200, MI300X, public_report

# Each real trace's kernels as an expert reads them: (part of the name, kind). Every kernel
# with at least MAJOR of its trace's kernel time must be named here, so that a pattern that
# starts misreading a real kernel, or a kernel no pattern was reviewed for, fails.
MAJOR = 0.01
REVIEWED: dict[str, tuple[tuple[str, str], ...]] = {
    "a100_2rank": (
        ("ncclKernel_AllReduce", "communication"),
        ("nchwToNhwcKernel", "elementwise"),
        ("nhwcToNchwKernel", "elementwise"),
        ("bn_bw_1C11", "reduction"),
        ("bn_fw_tr_1C11", "reduction"),
        ("vectorized_elementwise_kernel", "elementwise"),
        ("s1688gemm", "GEMM"),
        ("ImplicitGemmConvolution", "convolution"),
        ("max_pool_backward", "reduction"),
    ),
    "a100_alexnet": (
        ("ampere_sgemm", "GEMM"),
        ("ampere_gcgemm", "GEMM"),
        ("scudnn", "convolution"),
        ("fprop_implicit_gemm", "convolution"),
        ("elementwise_kernel", "elementwise"),
        ("max_pool_forward", "reduction"),
        ("fft2d_", "convolution"),  # cuDNN's FFT convolution
        ("nchwToNhwcKernel", "elementwise"),
        ("adaptive_average_pool", "reduction"),
    ),
    "a100_cuda_event_sync__": (
        ("spin_kernel", "other"),  # torch.cuda._sleep: waits, computes nothing
        ("reduce_kernel", "reduction"),
        ("FillFunctor", "elementwise"),
        ("compare_scalar_kernel", "elementwise"),
    ),
    "a100_cuda_event_sync_multistream": (("ampere_sgemm", "GEMM"),),
    "a100_triton": (("triton_poi_", "elementwise"),),
    "amd_mi250": (
        ("Cijk_", "GEMM"),
        ("reduce_kernel", "reduction"),
        ("elementwise_kernel", "elementwise"),
        ("multi_tensor_apply_kernel", "elementwise"),
    ),
    "gp100": (
        ("elementwise_kernel", "elementwise"),
        ("gemmk1_kernel", "GEMM"),
        ("gemv2N_kernel", "GEMM"),
        ("gemv2T_kernel", "GEMM"),
        ("reduce_kernel", "reduction"),
    ),
    "kineto_v100": (
        ("dgrad_engine", "convolution"),
        ("wgrad_alg0_engine", "convolution"),
        ("implicit_convolve_sgemm", "convolution"),
        ("explicit_convolve_sgemm", "convolution"),
        ("scudnn", "convolution"),
        ("winograd", "convolution"),
        ("bn_bw_1C11", "reduction"),
        ("bn_fw_tr_1C11", "reduction"),
        ("bn_fw_inf_1C11", "reduction"),
        ("elementwise_kernel", "elementwise"),
        ("volta_sgemm", "GEMM"),
        ("max_pool", "reduction"),
        ("reduce_kernel", "reduction"),
        ("CatArrayBatchedCopy", "elementwise"),
    ),
    "sampled_128rank": (
        ("ncclKernel_SendRecv", "communication"),
        ("split_embedding", "other"),  # embedding lookups and their fused optimizer
        ("permute_pooled_embs_kernel", "other"),
        ("s1688gemm", "GEMM"),
        ("ampere_sgemm", "GEMM"),
        ("DeviceRadixSort", "other"),
        ("CatArrayBatchedCopy", "elementwise"),
    ),
    "tracelens_h100": (
        ("sm90_xmma_gemm", "GEMM"),
        ("flash_fwd_kernel", "attention"),
        ("elementwise_kernel", "elementwise"),
        ("CatArrayBatchedCopy", "elementwise"),
        ("reduce_kernel", "reduction"),
    ),
    "v100_1rank": (
        ("elementwise_kernel", "elementwise"),
        ("bn_bw_1C11", "reduction"),
        ("bn_fw_tr_1C11", "reduction"),
        ("dgrad_engine", "convolution"),
        ("wgrad_alg0_engine", "convolution"),
        ("scudnn", "convolution"),
        ("winograd", "convolution"),
        ("reduce_wgrad_nchw_helper", "convolution"),
        ("volta_sgemm", "GEMM"),
        ("max_pool_backward", "reduction"),
    ),
    "v100_ddp2": (
        ("ncclKernel_AllReduce", "communication"),
        ("elementwise_kernel", "elementwise"),
        ("volta_sgemm", "GEMM"),
        ("reduce_kernel", "reduction"),
        ("epilogue::impl::globalKernel", "GEMM"),  # cuBLASLt's epilogue of a GEMM
    ),
    "b200_vllm": (
        ("bmm_MxE4m3_", "GEMM"),
        ("bmm_Bfloat16_MxE2m1", "GEMM"),
        ("multimem_all_reduce_kernel", "communication"),
        ("fused_add_rms_norm_kernel", "reduction"),
        ("elementwise_kernel", "elementwise"),
        ("nvjet_", "GEMM"),
        ("fmhaSm100aKernel", "attention"),
        ("finalizeKernelVecLoad", "other"),  # MoE: the experts' outputs combined
        ("routingIndices", "reduction"),  # MoE routing: top-k histograms
        ("quantize_with_block_size", "elementwise"),
        ("reshape_and_cache_flash_kernel", "attention"),  # the KV-cache write of attention
        ("rotary_embedding_kernel", "elementwise"),
        ("scaled_fp8_quant_kernel", "elementwise"),
    ),
    "mi300x_qwen": (
        ("Cijk_", "GEMM"),
        ("attn_fwd", "attention"),
        ("elementwise_kernel", "elementwise"),
        ("CatArrayBatchedCopy", "elementwise"),
        ("reduce_kernel", "reduction"),
    ),
}


def _kernels_of(path: Path) -> list[tuple[str, float]]:
    if path.parent.name == "public":
        analysis = public_report(path).analysis
    else:
        analysis = report_of(path.name).analysis
    return [(k.name, k.total_ms) for k in analysis.kernels]


def _gpu_traces() -> list[object]:
    shared = [p for p in trace_params() if p.values[0] is None or "cpu" not in str(p.values[0])]
    return [*shared, pytest.param(B200, id="b200"), pytest.param(MI300X, id="mi300x")]


@pytest.mark.parametrize("path", _gpu_traces())
def test_every_major_kernel_of_a_real_trace_has_its_reviewed_kind(path: Path) -> None:
    kernels = _kernels_of(path)
    if not kernels:
        return  # a trace without kernels (CPU-only, sampled without GPU): nothing to read
    (key,) = [k for k in REVIEWED if k in path.name]
    total = sum(ms for _, ms in kernels)
    for name, ms in kernels:
        expected = [kind for part, kind in REVIEWED[key] if part in name]
        if ms >= MAJOR * total:
            assert expected, f"{name[:100]} ({ms / total:.1%}) was never reviewed"
        if expected:
            assert category_of(name) == expected[0], name[:120]


def test_b200_kinds_hold_its_gemms_and_its_all_reduce() -> None:
    summary = public_report(B200).analysis.summary.gpu_categories
    assert summary is not None
    share = {c.category: c.share_of_busy or 0.0 for c in summary}
    assert share["GEMM"] >= 0.40  # the FP8/FP4 MoE GEMMs and the nvjet projections
    assert share["communication"] >= 0.12  # the tensor-parallel multimem all-reduce
    assert share["other"] <= 0.20


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        (
            "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(x*)",
            "communication",
        ),
        (
            "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*)",
            "communication",
        ),
        ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "reduction"),
        ("triton_per_fused_sum_1", "reduction"),
        ("triton_tem_fused_addmm_0", "GEMM"),
        ("triton_poi_fused_mean_2", "elementwise"),  # the prefix decides, not the words
        ("bmm_E4m3_E4m3E4m3_Fp32_t128x8x128_s6_et64x8_m64x8x32", "GEMM"),
        ("fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausal", "attention"),
        ("void f<int>(int, flashinfer::QuantizationSFLayout)", "other"),
        ("vllm::_typeConvert fused_add_rms_norm_kernel", "reduction"),  # not "conv"
    ],
)
def test_names_of_today_s_kernels(name: str, kind: str) -> None:
    assert category_of(name) == kind


def test_the_parameter_list_is_not_read() -> None:
    assert without_parameters("void k<(T)2, int>(int, flashinfer::X)") == "void k<(T)2, int>"
    assert without_parameters("ncclKernel_AllReduce(ncclDevComm*)") == "ncclKernel_AllReduce"
    assert without_parameters("(odd)") == "(odd)"
    assert without_parameters("triton_poi_fused_0") == "triton_poi_fused_0"


def test_a_user_s_patterns_come_first() -> None:
    kinds = DEFAULT.adding({"communication": ["my_collective"], "GEMM": [r"^mykernel\d"]})
    assert kinds.kind_of("my_collective_reduce_kernel") == "communication"
    assert kinds.kind_of("mykernel7") == "GEMM"
    assert DEFAULT.kind_of("mykernel7") == "other"  # the built-in table is unchanged
    assert KernelKinds().kind_of("mykernel7") == "other"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (b'{"matmul": ["x"]}', "unknown kind 'matmul'"),
        (b'{"GEMM": ["("]}', "pattern '(' for GEMM"),
        (b'["GEMM"]', "not a table of kernel kinds"),
        (b"{", "not a table of kernel kinds"),
    ],
)
def test_a_bad_table_is_one_line(text: bytes, says: str) -> None:
    with pytest.raises(TraceError, match=re.escape(says)) as raised:
        kinds_from_json(text, "kinds.json")
    assert "\n" not in str(raised.value) and str(raised.value).startswith("kinds.json: ")


def test_the_command_line_takes_a_table_of_kinds(tmp_path: Path) -> None:
    table = tmp_path / "kinds.json"
    table.write_text(json.dumps({"communication": ["bmm_Mx"]}), encoding="utf-8")
    runner = CliRunner()
    given = runner.invoke(app, ["analyze", str(B200), "-f", "json", "--kernel-kinds", str(table)])
    assert given.exit_code == 0, given.stderr
    summary = json.loads(given.stdout)["analysis"]["summary"]["gpu_categories"]
    share = {c["category"]: c["share_of_busy"] for c in summary}
    assert share["communication"] > 0.4  # bmm_MxE4m3 (29% of busy) read as communication
    table.write_text("{", encoding="utf-8")
    bad = runner.invoke(app, ["analyze", str(B200), "--kernel-kinds", str(table)])
    assert bad.exit_code != 0 and "Traceback" not in bad.stderr
    assert bad.stderr.count("\n") == 1 and "not a table of kernel kinds" in bad.stderr
