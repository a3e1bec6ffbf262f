"""Size and cost of the timeline in the HTML report, on real traces.

What is measured
----------------
For each trace (by default the 216k-event DDP trace and the V100 ResNet50 one of
``STEPTRACE_TRACES``), once loaded: the median time of ``analysis.lanes.step_lanes`` over
``--repeats`` rounds beside the median time of the registry's other figures, both over one
``TraceContext`` whose operator tree and GPU links are computed once, as the pipeline
shares them (what the timeline adds to an analysis), the items it keeps (bars, bands,
gaps) against the events it covers, and the size of the HTML report with and without the
timeline section (the budget: under 3 MB for the 216k-event trace). The JSON report holds
no timeline: only HTML draws it, from the trace.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import results
import steptrace
from steptrace.analysis.compose import compute
from steptrace.analysis.context import TraceContext
from steptrace.analysis.registry import figures
from steptrace.analysis.timeline.lanes import step_lanes
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import View, report_document
from steptrace.trace.load import load_trace

TRACES = Path(
    os.environ.get("STEPTRACE_TRACES", Path(__file__).resolve().parents[2] / "shared/traces")
)
DEFAULT = (
    "gpu/v100_ddp2_rank1_train_profmem__df_index_resolver.json.gz",
    "gpu/kineto_v100_resnet50_train_dataloader_nw0.worker0.1623143089861.pt.trace.json.gz",
)


def _median_s(work: object, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", default=[str(TRACES / p) for p in DEFAULT])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    run = results.Run.start()
    rows: list[list[object]] = []
    print(
        f"{'trace':<42} {'events':>8} {'items':>7} {'lanes ms':>9} {'measure ms':>10} "
        f"{'html KB':>8} {'without KB':>10}"
    )
    for name in args.traces:
        trace = load_trace(name, groups=(), progress=False)
        context = TraceContext(trace)
        _ = context.tree, context.links, context.gpu_busy  # shared, as the pipeline does
        lanes_s = _median_s(lambda c=context: step_lanes(c), args.repeats)
        measure_s = _median_s(lambda c=context: compute(c, figures()), args.repeats)
        report = steptrace.analyze_trace(trace)
        timeline = step_lanes(context)
        items = sum(
            len(lane.bars) + len(lane.bands) for s in timeline.steps for lane in s.lanes
        ) + sum(len(s.gaps) for s in timeline.steps)
        events = sum(lane.events for s in timeline.steps for lane in s.lanes)
        html = renderer("html").render([report_document(report, View(lanes=timeline))])
        without = renderer("html").render([report_document(report)])
        print(
            f"{Path(name).name[:42]:<42} {events:>8} {items:>7} {1000 * lanes_s:>9.1f} "
            f"{1000 * measure_s:>10.1f} {len(html.encode()) / 1024:>8.0f} "
            f"{len(without.encode()) / 1024:>10.0f}"
        )
        rows.append(
            [
                Path(name).name,
                events,
                items,
                f"{1000 * lanes_s:.1f}",
                f"{1000 * measure_s:.1f}",
                f"{len(html.encode()) / 1024:.0f}",
                f"{len(without.encode()) / 1024:.0f}",
                args.repeats,
            ]
        )
    columns = ["trace", "events", "items drawn", "lanes ms", "measure ms", "HTML KB"]
    columns += ["HTML KB without the timeline", "rounds"]
    results.write("timeline_size", run, columns, rows)


if __name__ == "__main__":
    main()
