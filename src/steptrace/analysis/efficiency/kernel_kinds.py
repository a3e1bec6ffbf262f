"""What kind of work a GPU kernel does, read from its name: one table of patterns.

Contract: ``KernelKinds().kind_of(name) -> str``, one of ``CATEGORIES`` but ``copy`` (copies
and sets are ``copy`` by their event kind, whatever their name); the first pattern of
``PATTERNS`` that matches decides, else ``other``. ``KernelKinds.adding(extra)`` puts a
user's patterns (``{"GEMM": ["my_gemm_\\w+"]}``) before the built-in ones, and
``kinds_from_json`` reads them from the text of a file (``--kernel-kinds FILE``).

A pattern is matched against the name without its parameter list (``(int, float*,
…)``): parameters name types of other libraries (``flashinfer::…``, ``fbgemm_gpu::…``)
that say nothing of the kernel. Names are a heuristic, so the table is ordered from the
most to the least specific: collectives first (an all-reduce kernel's name also says
``reduce``), Triton/Inductor kernels by their prefix, attention before GEMM (``fmha…E4m3``
names carry a dtype that FP8 GEMMs carry too), convolution before GEMM (cuDNN's implicit
GEMM), ATen's own ``reduce_kernel`` and ``elementwise_kernel`` families before the keyword
searches that would misread their functor names. docs/analyze.md lists the table for users.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import msgspec

from steptrace.errors import TraceError

# Report order (``categories.PRIORITY`` decides which kind gets time where several overlap).
CATEGORIES = (
    "GEMM",
    "convolution",
    "attention",
    "elementwise",
    "reduction",
    "communication",
    "copy",
    "other",
)
# fp32 matrix kernels that run on tensor cores (as TF32): their names say so
TF32 = re.compile(r"tf32|tensorop_s|s1688|s16816", re.IGNORECASE)
NAMED = tuple(c for c in CATEGORIES if c not in ("copy", "other"))  # what a pattern can say


class Pattern(NamedTuple):
    """One row of the table: the kind, the pattern, and which kernels it is for."""

    kind: str
    regex: re.Pattern[str]
    what: str


def _row(kind: str, pattern: str, what: str, *, case: bool = False) -> Pattern:
    return Pattern(kind, re.compile(pattern, 0 if case else re.IGNORECASE), what)


PATTERNS: tuple[Pattern, ...] = (
    _row("communication", r"nccl|rccl|gloo", "NCCL/RCCL (ncclKernel_*, ncclDevKernel_*), gloo"),
    _row(
        "communication",
        r"multimem_all_?reduce|cross_device_reduce|all_?reduce|all_?gather|reduce_?scatter|"
        r"all_?to_?all|deep_?ep",
        "custom collectives: symmetric-memory multimem_all_reduce, vLLM's "
        "cross_device_reduce, TensorRT-LLM all-reduce, all-to-all (DeepEP)",
    ),
    _row("elementwise", r"^triton_poi", "Inductor pointwise kernels (triton_poi_*)", case=True),
    _row("reduction", r"^triton_(?:red|per)", "Inductor reductions (triton_red_*, triton_per_*)"),
    _row("GEMM", r"^triton_(?:tem|mm)", "Inductor GEMM templates (triton_tem_*, triton_mm*)"),
    _row(
        "attention",
        r"flash|fmha|attention|attn|sdpa|\bmha_(?:fwd|bwd)",
        "flash attention, fmha*, paged attention, aiter's mha_fwd, attn_fwd",
    ),
    _row(
        "convolution",
        r"convolution|convolve|conv[123]d|(?:^|_)conv(?:_|$)|dgrad|wgrad|fprop|winograd|"
        r"implicit_?gemm|scudnn|hcudnn|\bfft2d_(?:r2c|c2r)",
        "cuDNN/MIOpen convolutions (implicit GEMM, winograd, FFT, dgrad/wgrad)",
    ),
    _row(
        "GEMM",
        r"(?<!fb)gemm|gemv|cublas|nvjet|^Cijk_|matmul|xmma|hmma|wgmma|_mm_|"
        r"\bcutlass_|cutlass::(?:Kernel|gemm|device_kernel)|fused_moe_kernel|epilogue::impl",
        "cuBLAS/cuBLASLt (nvjet*, sm90_xmma*, its epilogue), CUTLASS, hipBLASLt/Tensile "
        "(Cijk_*), Triton fused MoE",
    ),
    _row(
        "GEMM",
        r"^bmm_|MxE4m3|MxE2m1|_E2m1",
        "FP8/FP4/MX batched GEMMs (bmm_MxE4m3_*, *E2m1*)",
        case=True,
    ),
    _row("reduction", r"reduce_kernel|\breduce_", "ATen's reduce_kernel family"),
    _row("elementwise", r"elementwise_kernel", "ATen's elementwise_kernel family"),
    _row(
        "reduction",
        r"reduc|norm|softmax|welford|argmax|argmin|topk|cumsum|scan|nll_loss|"
        r"cross_entropy|\bsum|sum_|mean|max_pool|avg_pool|average_pool|adaptive_\w*pool|"
        r"bn_fw|bn_bw",
        "reductions by keyword: norms, softmax, sums, pooling",
    ),
    _row(
        "elementwise",
        r"elementwise|vectorized|unrolled|pointwise|fill|CatArray|copy|multi_tensor_apply|"
        r"dropout|ToNhwc|ToNchw|quant|fp8|_to_float|rotary|rope|cache",
        "elementwise by keyword: fills, copies, casts and (de)quantization, rotary "
        "embeddings, KV-cache writes, foreach optimizers",
    ),
)


@dataclass(frozen=True)
class KernelKinds:
    """The table in use: the user's patterns (if any) before the built-in ones."""

    patterns: tuple[Pattern, ...] = PATTERNS
    _seen: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def kind_of(self, name: str) -> str:
        """The kind of a kernel name (``other`` when no pattern matches); kept per name."""
        found = self._seen.get(name)
        if found is None:
            callable_ = without_parameters(name)
            found = next((p.kind for p in self.patterns if p.regex.search(callable_)), "other")
            self._seen[name] = found
        return found

    def adding(self, extra: Mapping[str, Sequence[str]]) -> KernelKinds:
        """This table with ``extra`` (kind -> regular expressions, case ignored) first; a
        ``ValueError`` names an unknown kind or a pattern that does not compile."""
        rows = []
        for kind, patterns in extra.items():
            if kind not in NAMED:
                raise ValueError(f"unknown kind {kind!r}: one of {', '.join(NAMED)}")
            for pattern in patterns:
                try:
                    rows.append(_row(kind, pattern, "given by the user"))
                except re.error as error:
                    raise ValueError(f"pattern {pattern!r} for {kind}: {error}") from None
        return KernelKinds((*rows, *self.patterns))


DEFAULT = KernelKinds()


def without_parameters(name: str) -> str:
    """``void f<T>(int, T*)`` -> ``void f<T>``: the name without its last, balanced
    parenthesized group at the end (the parameters); the name itself when it has none."""
    if not name.endswith(")"):
        return name
    depth = 0
    for at in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[at], 0)
        if depth == 0:
            return name[:at] if at > 0 else name
    return name


def category_of(name: str) -> str:
    """The kind of a kernel name in the built-in table."""
    return DEFAULT.kind_of(name)


def kinds_from_json(text: bytes, where: str) -> KernelKinds:
    """The built-in table with the patterns of a JSON object ``{kind: [pattern, ...]}``
    added first; a one-line ``TraceError`` naming ``where`` when it is not one."""
    try:
        extra = msgspec.json.decode(text, type=dict[str, list[str]])
        return DEFAULT.adding(extra)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as error:
        problem = " ".join(str(error).split())
        raise TraceError(
            f"{where}: not a table of kernel kinds ({problem}); expected "
            '{"GEMM": ["pattern", ...], ...}'
        ) from None
