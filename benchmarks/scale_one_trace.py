"""One huge trace: wall time, peak RSS and throughput of ``steptrace analyze`` as it grows.

What is measured
----------------
The largest real trace in ``shared/traces`` (216k events, 54 MB of JSON) as it is (1x) and
replicated 8x and 32x (430 MB and 1.7 GB of JSON); with ``--big``, 150x (8.1 GB), written to
``/tmp`` and removed afterwards. A replica repeats the text of the ``traceEvents`` array,
formatted as Kineto wrote it, with the metadata before and after it kept once: copy ``k``
has every ``ts`` shifted by ``k * (span + 1000)`` us (integer microseconds, so the shift is
exact), ``ProfilerStep#N`` renamed ``ProfilerStep#(N + k * (max N + 1))``, and its flow
``id``, ``correlation`` and ``External id`` values offset by ``k * (max + 1)``, so that
the copies follow each other on the timeline as one longer, valid trace. The replicas are
gzip'd (ISA-L, level 1) into ``--work`` (default: a new folder under /tmp, removed at the
end) and built in a spawned interpreter, so that this process stays small.

Each measurement is a fresh process, the tools interleaved for ``--repeats`` rounds:

1. ``steptrace analyze TRACE --format json`` (stdout to /dev/null), as a user runs it: the
   streamed text decoded by one worker process per core (``--jobs``, default the cores);
2. ``steptrace -j1``: the same with ``--jobs 1``, everything in one process (the baseline
   of the workers' gain, measured in the same run);
3. ``json.loads(gzip.decompress(...))`` of the same file, where it fits: its peak RSS is
   predicted from the previous size (linear in the text) and the run is skipped when the
   prediction exceeds half of the memory available.

Wall time is taken around the child, with nothing else measuring it. Peak memory: for
steptrace, the peak over time of the PSS summed over its whole process tree, the workers
included (``process_tree``, psutil every 20 ms), in a second run of each round (the
sampling takes CPU: timed with it, the 32x run took 16% longer): the memory the command
takes from the machine, a page a worker shares with its parent counted once; the summed
RSS (an upper bound, such pages counted in every process) is reported beside it. For
json.loads, the child's ``ru_maxrss`` from ``os.wait4`` (``analyze_speed.run_child``),
from its timed run. Reported: medians, MB of JSON per second of the whole
process, and peak memory / uncompressed size. The load average is printed: on a shared
machine, quote the figures with it.

Targets (PASS/FAIL, on the largest trace of the run, >= 1 GB)
------------------------------------------------------------
* steptrace peak memory (PSS, process tree) / uncompressed size  <= 0.5
* steptrace wall time / json.loads'                              <= 0.25
* steptrace MB/s (whole process)                                 (informational; was >= 250)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import results
from analyze_speed import (
    DEFAULT_TRACE,
    JSON_CHILD,
    Run,
    bytecode_compiled,
    failure_reason,
    run_child,
)
from process_tree import run_tree

MB = 1_000_000
GAP_US = 1000
SIZES = (1, 8, 32)
BIG = 150  # copies of the 54 MB trace: 8.1 GB of JSON
_ARRAY = re.compile(rb'"traceEvents"\s*:\s*\[')
_END = re.compile(rb'"ts"\s*:\s*(-?\d+)(?:\.\d+)?\s*,\s*"dur"\s*:\s*(\d+)')
# the numbers a copy shifts; "ts" first: the shift of the timestamps
_KINDS = (b'"ts"', b'"ProfilerStep#', b'"id"', b'"correlation"', b'"External id"')
_NUMBERS = re.compile(rb'(?:"ts"|"ProfilerStep#|"id"|"correlation"|"External id")\s*:?\s*(-?\d+)')


@dataclass
class Sized:
    """One input: its copies, path and uncompressed size."""

    copies: int
    path: Path
    text_bytes: int
    runs: dict[str, list[Run]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------- replicas


def _parts(text: bytes) -> tuple[bytes, bytes, bytes]:
    """The text before the events, the events' text, the text after them."""
    key = _ARRAY.search(text)
    if key is None:
        raise SystemExit("the source trace has no traceEvents array")
    # where the array ends, found by a real JSON parser (ASCII: Kineto escapes the rest)
    decoded = text.decode("utf-8")
    if len(decoded) != len(text):
        raise SystemExit("the source trace is not ASCII: its offsets would differ")
    _, end = json.JSONDecoder().raw_decode(decoded, key.end() - 1)
    close = end - 1  # the array's "]"
    return text[: key.end()], text[key.end() : close].rstrip(), text[close:]


