"""Speed acceptance benchmark for ``steptrace analyze``.

What is measured
----------------
Two inputs: the largest real trace in ``shared/traces`` (216k events, 54 MB of JSON) and an
8x replicated copy of it built into ``benchmarks/.work/`` (1.7 M events). The copy repeats
``traceEvents`` 8 times; copy ``k`` has its ``ts`` shifted by ``k * (span + 1000 us)`` so the
copies follow each other on the timeline, ``ProfilerStep#N`` renamed to
``ProfilerStep#(N + 100 k)`` so the steps stay distinct, and its flow ``id``, ``correlation`` and
``External id`` values offset by ``k * (max + 1)`` so that CPU-GPU links stay one to one (as in a
real long trace). The metadata keys are kept. The copy is reused while it is newer than this
script and than the source trace.

Each tool runs as a whole process (interpreter start, imports, gunzip, parse, analysis), the
tools interleaved (A B C A B C ...) for ``--repeats`` rounds. Wall time is taken around the
child; peak RSS is the child's ``ru_maxrss`` from ``os.wait4`` (on Linux the largest of the
child and its reaped descendants, e.g. HTA's parser pool worker, not their sum). A forked
child's ``ru_maxrss`` starts at the parent's RSS, so this process never loads a trace itself:
counting events and building the copy run in spawned interpreters. Medians are quoted because the
machine is small and shared.

1. ``steptrace analyze TRACE --format json`` (stdout to /dev/null).
2. The baseline: ``json.loads(gzip.decompress(...))`` of the same file in a fresh interpreter
   (this one). The child also reports the time of the ``json.loads`` call alone (parse only).
3. Holistic Trace Analysis (PyPI ``holistictraceanalysis``, in its own venv at
   ``benchmarks/.work/hta-venv``): ``TraceAnalysis(trace_dir=DIR)`` on a folder holding only that
   trace, then ``get_temporal_breakdown(visualize=False)``.
4. ``steptrace scrub TRACE -o NEW.json.gz`` (a new file each run, deleted before the next),
   reported as MB of uncompressed JSON per second of the whole process.

Targets (PASS/FAIL)
-------------------
* steptrace / json.loads process      <= 1.0
* HTA / steptrace                     >= 8
* steptrace peak RSS / uncompressed   <  3
* steptrace / json.loads parse only   (informational)
* steptrace scrub MB/s                (informational)
"""

from __future__ import annotations

import argparse
import compileall
import gzip
import importlib.util
import itertools
import json
import multiprocessing
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import results

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"
DEFAULT_TRACE = Path(
    "/work/shared/traces/gpu/v100_ddp2_rank1_train_profmem__df_index_resolver.json.gz"
)
HTA_VENV = WORK / "hta-venv"
SCRUB_OUT = WORK / "scrub-out"  # scrub's copies, one at a time
COPIES = 8
GAP_US = 1000
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
ID_ARGS = ("correlation", "External id")
MB = 1_000_000

JSON_CHILD = """\
import gzip, json, sys, time
raw = gzip.decompress(open(sys.argv[1], 'rb').read())
t0 = time.perf_counter()
json.loads(raw)
print(time.perf_counter() - t0)
"""

HTA_CHILD = """\
import sys
from hta.trace_analysis import TraceAnalysis
TraceAnalysis(trace_dir=sys.argv[1]).get_temporal_breakdown(visualize=False)
"""

HTA_VERSIONS = """\
from importlib.metadata import version
print(version('holistictraceanalysis'), version('pandas'))
"""


@dataclass
class Run:
    """One finished child process."""

    wall_s: float
    rss_bytes: int  # ru_maxrss; for a process tree (``process_tree``), its peak summed PSS
    returncode: int
    stdout: str
    stderr: str
    tree_rss_bytes: int | None = None  # a process tree's peak summed RSS (an upper bound)


@dataclass
class Tool:
    """A command to time; ``argv`` is built per trace."""

    name: str
    argv: Callable[[Path], list[str]]
    runs: list[Run] = field(default_factory=list)
    parse_s: list[float] = field(default_factory=list)
    error: str | None = None


@dataclass
class TraceInfo:
    """The input trace and its size."""

    label: str
    path: Path
    events: int
    uncompressed_bytes: int


# ----------------------------------------------------------------------------- child runs


