"""The CPU's roofs, measured once at capture: a matrix product and a copy, each timed alone.

A CPU has no datasheet row in ``analysis.hardware``, so a capture on the CPU that records
shapes (the roofline needs them) measures its two roofs after the window, with the
threads torch uses: the best of a few ``n x n`` float32 products (2n³ FLOPs each) and the
best of a few copies of a tensor larger than the caches (its bytes read and written).
Best, not median: a roof is what the machine can do, and the slower runs are the noise
of a shared machine. The analysis holds the trace's operators to these roofs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from steptrace.scenario import MeasuredPeaks

MATMUL_SIZE = 1024  # 2.1 GFLOP a product: tens of ms on a few cores, past the small sizes
COPY_BYTES = 64 << 20  # well past the last-level cache, so the copy runs from memory
REPEATS = 8  # about half a second in all: enough for one quiet run of each


def measure_cpu_peaks(
    *,
    size: int = MATMUL_SIZE,
    copy_bytes: int = COPY_BYTES,
    repeats: int = REPEATS,
    clock: Callable[[], float] = time.perf_counter,
) -> MeasuredPeaks:
    """The CPU's matrix-product and copy roofs (see module)."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    product_s = _best(lambda: torch.mm(a, b), repeats, clock)
    source = torch.ones(copy_bytes // 4)
    target = torch.empty_like(source)
    copy_s = _best(lambda: target.copy_(source), repeats, clock)
    return MeasuredPeaks(
        device=f"cpu ({torch.get_num_threads()} threads)",
        matmul_dtype="float32",
        matmul_tflops=2 * size**3 / product_s / 1e12,
        copy_tbps=2 * source.numel() * 4 / copy_s / 1e12,
        matmul_size=size,
        copy_bytes=source.numel() * 4,
    )


def _best(run: Callable[[], object], repeats: int, clock: Callable[[], float]) -> float:
    """The shortest of ``repeats`` timed runs, after one untimed (warm-up) run."""
    run()
    times = []
    for _ in range(repeats):
        start = clock()
        run()
        times.append(clock() - start)
    return max(min(times), 1e-9)