@dataclass
class Template:
    """The events' text cut around every number a copy shifts: text, number, ..., text."""

    texts: list[bytes]
    values: list[int]
    kinds: list[int]  # per value, its index in _KINDS

    @classmethod
    def of(cls, body: bytes) -> Template:
        texts, values, kinds, at = [], [], [], 0
        for match in _NUMBERS.finditer(body):
            if match.group(0).startswith(b'"ProfilerStep#') and b":" in match.group(0):
                continue  # "ProfilerStep#": 5 is not a step's name
            texts.append(body[at : match.start(1)])
            values.append(int(match.group(1)))
            kinds.append(next(i for i, k in enumerate(_KINDS) if match.group(0).startswith(k)))
            at = match.end(1)
        texts.append(body[at:])
        return cls(texts, values, kinds)

    def strides(self, body: bytes) -> tuple[int, ...]:
        """Per kind, the offset between copies: the span of the timestamps plus a gap for
        ``ts``, one more than the largest value for the others."""
        largest = [0] * len(_KINDS)
        for value, kind in zip(self.values, self.kinds, strict=True):
            largest[kind] = max(largest[kind], value)
        starts = [v for v, k in zip(self.values, self.kinds, strict=True) if k == 0]
        ends = [int(m.group(1)) + int(m.group(2)) for m in _END.finditer(body)]
        return (max(ends + starts) - min(starts) + GAP_US, *(n + 1 for n in largest[1:]))

    def copy(self, offsets: tuple[int, ...]) -> bytes:
        """The text with each value moved by the offset of its kind."""
        import numpy as np  # here: the measuring process stays small (see run_child)

        moved = np.array(self.values, dtype=np.int64) + np.array(offsets)[self.kinds]
        numbers = "\n".join(map(str, moved.tolist())).encode().split(b"\n")
        pieces = [p for pair in zip(self.texts, numbers, strict=False) for p in pair]
        return b"".join((*pieces, self.texts[-1]))


def build_replica(source: Path, target: Path, copies: int) -> int:
    """Write the ``copies``-fold replica of ``source`` to ``target`` (gzip); its text size."""
    from isal import igzip

    with igzip.open(source, "rb") as handle:
        text = handle.read()
    head, body, tail = _parts(text)
    del text
    template = Template.of(body)
    strides = template.strides(body)
    size = len(head) + len(tail)
    with igzip.open(target, "wb", compresslevel=1) as out:
        out.write(head)
        for k in range(copies):
            piece = template.copy(tuple(k * stride for stride in strides))
            assert k or piece == body, "the template does not give the text back"
            out.write(b",\n" + piece if k else piece)
            size += len(piece) + (2 if k else 0)
        out.write(tail)
    return size


def in_fresh_process(func: Callable[..., Any], *args: Any) -> Any:
    """``func(*args)`` in a spawned interpreter: this process never holds a trace."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(func, *args).result()


# ----------------------------------------------------------------------------- timing


def available_bytes() -> int:
    """MemAvailable from /proc/meminfo (Linux), else a large number."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 50


def time_size(
    item: Sized,
    tools: dict[str, Callable[[Path], list[str]]],
    repeats: int,
    loads_fits: bool,
    timeout_s: float,
) -> None:
    """Run the tools interleaved; a failure or a skip is recorded, not fatal."""
    if not loads_fits:
        item.skipped["json.loads"] = "predicted not to fit in half the available memory"
    for round_no in range(1, repeats + 1):
        for name, argv in tools.items():
            if name in item.skipped:
                continue
            run = _measured(name, argv(item.path), timeout_s)
            if run.returncode != 0:
                item.skipped[name] = failure_reason(run)
                print(f"  [{name}] FAILED: {item.skipped[name]}", flush=True)
                continue
            item.runs.setdefault(name, []).append(run)
            print(
                f"  {item.copies}x round {round_no} {name:<10} {run.wall_s:7.2f} s "
                f"{run.rss_bytes / MB:7.0f} MB",
                flush=True,
            )