def bytecode_compiled() -> str:
    """steptrace's modules compiled to bytecode before the runs, as ``pip install`` does for
    an installed package: an editable install under ``PYTHONDONTWRITEBYTECODE`` (set on this
    project's machines) would compile every module from source in every run, about 0.09 s
    of a run that a user's installed copy does not spend."""
    spec = importlib.util.find_spec("steptrace")  # the package is located, not imported
    if spec is None or not spec.submodule_search_locations:
        return "steptrace's bytecode: package not found from this interpreter, left as is"
    folder = next(iter(spec.submodule_search_locations))
    done = compileall.compile_dir(folder, quiet=1)
    return f"steptrace's bytecode: {'compiled' if done else 'NOT all compiled'} in {folder}"


def run_child(argv: list[str], timeout_s: float) -> Run:
    """Run ``argv`` to completion; wall time and the child's own rusage via ``os.wait4``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(
            wall_s=wall,
            rss_bytes=usage.ru_maxrss * 1024,  # Linux reports KiB
            returncode=proc.returncode,
            stdout=out.read().decode(errors="replace"),
            stderr=err.read().decode(errors="replace"),
        )


def failure_reason(run: Run) -> str:
    """The last non-empty line of the child's stderr (the exception, usually)."""
    lines = [line.strip() for line in run.stderr.splitlines() if line.strip()]
    tail = lines[-1] if lines else "(no stderr)"
    return f"exit {run.returncode}: {tail}"[:300]


def time_tools(tools: list[Tool], trace: Path, repeats: int, timeout_s: float) -> None:
    """Run the tools interleaved, ``repeats`` rounds; a tool that fails is dropped."""
    for round_no in range(1, repeats + 1):
        for tool in tools:
            if tool.error is not None:
                continue
            run = run_child(tool.argv(trace), timeout_s)
            if run.returncode != 0:
                tool.error = failure_reason(run)
                print(f"  [{tool.name}] FAILED: {tool.error}", flush=True)
                continue
            tool.runs.append(run)
            if tool.name == "json.loads":
                tool.parse_s.append(float(run.stdout.strip().splitlines()[-1]))
            print(f"  round {round_no} {tool.name:<12} {run.wall_s:7.2f} s", flush=True)


# ----------------------------------------------------------------------------- the 8x copy


def is_fresh(target: Path, *sources: Path) -> bool:
    """Whether ``target`` exists and is newer than every source."""
    if not target.exists():
        return False
    mtime = target.stat().st_mtime
    return all(mtime > src.stat().st_mtime for src in sources)


