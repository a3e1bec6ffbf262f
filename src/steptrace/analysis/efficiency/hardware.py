"""How fast a device can go: dense peak throughput per precision and memory bandwidth.

Contract: ``peaks_for(devices) -> DevicePeaks | None`` matches the trace's first GPU (its
``deviceProperties`` name, and memory size where one name covers two models) against
``DEVICES``, one row per model with its datasheet named; None when no row matches (a name
that does not say the model, such as ROCm's "AMD Radeon Graphics": then nothing is
guessed, and ``--peaks FILE`` gives them). ``peaks_from_json`` reads a user's measured
peaks; ``DevicePeaks.over(base)`` fills what they leave out from the table.
``matrix_precisions(device)``: the precisions under float32 its matrix units run, from
the table, else from an NVIDIA compute capability (None for a device neither tells).

Figures are dense (no 2:4 sparsity: half the datasheets' "with sparsity" figures), per
device as PyTorch sees it: an MI250(X) is two devices (GCDs), each with half the
package's figures. ``matrix_tflops`` holds the matrix units' peaks by precision
(``float32`` is fp32 without tensor cores on NVIDIA, the matrix cores' FP32 on AMD);
``vector_tflops`` is the FP32 vector peak. Achievable peaks sit well under these (TraceLens
measures 708 of the MI300X's 1,307 BF16 TFLOP/s): measured ones are better, when known.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from steptrace.errors import TraceError

if TYPE_CHECKING:
    from steptrace.scenario import MeasuredPeaks
    from steptrace.trace.table import Device

PRECISIONS = ("float32", "tfloat32", "bfloat16", "float16", "float8", "float4")


class DevicePeaks(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A device's roofs: compute by precision (TFLOP/s) and memory bandwidth (TB/s)."""

    name: str
    matrix_tflops: dict[str, float] = msgspec.field(default_factory=dict)
    vector_tflops: float | None = None  # FP32 without the matrix units
    memory_tbps: float | None = None
    source: str = ""  # where the figures come from

    def over(self, base: DevicePeaks | None) -> DevicePeaks:
        """These peaks, with what they do not give taken from ``base``."""
        if base is None:
            return self
        return DevicePeaks(
            name=self.name,
            matrix_tflops=base.matrix_tflops | self.matrix_tflops,
            vector_tflops=self.vector_tflops or base.vector_tflops,
            memory_tbps=self.memory_tbps or base.memory_tbps,
            source=f"{self.source} (the rest: {base.source})" if self.source else base.source,
        )

    def compute(self, precision: str | None, matrix: bool) -> float | None:
        """The compute roof for work of this precision, on the matrix units or not."""
        if precision is None:
            return None
        if matrix:
            return self.matrix_tflops.get(precision)
        return self.vector_tflops or self.matrix_tflops.get("float32")


def _peaks(
    name: str, source: str, memory: float, vector: float, matrix: dict[str, float]
) -> DevicePeaks:
    return DevicePeaks(
        name=name, matrix_tflops=matrix, vector_tflops=vector, memory_tbps=memory, source=source
    )


def _nv(model: str) -> str:
    return f"NVIDIA {model} datasheet, dense"


def _amd(model: str) -> str:
    return f"AMD Instinct {model} datasheet"


# Matrix peaks, TFLOP/s, dense, per device. NVIDIA: ``float32`` without tensor cores.
_V100 = {"float32": 15.7, "float16": 125.0}  # SXM2; Volta has no BF16, no TF32
_V100_PCIE = {"float32": 14.0, "float16": 112.0}
_V100S = {"float32": 16.4, "float16": 130.0}
_A100 = {"float32": 19.5, "tfloat32": 156.0, "bfloat16": 312.0, "float16": 312.0}
_H100_PCIE = {
    "float32": 51.0,
    "tfloat32": 378.0,
    "bfloat16": 756.0,
    "float16": 756.0,
    "float8": 1513.0,
}
_H100_SXM = {
    "float32": 67.0,
    "tfloat32": 494.5,
    "bfloat16": 989.5,
    "float16": 989.5,
    "float8": 1979.0,
}
_B200 = {
    "float32": 75.0,
    "tfloat32": 1100.0,
    "bfloat16": 2250.0,
    "float16": 2250.0,
    "float8": 4500.0,
    "float4": 9000.0,
}
_MI250X_GCD = {"float32": 47.85, "bfloat16": 191.5, "float16": 191.5}  # half the package
_MI250_GCD = {"float32": 45.25, "bfloat16": 181.05, "float16": 181.05}
_MI300 = {
    "float32": 163.4,
    "tfloat32": 653.7,
    "bfloat16": 1307.4,
    "float16": 1307.4,
    "float8": 2614.9,
}

