"""Many ranks at once: one process vs the local process pool vs a Dask LocalCluster.

What is measured
----------------
A job of N synthetic ranks is written to a temporary folder: N copies of one real trace
(default: the 54 MB, 216k-event DDP trace of ``../shared/traces``), each with its own
``distributedInfo`` (rank k of N) and its clock shifted (``baseTimeNanoseconds`` + k ms,
so no event is rewritten), and one planted straggler: rank N // 3, whose label
``--phase`` (default: the user label of most time with no collective inside) is stretched
by ``--extra-ms`` (default: a quarter of the median step) in every instance, every later
event shifted by as much (the phase's exclusive time grows, nothing else changes), and
every other rank waits as much longer in the first collective after each instance (time
inserted in its middle), as ranks waiting for a late one do.

For each N, in this order, ``steptrace analyze DIR --format json`` runs as a child
process:

1. ``--jobs 1``: one rank after another, in one process;
2. ``--jobs J``: the local process pool (J: ``--jobs``, default the cores);
3. ``--scheduler local --jobs J``: a Dask ``LocalCluster`` of J worker processes.

For each: wall time, CPU time of the whole process tree (user + system of every
process, the last value sampled), so that cpu / wall shows how many cores were at work
(on a shared machine, fewer than asked), and the peak RSS of the whole process tree
(the command, its pool or its cluster: the sum over every process, sampled every 20 ms
with psutil). The three
JSON reports must be identical byte for byte, and the first straggler must be the
planted rank in the planted phase (the script stops with an error otherwise). Ratios are
of the same run. Targets (issue 17, 2 cores): 64 ranks x 54 MB with the pool in <= 0.6x
the time of one process, peak memory <= 1.5 GB.

    python benchmarks/scale_ranks.py               # N = 8, 64, 256 (14 GB of disk at 256)
    python benchmarks/scale_ranks.py --ranks 8 \
        --trace tests/fixtures/ranks/balanced-4/rank-0.json.gz
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import results  # noqa: E402
from analyze_speed import bytecode_compiled  # noqa: E402
from process_tree import run_tree  # noqa: E402

DEFAULT_TRACE = (
    ROOT.parent / "shared/traces/gpu/v100_ddp2_rank1_train_profmem__df_index_resolver.json.gz"
)
_BASE = re.compile(rb'"baseTimeNanoseconds"\s*:\s*(\d+)')
_COMMAND = "from steptrace.cli import main; main()"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="8,64,256", help="comma-separated N")
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--phase", default=None, help="label to stretch (default: see above)")
    parser.add_argument("--extra-ms", type=float, default=None, help="default: 25%% of a step")
    parser.add_argument("--modes", default="one,pool,dask")
    parser.add_argument("--folder", type=Path, default=None, help="where to write (default: tmp)")
    args = parser.parse_args()
    run = results.Run.start()
    print(bytecode_compiled())
    raw = _read(args.trace)
    extra_ms = args.extra_ms if args.extra_ms is not None else max(2.0, _step_ms(args.trace) / 4)
    late, waiting, phase = _variants(raw, args.phase, extra_ms)
    print(
        f"source: {args.trace.name}, {len(raw) / 1e6:.1f} MB of JSON; straggler phase "
        f"{phase!r} +{extra_ms:.1f} ms per instance; jobs {args.jobs}; "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    rows: list[list[object]] = []
    for n in (int(x) for x in args.ranks.split(",")):
        with tempfile.TemporaryDirectory(dir=args.folder) as folder:
            slow = n // 3
            _write_job((late, waiting), n, slow, Path(folder))
            modes = args.modes.split(",")
            measured = _measure(Path(folder), n, len(raw), slow, phase, args.jobs, modes)
            rows += [[n, f"{n * len(raw) / 1e9:.2f}", *row] for row in measured]
    notes = (
        f"Source {args.trace.name}; straggler phase {phase!r} +{extra_ms:.1f} ms per instance;"
        " the reports identical in every mode and the planted straggler found (else no table)."
    )
    results.write("scale_ranks", run, RESULT_COLUMNS, rows, notes=notes)


RESULT_COLUMNS = (
    "ranks",
    "JSON GB",
    "mode",
    "wall s",
    "CPU s (process tree)",
    "cores used",
    "peak RSS MB (process tree)",
    "wall / one process",
)


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _step_ms(trace: Path) -> float:
    """The median step's wall time, by steptrace."""
    import steptrace

    return steptrace.analyze(trace).analysis.summary.wall_ms.median


