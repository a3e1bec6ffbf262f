"""FLOPs of one step (``torch.utils.flop_counter``), achieved FLOP/s and MFU.

Peak dense throughput comes from the one table of devices (``analysis.hardware``: the
vendors' datasheets, dense, per device as PyTorch sees it). MFU is only reported for a
device and dtype listed there; otherwise it is None, not a guess.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils.flop_counter import FlopCounterMode

from steptrace.analysis.efficiency.hardware import peaks_for
from steptrace.trace.table import Device


def count_flops(run_step: Callable[[], object]) -> int:
    """FLOPs of one call of ``run_step`` (forward and backward when the step has both)."""
    with FlopCounterMode(display=False) as counter:
        run_step()
    return int(counter.get_total_flops())


def peak_tflops(device_name: str, dtype: str, memory_bytes: int | None = None) -> float | None:
    """The dense matrix peak for this device and dtype, or None when it is not in the
    table (``memory_bytes`` tells models of one name apart: A100 40GB and 80GB)."""
    peaks = peaks_for((Device(0, device_name, None, memory_bytes),))
    return peaks.matrix_tflops.get(dtype.removeprefix("autocast-")) if peaks else None


def device_memory(device: torch.device) -> int | None:
    """A GPU's memory in bytes; None on the CPU."""
    if device.type != "cuda":
        return None
    return int(torch.cuda.get_device_properties(device).total_memory)