# (name pattern, least memory in GB, peaks): the first row that matches decides.
DEVICES: tuple[tuple[str, float, DevicePeaks], ...] = (
    # Tesla V100 datasheet: SXM2 15.7 FP32 / 125 tensor TFLOP/s, PCIe 14 / 112, 900 GB/s;
    # V100S 16.4 / 130, 1,134 GB/s
    ("V100S", 0, _peaks("V100S", _nv("V100S"), 1.134, 16.4, _V100S)),
    ("V100-PCIE", 0, _peaks("V100 PCIe", _nv("V100"), 0.9, 14.0, _V100_PCIE)),
    ("V100", 0, _peaks("V100 SXM2", _nv("V100"), 0.9, 15.7, _V100)),
    # A100 datasheet: 19.5 FP32, 156 TF32, 312 BF16/FP16; 1,555 GB/s (40GB), 2,039 GB/s
    # (80GB SXM), 1,935 GB/s (80GB PCIe): 40 and 80 GB told apart by the device's memory
    ("A100.*PCI", 60, _peaks("A100 80GB PCIe", _nv("A100"), 1.935, 19.5, _A100)),
    ("A100", 60, _peaks("A100 80GB SXM", _nv("A100"), 2.039, 19.5, _A100)),
    ("A100", 0, _peaks("A100 40GB", _nv("A100"), 1.555, 19.5, _A100)),
    # H100 datasheet: SXM 67 FP32, 494.5 TF32, 989.5 BF16/FP16, 1,979 FP8, 3.35 TB/s;
    # PCIe 51, 378, 756, 1,513, 2.0 TB/s
    ("H100 PCIe", 0, _peaks("H100 PCIe", _nv("H100"), 2.0, 51.0, _H100_PCIE)),
    ("H100 (?:80GB HBM3|SXM)", 0, _peaks("H100 SXM", _nv("H100"), 3.35, 67.0, _H100_SXM)),
    # H200 datasheet (SXM): the H100 SXM's compute, 4.8 TB/s
    ("H200(?! NVL)", 0, _peaks("H200 SXM", _nv("H200"), 4.8, 67.0, _H100_SXM)),
    # HGX B200 datasheet, per GPU: 75 FP32, 1,100 TF32, 2,250 BF16/FP16, 4,500 FP8,
    # 9,000 FP4; 8 TB/s HBM3e
    ("B200", 0, _peaks("B200", _nv("HGX B200"), 8.0, 75.0, _B200)),
    # MI250X and MI250 datasheets, halved for one GCD: MI250X 47.9 vector / 95.7 matrix
    # FP32, 383 BF16/FP16; MI250 45.3 / 90.5, 362.1; 3.2768 TB/s per package. A name that
    # names both ("MI250X / MI250") matches neither.
    ("MI250X(?! ?/)", 0, _peaks("MI250X (one GCD)", _amd("MI250X"), 1.6384, 23.95, _MI250X_GCD)),
    (
        "^(?!.*MI250X).*MI250",
        0,
        _peaks("MI250 (one GCD)", _amd("MI250"), 1.6384, 22.65, _MI250_GCD),
    ),
    # MI300X datasheet: 163.4 FP32, 653.7 TF32, 1,307.4 BF16/FP16, 2,614.9 FP8, 5.3 TB/s;
    # MI325X datasheet: the same compute, 6 TB/s
    ("MI300X", 0, _peaks("MI300X", _amd("MI300X"), 5.3, 163.4, _MI300)),
    ("MI325X", 0, _peaks("MI325X", _amd("MI325X"), 6.0, 163.4, _MI300)),
)


