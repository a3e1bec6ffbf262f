"""The least time one huge trace can take with events decoded by msgspec, against the
250 MB/s target of ``scale_one_trace.py``: how much of it the decoding alone leaves.

What is measured
----------------
The 32x replica of the largest shared trace (1.7 GB of JSON, built as ``scale_one_trace``
builds it). Each part is the least it can cost, everything around it left out:

1. **start**: ``python -c "import steptrace.cli, steptrace.pipeline"`` in a fresh process
   (the interpreter and what the command imports before it reads a byte);
2. **decode**: the events' text, gunzipped and cut into steptrace's pieces beforehand, in
   memory (none of that timed), decoded by as many forked processes as steptrace starts
   workers (one per usable core, at most 8), each taking every n-th piece; wall time from
   the first process's start to the last one's end. Three depths, each with no gunzip,
   no cutting, no transfer between processes, no merging and no table: ``raw`` (msgspec
   only finds each event's bytes: the least any decoder that hands Python one object per
   event can do), ``typed`` (steptrace's decoder: the fields the analyses read, as typed
   structs), ``columns`` (``typed`` and then the columns of each piece, steptrace's
   ``ColumnBuilder``: a worker's whole job);
3. **analysis**: ``steptrace.analyze_trace(trace)`` (what ``analyze
   --format json`` computes), the trace loaded beforehand, in one process, repeated in it
   (warm: its memory already mapped, hence a little optimistic, as a floor may be);
4. **steptrace**: ``steptrace analyze TRACE --format json`` as users run it, for reference.

``floor(depth) = start + decode(depth) + analysis``: a real run also gunzips, cuts,
merges and builds the table, so it is slower than ``floor("columns")`` unless its
analysis runs faster cold than this one warm. The budget is the JSON's size / 250 MB/s.
The rounds are interleaved; medians are printed with the load average.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import results
from analyze_speed import DEFAULT_TRACE, bytecode_compiled, run_child
from scale_one_trace import build_replica, in_fresh_process
from steptrace.cli.jobs import usable_cores
from steptrace.trace.read.parallel import MAX_WORKERS

MB = 1_000_000
TARGET_MB_S = 250
DEPTHS = ("raw", "typed", "columns")
_PIECES: list[bytes] = []  # the cut text, set before the decoding processes fork
_WAIT_S = 600  # at most this long for any one decoding


def cut_pieces(path: Path) -> list[bytes]:
    """The events' text of ``path`` in steptrace's pieces, each a JSON list of events."""
    from isal import igzip

    from steptrace.analysis.registry import fields_for, figures
    from steptrace.trace.decode import codec
    from steptrace.trace.read.split import start_pieces

    with igzip.open(path, "rb") as handle:
        text = handle.read()
    view = memoryview(text)
    chunks = (view[i : i + (4 << 20)] for i in range(0, len(text), 4 << 20))
    rest, _, start = start_pieces(chunks, codec(fields_for(figures())))
    pieces = [b"".join((b"[", *parts, b"]")) for parts, _ in rest.raw_pieces(start)]
    del rest, view, text
    return pieces


def _decode_share(depth: str, share: int, processes: int, ready: Any, ends: Any) -> None:
    """A decoding process: every ``processes``-th piece from ``share``, at ``depth``; puts
    its own ``(start, end)`` (``time.perf_counter``: CLOCK_MONOTONIC on Linux, the same
    clock in every process) or the error that stopped it."""
    try:
        import msgspec

        from steptrace.analysis.registry import fields_for, figures
        from steptrace.trace.columns import ColumnBuilder
        from steptrace.trace.decode import codec

        gc.disable()  # as steptrace's workers
        coded = codec(fields_for(figures()))  # what analyze decodes
        raw = msgspec.json.Decoder(list[msgspec.Raw])
        decoder = raw if depth == "raw" else coded.event_list
        ready.wait(timeout=_WAIT_S)
        start = time.perf_counter()
        for piece in _PIECES[share::processes]:
            events = decoder.decode(piece)
            if depth == "columns":
                builder = ColumnBuilder(coded)
                builder.add(events)
                del builder
            del events
    except Exception as exc:  # a wrong cut, a set-up that failed: the floor is not measured
        ready.abort()
        ends.put(f"{type(exc).__name__}: {exc}")
        return
    ends.put((start, time.perf_counter()))


def time_decode(depth: str, processes: int) -> float:
    """Wall seconds for ``processes`` forked processes to decode ``_PIECES`` at ``depth``:
    from the first one's start to the last one's end."""
    context = multiprocessing.get_context("fork")
    ready, ends = context.Barrier(processes), context.Queue()
    children = [
        context.Process(target=_decode_share, args=(depth, k, processes, ready, ends), daemon=True)
        for k in range(processes)
    ]
    try:
        for child in children:
            child.start()
        finished = [ends.get(timeout=_WAIT_S) for _ in children]
    finally:
        for child in children:
            child.terminate()
            child.join()
    if errors := [f for f in finished if isinstance(f, str)]:
        raise SystemExit(f"the decoding processes failed: {errors[0]}")
    return max(end for _, end in finished) - min(start for start, _ in finished)


def analysis_times(path: Path, repeats: int, workers: int) -> list[float]:
    """Seconds of ``analyze_trace`` on the trace at ``path``, loaded once (a spawned process)."""
    import steptrace

    trace = steptrace.load_trace(path, progress=False, workers=workers)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        steptrace.analyze_trace(trace)
        times.append(time.perf_counter() - t0)
    return times


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE, help="source trace")
    parser.add_argument("--copies", type=int, default=32, help="replica size (default 32x)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds (default 3)")
    parser.add_argument(
        "--steptrace",
        type=Path,
        default=Path(sys.executable).parent / "steptrace",
        help="steptrace executable (default: next to this interpreter)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    global _PIECES
    args = parse_args(argv)
    run = results.Run.start()
    print(bytecode_compiled())
    processes = min(usable_cores(), MAX_WORKERS)  # as many as steptrace would start
    with tempfile.TemporaryDirectory(prefix="steptrace-floor-") as work:
        path = Path(work) / f"x{args.copies}.json.gz"
        size = in_fresh_process(build_replica, args.trace, path, args.copies)
        _PIECES = cut_pieces(path)
        print(
            f"{args.copies}x: {size / MB:.0f} MB of JSON in {len(_PIECES)} pieces; "
            f"{processes} decoding processes; load average {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        runs: dict[str, list[float]] = {k: [] for k in ("start", *DEPTHS, "steptrace")}
        command = [str(args.steptrace), "analyze", str(path), "--format", "json"]
        start = [sys.executable, "-c", "import steptrace.cli, steptrace.pipeline"]
        for _ in range(args.repeats):
            runs["start"].append(run_child(start, 60).wall_s)
            for depth in DEPTHS:
                runs[depth].append(time_decode(depth, processes))
            done = run_child(command, 1800)
            if done.returncode != 0:
                raise SystemExit(f"steptrace failed: {done.stderr.strip()[-300:]}")
            runs["steptrace"].append(done.wall_s)
        _PIECES = []
        analysis = in_fresh_process(analysis_times, path, args.repeats, processes)
    median = {name: statistics.median(times) for name, times in runs.items()}
    median["analysis"] = statistics.median(analysis)
    report(size, median)
    row = [f"{args.copies}x", f"{size / MB:.0f}", processes, *result_cells(size, median)]
    results.write("throughput_floor", run, RESULT_COLUMNS, [row])
    return 0


RESULT_COLUMNS = (
    "copies",
    "JSON MB",
    "decoding processes",
    f"budget s ({TARGET_MB_S} MB/s)",
    "start s",
    "decode raw s",
    "decode typed s",
    "decode columns s",
    "analysis s",
    "floor s (start + columns + analysis)",
    "floor MB/s",
    "steptrace analyze s",
    "steptrace MB/s",
)


def result_cells(size: int, median: dict[str, float]) -> list[object]:
    """The medians and the floor for RESULTS.md, after the copies, size and processes."""
    floor = median["start"] + median["columns"] + median["analysis"]
    parts = ("start", *DEPTHS, "analysis")
    return [
        f"{size / (TARGET_MB_S * MB):.2f}",
        *(f"{median[name]:.2f}" for name in parts),
        f"{floor:.2f}",
        f"{size / MB / floor:.0f}",
        f"{median['steptrace']:.2f}",
        f"{size / MB / median['steptrace']:.0f}",
    ]


def report(size: int, median: dict[str, float]) -> None:
    budget = size / (TARGET_MB_S * MB)
    print(f"\nbudget at {TARGET_MB_S} MB/s: {budget:.2f} s")
    print(f"start {median['start']:.2f} s; analysis (one process) {median['analysis']:.2f} s")
    print(f"{'decoding':<10} {'decode s':>9} {'floor s':>8} {'floor MB/s':>11}  within budget")
    for depth in DEPTHS:
        floor = median["start"] + median[depth] + median["analysis"]
        print(
            f"{depth:<10} {median[depth]:>9.2f} {floor:>8.2f} {size / MB / floor:>11.0f}  "
            f"{'yes' if floor <= budget else 'NO'}"
        )
    real = median["steptrace"]
    print(f"steptrace analyze: {real:.2f} s, {size / MB / real:.0f} MB/s")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