def load_trace(path: Path) -> dict[str, Any]:
    """Parse a gzip'd (or plain) Chrome trace JSON object."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    data: dict[str, Any] = json.loads(raw)
    return data


def trace_span(events: list[dict[str, Any]]) -> float:
    """Last end minus first start, in microseconds."""
    timed = [ev for ev in events if "ts" in ev]
    start = min(ev["ts"] for ev in timed)
    end = max(ev["ts"] + ev.get("dur", 0) for ev in timed)
    return float(end - start)


def id_strides(events: list[dict[str, Any]]) -> dict[str, int]:
    """Per id kind, one more than the largest value: the offset between copies."""
    strides = {"id": 0, **dict.fromkeys(ID_ARGS, 0)}
    for ev in events:
        if isinstance(ev.get("id"), int):
            strides["id"] = max(strides["id"], ev["id"] + 1)
        args = ev.get("args")
        if isinstance(args, dict):
            for key in ID_ARGS:
                if isinstance(args.get(key), int):
                    strides[key] = max(strides[key], args[key] + 1)
    return strides


def shifted_event(ev: dict[str, Any], k: int, shift: float, strides: dict[str, int]) -> str:
    """Event ``ev`` as it appears in copy ``k``, serialised."""
    if k == 0:
        return json.dumps(ev)
    out = dict(ev)
    if "ts" in out:
        ts = out["ts"] + k * shift
        out["ts"] = int(ts) if isinstance(out["ts"], int) and ts == int(ts) else ts
    if isinstance(out.get("id"), int):
        out["id"] += k * strides["id"]
    match = STEP_RE.match(str(out.get("name", "")))
    if match:
        out["name"] = f"ProfilerStep#{int(match.group(1)) + 100 * k}"
    args = out.get("args")
    if isinstance(args, dict) and any(isinstance(args.get(key), int) for key in ID_ARGS):
        args = dict(args)
        for key in ID_ARGS:
            if isinstance(args.get(key), int):
                args[key] += k * strides[key]
        out["args"] = args
    return json.dumps(out)


def replicated_chunks(data: dict[str, Any], copies: int) -> Iterator[str]:
    """The text of the replicated trace, piece by piece, metadata keys in their order."""
    events: list[dict[str, Any]] = data["traceEvents"]
    shift = trace_span(events) + GAP_US
    strides = id_strides(events)
    yield "{\n"
    for i, (key, value) in enumerate(data.items()):
        yield "," if i else ""
        if key != "traceEvents":
            yield f"{json.dumps(key)}: {json.dumps(value)}\n"
            continue
        yield '"traceEvents": [\n'
        for k in range(copies):
            body = ",\n".join(shifted_event(ev, k, shift, strides) for ev in events)
            yield (",\n" if k else "") + body
        yield "\n]\n"
    yield "}\n"


def build_replica(source: Path, target: Path, copies: int) -> None:
    """Write the ``copies``-fold replica of ``source`` to ``target`` (gzip'd), atomically."""
    print(f"building {target.name} ({copies}x) ...", flush=True)
    t0 = time.perf_counter()
    data = load_trace(source)
    tmp = target.with_suffix(".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=6) as fh:
        for chunk in replicated_chunks(data, copies):
            fh.write(chunk)
    tmp.replace(target)
    print(f"built in {time.perf_counter() - t0:.1f} s", flush=True)


def uncompressed_size(path: Path) -> int:
    """Bytes of the decompressed file, streamed."""
    total = 0
    with gzip.open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            total += len(chunk)
    return total


def count_events(path: Path) -> int:
    """Number of entries in ``traceEvents``."""
    return len(load_trace(path)["traceEvents"])


def in_fresh_process(func: Callable[..., Any], *args: Any) -> Any:
    """Run ``func(*args)`` in a spawned interpreter, so that this process stays small.

    A child's ``ru_maxrss`` starts from the RSS of the process that forked it, so the parent
    must never hold a parsed trace.
    """
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(func, *args).result()


def trace_infos(source: Path, rebuild: bool) -> list[TraceInfo]:
    """The source trace and its 8x replica (built if missing or stale)."""
    events: int = in_fresh_process(count_events, source)
    stem = source.name.removesuffix(".gz").removesuffix(".json")
    replica = WORK / f"{stem}__x{COPIES}.json.gz"
    WORK.mkdir(parents=True, exist_ok=True)
    if rebuild or not is_fresh(replica, Path(__file__).resolve(), source):
        in_fresh_process(build_replica, source, replica, COPIES)
    else:
        print(f"reusing {replica}", flush=True)
    return [
        TraceInfo("1x", source, events, uncompressed_size(source)),
        TraceInfo(f"{COPIES}x", replica, COPIES * events, uncompressed_size(replica)),
    ]


# ----------------------------------------------------------------------------- HTA venv


def ensure_hta(python: str) -> tuple[Path | None, str]:
    """The HTA venv's interpreter and a version line, or None and the reason it is missing."""
    venv_python = HTA_VENV / "bin" / "python"
    pip = [str(venv_python), "-m", "pip", "install", "-q"]
    check = [str(venv_python), "-c", "import hta.trace_analysis"]
    try:
        if not venv_python.exists():
            print(f"creating {HTA_VENV} with {python} ...", flush=True)
            subprocess.run([python, "-m", "venv", str(HTA_VENV)], check=True)
            subprocess.run([*pip, "holistictraceanalysis"], check=True)
        if subprocess.run(check, capture_output=True).returncode != 0:
            print("HTA does not import; pinning pandas<3 ...", flush=True)
            subprocess.run([*pip, "pandas<3"], check=True)
        probe = subprocess.run(check, capture_output=True, text=True)
        if probe.returncode != 0:
            lines = probe.stderr.strip().splitlines() or ["(no stderr)"]
            return None, f"HTA does not import: {lines[-1]}"
    except (OSError, subprocess.CalledProcessError) as exc:
        return None, f"HTA could not be installed: {exc}"
    versions = subprocess.run(
        [str(venv_python), "-c", HTA_VERSIONS], capture_output=True, text=True, check=False
    ).stdout.split()
    return venv_python, "holistictraceanalysis {} with pandas {}".format(*versions)


def hta_argv(venv_python: Path, dirs: dict[Path, Path]) -> Callable[[Path], list[str]]:
    """HTA child command; each trace gets its own folder holding only a link to it."""

    def argv(trace: Path) -> list[str]:
        return [str(venv_python), "-c", HTA_CHILD, str(dirs[trace])]

    return argv


def hta_dirs(traces: list[TraceInfo], root: Path) -> dict[Path, Path]:
    """One folder per trace with only that trace in it (HTA reads every trace in a folder)."""
    dirs: dict[Path, Path] = {}
    for info in traces:
        folder = root / info.label
        folder.mkdir()
        (folder / info.path.name).symlink_to(info.path.resolve())
        dirs[info.path] = folder
    return dirs


# ----------------------------------------------------------------------------- report


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def print_table(tools: list[Tool]) -> None:
    print(f"  {'tool':<14}{'median s':>10}{'min s':>9}{'max s':>9}{'peak RSS MB':>13}{'n':>4}")
    for tool in tools:
        if not tool.runs:
            print(f"  {tool.name:<14}{'--':>10}  {tool.error or 'skipped'}")
            continue
        walls = [run.wall_s for run in tool.runs]
        rss = max(run.rss_bytes for run in tool.runs) / MB
        print(
            f"  {tool.name:<14}{statistics.median(walls):>10.2f}{min(walls):>9.2f}"
            f"{max(walls):>9.2f}{rss:>13.0f}{len(walls):>4}"
        )
    loads = next(tool for tool in tools if tool.name == "json.loads")
    if loads.parse_s:
        print(
            f"  {'  parse only':<14}{statistics.median(loads.parse_s):>10.2f}"
            f"{min(loads.parse_s):>9.2f}{max(loads.parse_s):>9.2f}"
            "   (json.loads call alone, in the json.loads child)"
        )


def median_wall(tool: Tool) -> float | None:
    return statistics.median(run.wall_s for run in tool.runs) if tool.runs else None


def print_ratios(tools: list[Tool], info: TraceInfo) -> None:
    by_name = {tool.name: tool for tool in tools}
    st = median_wall(by_name["steptrace"])
    loads = median_wall(by_name["json.loads"])
    parse = by_name["json.loads"].parse_s
    hta = median_wall(by_name["HTA"]) if "HTA" in by_name else None
    if st is None:
        print("  no ratios: steptrace did not run")
        return
    if loads is not None:
        ratio = st / loads
        print(f"  steptrace / json.loads process  {ratio:6.2f}  (<= 1.0)  {verdict(ratio <= 1.0)}")
    if parse:
        ratio = st / statistics.median(parse)
        print(f"  steptrace / json.loads parse    {ratio:6.2f}  (informational)")
    if hta is not None:
        ratio = hta / st
        print(f"  HTA / steptrace                 {ratio:6.2f}  (>= 8)    {verdict(ratio >= 8)}")
    else:
        print("  HTA / steptrace                     --  (HTA did not run)")
    rss = max(run.rss_bytes for run in by_name["steptrace"].runs)
    ratio = rss / info.uncompressed_bytes
    print(f"  steptrace RSS / uncompressed    {ratio:6.2f}  (< 3)     {verdict(ratio < 3)}")
    scrub = median_wall(by_name["scrub"]) if "scrub" in by_name else None
    if scrub is not None:
        speed = info.uncompressed_bytes / MB / scrub
        print(f"  steptrace scrub MB/s            {speed:6.1f}  (informational, whole process)")


RESULT_NOTES = (
    "Whole processes, medians of the rounds, interleaved. Targets: steptrace / json.loads <= 1,"
    " HTA / steptrace >= 8, peak RSS / JSON < 3 (the largest single process's ru_maxrss)."
)
RESULT_COLUMNS = (
    "trace",
    "events",
    "JSON MB",
    "steptrace s",
    "json.loads s",
    "steptrace / json.loads",
    "HTA s",
    "HTA / steptrace",
    "steptrace peak RSS / JSON",
    "scrub MB/s",
    "rounds",
)


def result_row(info: TraceInfo, tools: list[Tool]) -> list[object]:
    """One trace's medians and ratios for RESULTS.md ("–": the tool did not run)."""
    by_name = {tool.name: tool for tool in tools}
    walls = {name: median_wall(tool) for name, tool in by_name.items()}
    st, loads, hta, scrub = (walls.get(n) for n in ("steptrace", "json.loads", "HTA", "scrub"))
    runs = by_name["steptrace"].runs
    peak = max((run.rss_bytes for run in runs), default=None)
    return [
        info.label,
        f"{info.events:,}",
        f"{info.uncompressed_bytes / MB:.0f}",
        _fixed(st),
        _fixed(loads),
        _fixed(st / loads if st and loads else None),
        _fixed(hta),
        _fixed(hta / st if hta and st else None),
        _fixed(peak / info.uncompressed_bytes if peak else None),
        _fixed(info.uncompressed_bytes / MB / scrub if scrub else None, 1),
        len(runs),
    ]


def _fixed(value: float | None, digits: int = 2) -> str | None:
    return None if value is None else f"{value:.{digits}f}"


def report(info: TraceInfo, tools: list[Tool]) -> None:
    print(f"\n=== {info.label}: {info.path.name}")
    print(
        f"  events {info.events:,}   uncompressed {info.uncompressed_bytes / MB:.1f} MB   "
        f"gzip {info.path.stat().st_size / MB:.1f} MB"
    )
    print_table(tools)
    print_ratios(tools, info)


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
    parser.add_argument(
        "--repeats",
        type=int,
        nargs="+",
        default=[5, 3],
        metavar="N",
        help="rounds for the 1x and the 8x trace; one value for both (default: 5 3)",
    )
    parser.add_argument("--skip-hta", action="store_true", help="do not run HTA")
    parser.add_argument("--hta-python", default="python3.11", help="interpreter for the HTA venv")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the 8x copy")
    parser.add_argument("--timeout", type=float, default=600.0, help="per-run limit in seconds")
    args = parser.parse_args(argv)
    if len(args.repeats) not in (1, 2) or min(args.repeats) < 1:
        parser.error("--repeats takes one or two positive counts")
    if len(args.repeats) == 1:
        args.repeats = args.repeats * 2
    return args


def scrub_argv(steptrace: Path) -> Callable[[Path], list[str]]:
    """``steptrace scrub`` into a new file per run (it never overwrites); the last is removed."""
    runs = itertools.count()

    def argv(trace: Path) -> list[str]:
        shutil.rmtree(SCRUB_OUT, ignore_errors=True)
        SCRUB_OUT.mkdir(parents=True)
        target = SCRUB_OUT / f"{next(runs)}-{trace.name}"
        return [str(steptrace), "scrub", str(trace), "-o", str(target)]

    return argv


def make_tools(
    args: argparse.Namespace, hta_python: Path | None, dirs: dict[Path, Path]
) -> list[Tool]:
    tools = [
        Tool("steptrace", lambda t: [str(args.steptrace), "analyze", str(t), "--format", "json"]),
        Tool("json.loads", lambda t: [sys.executable, "-c", JSON_CHILD, str(t)]),
        Tool("scrub", scrub_argv(args.steptrace)),
    ]
    if hta_python is not None:
        tools.append(Tool("HTA", hta_argv(hta_python, dirs)))
    return tools


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.steptrace.exists():
        sys.exit(f"no steptrace at {args.steptrace}; pass --steptrace")
    run = results.Run.start()
    t_start = time.perf_counter()
    traces = trace_infos(args.trace, args.rebuild)
    hta_python: Path | None = None
    if args.skip_hta:
        print("HTA: skipped (--skip-hta)")
    else:
        hta_python, note = ensure_hta(args.hta_python)
        print(f"HTA: {note}")
    print(f"python {sys.version.split()[0]} at {sys.executable}; steptrace {args.steptrace}")
    print(bytecode_compiled())
    print(f"cpus {os.cpu_count()}; load avg {os.getloadavg()[0]:.2f}", flush=True)
    root = Path(tempfile.mkdtemp(prefix="hta-", dir=WORK))
    try:
        dirs = hta_dirs(traces, root)
        timed: list[tuple[TraceInfo, list[Tool]]] = []
        for info, repeats in zip(traces, args.repeats, strict=True):
            print(f"\ntiming {info.label} ({repeats} rounds)", flush=True)
            tools = make_tools(args, hta_python, dirs)
            time_tools(tools, info.path, repeats, args.timeout)
            timed.append((info, tools))
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(SCRUB_OUT, ignore_errors=True)
    for info, tools in timed:
        report(info, tools)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB
    print(
        f"\ntotal {time.perf_counter() - t_start:.0f} s (benchmark process peak RSS {own:.0f} MB)"
    )
    rows = [result_row(info, tools) for info, tools in timed]
    results.write("analyze_speed", run, RESULT_COLUMNS, rows, notes=RESULT_NOTES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