def _phase(events: list[dict[str, Any]], spans: list[tuple[float, float]]) -> str:
    """The user label of most total time whose instances hold no collective: stretching it
    leaves the others' collectives alone (a label around a collective would grow on every
    rank)."""
    totals: dict[str, float] = {}
    bad: set[str] = set()
    starts = [a for a, _ in spans]
    for e in events:
        name = str(e.get("name", ""))
        if e.get("cat") != "user_annotation" or e.get("ph") != "X" or _LIBRARY.match(name):
            continue
        begin, end = e["ts"], e["ts"] + e["dur"]
        k = bisect.bisect_left(starts, begin)
        if (k < len(spans) and spans[k][0] < end) or (k and spans[k - 1][1] > begin):
            bad.add(name)
        totals[name] = totals.get(name, 0.0) + e["dur"]
    good = [n for n in totals if n not in bad]
    if not good:
        raise SystemExit("no user label without a collective inside: give --phase")
    return max(good, key=lambda n: totals[n])


def _write_job(variants: tuple[bytes, bytes], n: int, slow: int, folder: Path) -> None:
    """The straggler spends longer in the phase (``variants[0]``); every other rank waits as
    much longer in the first collective after it (``variants[1]``)."""
    late, waiting = variants
    for rank in range(n):
        text = _as_rank(late if rank == slow else waiting, rank, n, shift_ns=rank * 1_000_000)
        (folder / f"rank-{rank}.json").write_bytes(text)


def _as_rank(raw: bytes, rank: int, world: int, shift_ns: int) -> bytes:
    """The trace as rank ``rank`` of ``world``, its clock ``shift_ns`` later; only the
    top-level ``distributedInfo`` and ``baseTimeNanoseconds`` are rewritten."""
    at = raw.index(b'"distributedInfo"')
    start = raw.index(b"{", at)
    head = raw[start : start + 65536].decode("utf-8", "replace")
    info, length = json.JSONDecoder().raw_decode(head)
    end = start + len(head[:length].encode())
    info.update(rank=rank, world_size=world)
    for group in info.get("pg_config") or []:
        group.update(pg_size=world, ranks=list(range(world)))
    text = raw[:start] + json.dumps(info).encode() + raw[end:]
    found = _BASE.search(text)
    if found:
        base = int(found.group(1)) + shift_ns
        return text[: found.start(1)] + str(base).encode() + text[found.end(1) :]
    first = text.index(b"{")
    return text[: first + 1] + f'"baseTimeNanoseconds": {shift_ns},'.encode() + text[first + 1 :]


_COLLECTIVES = ("nccl_kernel", "gloo:", "nccl:", "c10d::", "record_param_comms")
_LIBRARY = re.compile(r"^(gloo|nccl|rccl):|^ProfilerStep#")


def _variants(raw: bytes, phase: str | None, extra_ms: float) -> tuple[bytes, bytes, str]:
    """(the straggler: each ``phase`` longer; the others: the collective after it longer;
    the phase)."""
    document: dict[str, Any] = msgspec.json.decode(raw)
    events = document["traceEvents"]
    spans = _collective_spans(events)
    phase = phase or _phase(events, spans)
    ends = sorted(
        e["ts"] + e["dur"] for e in events if e.get("ph") == "X" and e.get("name") == phase
    )
    if not ends:
        raise SystemExit(f"no {phase!r} in the trace")
    late = _stretched(events, ends, extra_ms * 1000, phase)
    starts = [a for a, _ in spans]
    waits = sorted(
        (spans[k][0] + spans[k][1]) / 2
        for k in (bisect.bisect_left(starts, p) for p in ends)
        if k < len(spans)
    )  # the middle of the first collective after each instance
    waiting = _stretched(events, waits, extra_ms * 1000, None)
    return (
        msgspec.json.encode({**document, "traceEvents": late}),
        msgspec.json.encode({**document, "traceEvents": waiting}),
        phase,
    )