def _measured(name: str, argv: list[str], timeout_s: float) -> Run:
    """json.loads: one run, its wall time and ``ru_maxrss``. steptrace: two runs, its wall
    time from one measured as json.loads' is (nothing beside it), its whole process tree's
    memory from the other: sampling the tree's PSS every 20 ms takes CPU from the measured
    command (on two cores, 10.3 s became 11.9 s on the 32x replica, 2026-12-07), so the
    sampled run's wall time would not compare with json.loads'."""
    if not name.startswith("steptrace"):
        return run_child(argv, timeout_s)
    timed = run_child(argv, timeout_s)
    if timed.returncode != 0:
        return timed
    tree = run_tree(argv, timeout_s=timeout_s)
    return Run(
        timed.wall_s,
        tree.peak_pss_bytes,
        tree.returncode,
        "",
        tree.stderr,
        tree_rss_bytes=tree.peak_rss_bytes,
    )


def loads_prediction(done: list[Sized], copies: int) -> float | None:
    """json.loads' peak RSS for ``copies``, linear in the text from the largest size run."""
    measured = [s for s in done if s.runs.get("json.loads")]
    if not measured:
        return None
    last = measured[-1]
    rss = max(r.rss_bytes for r in last.runs["json.loads"])
    return rss * copies / last.copies


# ----------------------------------------------------------------------------- report


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def _ratio(runs: list[Run], baseline: list[Run]) -> float:
    return statistics.median(r.wall_s for r in runs) / statistics.median(r.wall_s for r in baseline)


def report(items: list[Sized]) -> None:
    print(
        f"\n  {'size':<6}{'JSON MB':>9}{'tool':>14}{'median s':>10}{'min s':>8}{'max s':>8}"
        f"{'MB/s':>8}{'peak MB':>9}{'mem/size':>9}{'n':>3}"
    )
    for item in items:
        for name in ("steptrace", "steptrace -j1", "json.loads"):
            runs = item.runs.get(name, [])
            head = f"  {item.copies:<5}x{item.text_bytes / MB:>9.0f}{name:>14}"
            if not runs:
                print(f"{head}  -- {item.skipped.get(name, 'not run')}")
                continue
            walls = [r.wall_s for r in runs]
            median = statistics.median(walls)
            rss = max(r.rss_bytes for r in runs)
            print(
                f"{head}{median:>10.2f}{min(walls):>8.2f}{max(walls):>8.2f}"
                f"{item.text_bytes / MB / median:>8.0f}{rss / MB:>9.0f}"
                f"{rss / item.text_bytes:>9.2f}{len(runs):>3}"
            )
        st, one, js = (item.runs.get(n) for n in ("steptrace", "steptrace -j1", "json.loads"))
        if st and js:
            print(f"  {'':<6}steptrace / json.loads process {_ratio(st, js):.2f}")
        if st and one:
            print(f"  {'':<6}steptrace / steptrace -j1 {_ratio(st, one):.2f}")
    analysed = [i for i in items if i.runs.get("steptrace")]
    largest = max(analysed, key=lambda i: i.text_bytes, default=None)
    if largest is None or largest.text_bytes < 1_000_000_000:
        print("\n  targets: no trace of 1 GB or more was analysed")
        return
    runs, loads = largest.runs["steptrace"], largest.runs.get("json.loads")
    ratio = max(r.rss_bytes for r in runs) / largest.text_bytes
    speed = largest.text_bytes / MB / statistics.median(r.wall_s for r in runs)
    print(f"\n  {largest.copies}x: steptrace peak memory / size {ratio:.2f} (<= 0.5) ", end="")
    print(verdict(ratio <= 0.5))
    if loads:
        against = _ratio(runs, loads)
        print(f"  {largest.copies}x: steptrace / json.loads {against:.2f} (<= 0.25) ", end="")
        print(verdict(against <= 0.25))
    print(f"  {largest.copies}x: steptrace MB/s {speed:.0f} (informational)")