def peaks_for(devices: Sequence[Device] | None) -> DevicePeaks | None:
    """The table's peaks for the trace's first device; None when no row matches."""
    if not devices:
        return None
    device = devices[0]
    gb = (device.memory_bytes or 0) / 1e9
    for pattern, least_gb, peaks in DEVICES:
        if re.search(pattern, device.name) and gb >= least_gb:
            return peaks
    return None


# NVIDIA compute capability -> the precisions its tensor cores run under float32: Volta
# and Turing FP16 only; Ampere adds TF32 and BF16; Ada and Hopper FP8; Blackwell FP4.
_BY_CAPABILITY: tuple[tuple[float, tuple[str, ...]], ...] = (
    (10.0, ("tfloat32", "bfloat16", "float16", "float8", "float4")),
    (8.9, ("tfloat32", "bfloat16", "float16", "float8")),
    (8.0, ("tfloat32", "bfloat16", "float16")),
    (7.0, ("float16",)),
)
# ROCm writes the gfx version where CUDA writes the compute capability (MI250: 9.0)
_AMD = re.compile(r"\bAMD\b|Radeon|Instinct|\bMI\d{3}", re.IGNORECASE)


def is_amd(device: Device) -> bool:
    """An AMD GPU, by its name: its ``computeMajor.computeMinor`` is a gfx version."""
    return bool(_AMD.search(device.name))


def matrix_precisions(device: Device) -> tuple[str, ...] | None:
    """The precisions under float32 the device's matrix units run (``PRECISIONS`` order);
    () for a GPU without them (NVIDIA before compute capability 7.0); None when neither the
    table nor the compute capability tells (an AMD device the table does not name)."""
    peaks = peaks_for([device])
    if peaks is not None:
        return tuple(p for p in PRECISIONS[1:] if p in peaks.matrix_tflops)
    if is_amd(device):
        return None
    try:
        capability = float(device.compute_capability or "")
    except ValueError:
        return None
    return next((found for least, found in _BY_CAPABILITY if capability >= least), ())


def measured_peaks(measured: MeasuredPeaks | None) -> DevicePeaks | None:
    """The roofs a capture measured (a CPU's), as peaks: the matrix product's for matrix
    work of its dtype, and its copy's bandwidth."""
    if measured is None:
        return None
    return DevicePeaks(
        name=f"{measured.device} (measured at capture)",
        matrix_tflops={measured.matmul_dtype: measured.matmul_tflops},
        memory_tbps=measured.copy_tbps,
        source=(
            f"measured at capture: a {measured.matmul_size}x{measured.matmul_size} "
            f"{measured.matmul_dtype} matrix product and a {measured.copy_bytes:,} byte copy"
        ),
    )


def peaks_from_json(text: bytes, where: str) -> DevicePeaks:
    """A user's peaks (``DevicePeaks`` fields as JSON); a one-line ``TraceError`` naming
    ``where`` when they are not that, or are not positive."""
    try:
        peaks = msgspec.json.decode(text, type=DevicePeaks)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        problem = " ".join(str(error).split())
        raise TraceError(f"{where}: not a table of peaks ({problem})") from None
    figures = [*peaks.matrix_tflops.values(), peaks.vector_tflops, peaks.memory_tbps]
    if any(f is not None and not (f > 0 and math.isfinite(f)) for f in figures):
        raise TraceError(f"{where}: every peak must be a positive number")
    if unknown := set(peaks.matrix_tflops) - set(PRECISIONS):
        raise TraceError(
            f"{where}: unknown precision(s) {', '.join(sorted(unknown))}: one of "
            + ", ".join(PRECISIONS)
        )
    return peaks