def _collective_spans(events: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """The collective events of the first kind the trace has (NCCL kernels first), sorted."""
    for kind in _COLLECTIVES:
        spans = sorted(
            (e["ts"], e["ts"] + e["dur"])
            for e in events
            if e.get("ph") == "X"
            and isinstance(e.get("dur"), (int, float))
            and e["dur"] > 0
            and _is(kind, e)
        )
        if spans:
            return spans
    raise SystemExit("no collective in the trace: the others cannot wait for a straggler")


def _is(kind: str, event: dict[str, Any]) -> bool:
    name = str(event.get("name", ""))
    if kind == "nccl_kernel":
        return event.get("cat") == "kernel" and name.startswith("nccl")
    return name == kind if kind == "record_param_comms" else name.startswith(kind)


def _stretched(
    events: list[dict[str, Any]], points: list[float], delta: float, own: str | None
) -> list[dict[str, Any]]:
    """Time inserted at each point: later events later, events across a point longer (and
    ``own`` events, which end at a point, longer too)."""
    out = []
    for e in events:
        if "ts" not in e or not isinstance(e["ts"], (int, float)):
            out.append(e)
            continue
        start = e["ts"]
        moved = {**e, "ts": start + delta * bisect.bisect_right(points, start)}
        if isinstance(e.get("dur"), (int, float)):
            end = start + e["dur"]
            mine = 1 if own is not None and e.get("ph") == "X" and e.get("name") == own else 0
            moved["dur"] = end + delta * (bisect.bisect_left(points, end) + mine) - moved["ts"]
        out.append(moved)
    return out


def _measure(
    folder: Path, n: int, size: int, slow: int, phase: str, jobs: int, modes: list[str]
) -> list[list[object]]:
    """Each mode's wall, CPU and peak for RESULTS.md, once its report is the others' and
    names the planted straggler (else the script stops)."""
    options = {
        "one": ["--jobs", "1"],
        "pool": ["--jobs", str(jobs)],
        "dask": ["--scheduler", "local", "--jobs", str(jobs)],
    }
    measured = {}
    for mode in modes:
        out = folder.parent / f"{folder.name}.{mode}.json"
        wall, cpu, peak = _run([*_analyze(folder), *options[mode]], out)
        measured[mode] = (wall, cpu, peak, out.read_bytes())
        out.unlink()
    print(f"{n} ranks, {n * size / 1e9:.2f} GB of JSON:")
    base = measured.get("one")
    for mode, (wall, cpu, peak, _) in measured.items():
        ratio = f", {wall / base[0]:.2f}x one process" if base and mode != "one" else ""
        print(
            f"  {mode:4}: {wall:7.2f} s (cpu {cpu:6.1f} s, {cpu / wall:.2f} cores), peak RSS "
            f"of the process tree {peak / 1e6:6.0f} MB{ratio}"
        )
    reports = {mode: r[3] for mode, r in measured.items()}
    if len(set(reports.values())) != 1:
        raise SystemExit(f"  the reports differ between {sorted(reports)}")
    found = msgspec.json.decode(next(iter(reports.values())))["stragglers"]
    first = (found[0]["rank"], found[0]["phase"]) if found else None
    if first != (slow, phase):
        raise SystemExit(f"  straggler found {first}, planted {(slow, phase)}")
    print(
        f"  reports identical in {len(reports)} modes; straggler found: rank {slow} in {phase!r} "
        f"(+{found[0]['excess_ms']:.1f} ms per step), as planted"
    )
    if base and "pool" in measured and n >= 64:
        ratio = measured["pool"][0] / base[0]
        peak_gb = measured["pool"][2] / 1e9
        verdicts = ("PASS" if ratio <= 0.6 else "FAIL", "PASS" if peak_gb <= 1.5 else "FAIL")
        print(
            f"  targets: pool / one {ratio:.2f} ({verdicts[0]} <= 0.6), "
            f"pool peak {peak_gb:.2f} GB ({verdicts[1]} <= 1.5)"
        )
    return [
        [
            mode,
            f"{wall:.2f}",
            f"{cpu:.1f}",
            f"{cpu / wall:.2f}",
            f"{peak / 1e6:.0f}",
            f"{wall / base[0]:.2f}" if base else None,
        ]
        for mode, (wall, cpu, peak, _) in measured.items()
    ]


def _analyze(folder: Path) -> list[str]:
    return [sys.executable, "-c", _COMMAND, "analyze", str(folder), "--format", "json"]


def _run(command: list[str], out: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and the peak summed RSS of the command's process tree."""
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    run = run_tree(command, out, env)
    if run.returncode != 0:
        raise SystemExit(f"{' '.join(command[3:])}: exit {run.returncode}: {run.stderr[-500:]}")
    return run.wall_s, run.cpu_s, run.peak_rss_bytes


if __name__ == "__main__":
    main()
