"""What each field group costs to load: CPU time and table memory, against ``core`` alone.

    .venv/bin/python benchmarks/field_groups.py [--repeats 5] [TRACE ...]

Loading decodes the groups of fields an analysis asks for (``trace.fields``): ``core``
always, the others for the figures that read them (``analyze``'s default: ``collective``
for communication, ``launch`` for the kernels table, ``instants`` for memory, ``inputs``
for the roofline; ``sync``, ``ids``, ``python`` and ``flows`` on demand). For each trace
(default: the largest shared trace, which has them all, and the CPU trace recorded with
every option), in this process, interleaved for ``--repeats`` rounds:

* ``core`` alone, then ``core`` + each group, then ``analyze``'s default selection: the
  CPU seconds of ``read_trace`` (``time.process_time``, medians: robust to other load on a
  shared machine) and the bytes of the table's columns;
* ``json.loads(gunzipped text)`` of the same file, the baseline every speed target is
  stated against, timed the same way in the same rounds.

Reported per group: its extra CPU seconds over ``core``, that as a share of ``json.loads``,
and its extra megabytes of columns. A group a trace does not carry costs about nothing:
its fields' columns hold MISSING without a pass over the rows.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

import results
from steptrace.analysis.registry import fields_for, figures
from steptrace.trace.fields import GROUPS, Selection, select
from steptrace.trace.load import read_trace
from steptrace.trace.read.source import read_text
from steptrace.trace.table import Trace

REPO = Path(__file__).resolve().parents[1]
TRACES = Path(os.environ.get("STEPTRACE_TRACES", REPO.parent / "shared" / "traces"))
DEFAULT_TRACES = (
    TRACES / "gpu" / "v100_ddp2_rank1_train_profmem__df_index_resolver.json.gz",
    TRACES / "cpu" / "cpu_train_trace_all.json.gz",
)
MB = 1e6


def table_bytes(trace: Trace) -> int:
    """The bytes of every numpy column of the trace's tables (a sparse field's rows too)."""
    total = 0
    for table in (trace.events, trace.instants, trace.flows):
        if table is None:
            continue
        for field in table.__struct_fields__:
            value = getattr(table, field)
            for column in value.values() if isinstance(value, dict) else [value]:
                parts = (column, getattr(column, "rows", None), getattr(column, "values", None))
                total += sum(a.nbytes for a in parts if isinstance(a, np.ndarray))
    return total


def loaded(path: Path, selection: Selection) -> tuple[float, int]:
    """CPU seconds to load ``path`` with ``selection`` (its text already read), and the
    bytes of the tables."""
    text = read_text(path)
    gc.collect()
    start = time.process_time()
    trace = read_trace(path, selection, text=text, progress=False)
    cpu = time.process_time() - start
    return cpu, table_bytes(trace)


def parsed(path: Path) -> float:
    """CPU seconds of ``json.loads`` of the gunzipped text."""
    data = read_text(path).data
    gc.collect()
    start = time.process_time()
    json.loads(data)
    return time.process_time() - start


def measure(path: Path, repeats: int) -> list[list[object]]:
    """One row per selection: core, core + each group, analyze's default."""
    selections = {"core": select()}
    selections |= {f"+ {g}": select([g]) for g in GROUPS if g != "core"}
    selections["analyze (default)"] = fields_for(figures())
    cpu: dict[str, list[float]] = {name: [] for name in selections}
    size: dict[str, int] = {}
    loads: list[float] = []
    for _ in range(repeats):
        loads.append(parsed(path))
        for name, selection in selections.items():
            seconds, size[name] = loaded(path, selection)
            cpu[name].append(seconds)
    baseline = statistics.median(loads)
    core = statistics.median(cpu["core"])
    rows: list[list[object]] = []
    for name in selections:
        median = statistics.median(cpu[name])
        extra = median - core if name != "core" else median
        rows.append(
            [
                path.name,
                name,
                f"{median:.3f}",
                f"{extra:+.3f}" if name != "core" else "–",
                f"{extra / baseline:.2f}",
                f"{size[name] / MB:.1f}",
                f"{(size[name] - size['core']) / MB:+.1f}" if name != "core" else "–",
                f"{baseline:.3f}",
                repeats,
            ]
        )
        print(" | ".join(str(c) for c in rows[-1]), flush=True)
    return rows


COLUMNS = (
    "trace",
    "selection",
    "load CPU s",
    "extra CPU s over core",
    "share of json.loads (core: itself)",
    "columns MB",
    "extra MB over core",
    "json.loads CPU s",
    "rounds",
)
NOTES = (
    "CPU seconds of loading (read_trace, the text read already) and of json.loads, medians of"
    " the rounds, interleaved in one process. A group a trace does not carry costs about"
    " nothing."
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="*", type=Path, default=list(DEFAULT_TRACES))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    run = results.Run.start()
    rows: list[list[object]] = []
    for path in args.traces:
        rows += measure(path, args.repeats)
    results.write("field_groups", run, COLUMNS, rows, NOTES)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
