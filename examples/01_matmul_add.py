"""A matrix product plus a bias, profiled: the profiler's table, the trace, then steptrace.

The French seed's first example. Self time is what an operator spends in itself;
total (inclusive) time also counts the operators it calls. Rows of the table overlap:
``matmul_add`` contains ``aten::matmul`` and ``aten::add``, so their totals must never be
added up. steptrace reads the same trace on the timeline, where nothing is counted twice.

    python examples/01_matmul_add.py [OUTPUT_FOLDER]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, supported_activities

import steptrace


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    trace = folder / f"matmul_add-{time.strftime('%Y%m%d-%H%M%S')}.json"
    if trace.exists():
        raise SystemExit(f"{trace} exists already: choose a new name")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        if ProfilerActivity.CUDA not in supported_activities():
            raise SystemExit("GPU collection is unavailable in this torch build")
        activities.append(ProfilerActivity.CUDA)
    a = torch.randn(512, 512, device=device)
    b = torch.randn(512, 512, device=device)
    bias = torch.randn(512, device=device)
    torch.matmul(a, b) + bias  # warm-up, outside the profiler
    with profile(activities=activities) as prof:
        with record_function("matmul_add"):
            result = torch.matmul(a, b) + bias
        if device.type == "cuda":
            torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=8))
    prof.export_chrome_trace(str(trace))
    print(f"Trace written to {trace}\n")
    analysis = steptrace.analyze(trace).analysis
    matmul_add = next(o for o in analysis.summary.phases if o.name == "matmul_add")
    print(
        f"steptrace: 'matmul_add' took {matmul_add.exclusive_ms.median:.3f} ms of its own "
        "time, and its inclusive time contains aten::matmul and aten::add: the table's "
        "'CPU total' rows overlap, its 'Self CPU' rows do not."
    )
    for op in analysis.operators[:4]:
        print(f"  {op.name:<24} self {op.self_ms:8.3f} ms   inclusive {op.inclusive_ms:8.3f} ms")
    print(f"result shape: {tuple(result.shape)}; GPU observed: {analysis.trace.gpu_observed}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-out"))
