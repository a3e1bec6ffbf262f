"""FLOPs of one step (``torch.utils.flop_counter``), achieved FLOP/s and MFU.

Peak dense throughput, in TFLOP/s, from the vendors' datasheets (no sparsity): NVIDIA's
H100 (SXM and PCIe; the H200 shares the H100 SXM's compute), A100 and V100 (SXM2)
datasheets, AMD's Instinct MI300X and MI250X/MI250 datasheets. MFU is only reported for
a device and dtype listed here; otherwise it is None, not a guess.
"""

from __future__ import annotations

from collections.abc import Callable

from torch.utils.flop_counter import FlopCounterMode

# (name fragment, dtype) -> dense peak TFLOP/s. First matching fragment wins: most specific first.
PEAK_TFLOPS: dict[tuple[str, str], float] = {
    # NVIDIA H200 / H100 SXM datasheet (dense = half the "with sparsity" tensor figures)
    ("H200", "float32"): 67.0,
    ("H200", "tfloat32"): 494.5,
    ("H200", "bfloat16"): 989.5,
    ("H200", "float16"): 989.5,
    ("H100 80GB HBM3", "float32"): 67.0,
    ("H100 80GB HBM3", "tfloat32"): 494.5,
    ("H100 80GB HBM3", "bfloat16"): 989.5,
    ("H100 80GB HBM3", "float16"): 989.5,
    # NVIDIA H100 PCIe datasheet
    ("H100 PCIe", "float32"): 51.0,
    ("H100 PCIe", "tfloat32"): 378.0,
    ("H100 PCIe", "bfloat16"): 756.0,
    ("H100 PCIe", "float16"): 756.0,
    # NVIDIA A100 datasheet (SXM and PCIe share these peaks)
    ("A100", "float32"): 19.5,
    ("A100", "tfloat32"): 156.0,
    ("A100", "bfloat16"): 312.0,
    ("A100", "float16"): 312.0,
    # NVIDIA V100 SXM2 datasheet (no bf16 on Volta)
    ("V100", "float32"): 15.7,
    ("V100", "float16"): 125.0,
    # AMD Instinct MI300X and MI250X/MI250 datasheets (matrix cores, dense)
    ("MI300X", "float32"): 163.4,
    ("MI300X", "bfloat16"): 1307.4,
    ("MI300X", "float16"): 1307.4,
    ("MI250X", "float32"): 95.7,
    ("MI250X", "bfloat16"): 383.0,
    ("MI250X", "float16"): 383.0,
    ("MI250", "float32"): 90.5,
    ("MI250", "bfloat16"): 362.1,
    ("MI250", "float16"): 362.1,
}


def count_flops(run_step: Callable[[], object]) -> int:
    """FLOPs of one call of ``run_step`` (forward and backward when the step has both)."""
    with FlopCounterMode(display=False) as counter:
        run_step()
    return int(counter.get_total_flops())


def peak_tflops(device_name: str, dtype: str) -> float | None:
    """The dense peak for this device and dtype, or None when it is not in the table."""
    precision = dtype.removeprefix("autocast-")
    for (fragment, kind), peak in PEAK_TFLOPS.items():
        if fragment in device_name and kind == precision:
            return peak
    return None