RESULT_COLUMNS = (
    "copies",
    "JSON MB",
    "steptrace s",
    "MB/s",
    "peak PSS MB (process tree)",
    "peak PSS / JSON",
    "summed RSS MB",
    "--jobs 1 s",
    "steptrace / --jobs 1",
    "json.loads s",
    "steptrace / json.loads",
    "json.loads peak RSS MB",
    "rounds",
)
RESULT_NOTES = (
    "Whole processes, medians of the rounds (the largest peak), interleaved. Targets on the"
    " largest trace of 1 GB or more: peak PSS of the process tree / JSON <= 0.5, steptrace /"
    " json.loads <= 0.25 (wall). Summed RSS counts the pages a worker shares with its parent"
    " once per process (an upper bound)."
)


def result_rows(items: list[Sized]) -> list[list[object]]:
    """Each size's medians for RESULTS.md ("–": not run, or failed)."""
    rows: list[list[object]] = []
    for item in items:
        st, one, js = (item.runs.get(n) for n in ("steptrace", "steptrace -j1", "json.loads"))
        wall = statistics.median(r.wall_s for r in st) if st else None
        peak = max(r.rss_bytes for r in st) if st else None
        summed = max(r.tree_rss_bytes or 0 for r in st) if st else None
        rows.append(
            [
                f"{item.copies}x",
                f"{item.text_bytes / MB:.0f}",
                _fixed(wall),
                _fixed(item.text_bytes / MB / wall if wall else None, 0),
                _fixed(peak / MB if peak else None, 0),
                _fixed(peak / item.text_bytes if peak else None),
                _fixed(summed / MB if summed else None, 0),
                _fixed(statistics.median(r.wall_s for r in one) if one else None),
                _fixed(_ratio(st, one) if st and one else None),
                _fixed(statistics.median(r.wall_s for r in js) if js else None),
                _fixed(_ratio(st, js) if st and js else None),
                _fixed(max(r.rss_bytes for r in js) / MB if js else None, 0),
                len(st or []),
            ]
        )
    return rows


def _fixed(value: float | None, digits: int = 2) -> str | None:
    return None if value is None else f"{value:.{digits}f}"


# ----------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE, help="source trace")
    parser.add_argument(
        "--steptrace",
        type=Path,
        default=Path(sys.executable).parent / "steptrace",
        help="steptrace executable (default: next to this interpreter)",
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), metavar="COPIES")
    parser.add_argument("--big", action="store_true", help=f"also {BIG}x (8.1 GB), in /tmp")
    parser.add_argument("--repeats", type=int, default=3, help="rounds per size (default 3)")
    parser.add_argument("--work", type=Path, default=None, help="folder for the replicas")
    parser.add_argument("--timeout", type=float, default=1800.0, help="per-run limit, s")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.steptrace.exists():
        sys.exit(f"no steptrace at {args.steptrace}; pass --steptrace")
    run = results.Run.start()
    print(bytecode_compiled())
    work = args.work or Path(tempfile.mkdtemp(prefix="steptrace-scale-", dir="/tmp"))
    work.mkdir(parents=True, exist_ok=True)
    sizes = sorted(set(args.sizes) | ({BIG} if args.big else set()))
    tools: dict[str, Callable[[Path], list[str]]] = {
        "steptrace": lambda t: [str(args.steptrace), "analyze", str(t), "--format", "json"],
        "steptrace -j1": lambda t: [
            *(str(args.steptrace), "analyze", str(t), "--format", "json", "--jobs", "1")
        ],
        "json.loads": lambda t: [sys.executable, "-c", JSON_CHILD, str(t)],
    }
    print(f"python {sys.version.split()[0]}; steptrace {args.steptrace}; cpus {os.cpu_count()}")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    done: list[Sized] = []
    try:
        for copies in sizes:
            target = work / f"x{copies}.json.gz"
            t0 = time.perf_counter()
            text_bytes = in_fresh_process(build_replica, args.trace, target, copies)
            print(
                f"\n{copies}x: {text_bytes / MB:.0f} MB of JSON "
                f"({target.stat().st_size / MB:.0f} MB gzip), built in "
                f"{time.perf_counter() - t0:.0f} s",
                flush=True,
            )
            item = Sized(copies, target, text_bytes)
            predicted = loads_prediction(done, copies)
            fits = predicted is None or predicted < available_bytes() / 2
            time_size(item, tools, 1 if copies == BIG else args.repeats, fits, args.timeout)
            done.append(item)
            target.unlink()
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report(done)
    results.write("scale_one_trace", run, RESULT_COLUMNS, result_rows(done), notes=RESULT_NOTES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
