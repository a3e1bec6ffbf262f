"""Each benchmark's latest figures in ``benchmarks/RESULTS.md``, written by the script itself.

A script takes its run's context when it starts and writes its table when it ends:

    run = results.Run.start()          # date, commit, machine, load average now
    ...                                # the benchmark
    results.write("analyze_speed", run, ["trace", "s"], [["1x", "0.48"]])

Every row of the table begins with the run's date, commit, machine and load average at the
start; the benchmark's own columns follow. The section between the benchmark's two markers
is replaced; the file's header and the other benchmarks' sections are kept as they are (a
new benchmark's section is added at the end). ``STEPTRACE_RESULTS`` names another file to
write (a trial run that must not touch the committed one).
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "RESULTS.md"
CONTEXT = ("date", "commit", "machine", "load at start")
HEADER = """# Benchmark results

Written by the benchmark scripts, not by hand: each script in `benchmarks/` replaces its own
section when it ends (`benchmarks/results.py`) and leaves the others as they are. Every row
says when and where it was measured: the date (UTC), the commit (`+dirty` when the working
tree differed from it), the machine (CPU model, cores this process could use, memory) and the
1-minute load average when the run started. Quote a figure with its row; on a shared machine
the load average says how much to trust it. Each section also gives the command that
produced it. A trial run writes elsewhere with `STEPTRACE_RESULTS=/tmp/trial.md`.
"""


@dataclass(frozen=True)
class Run:
    """Where and when a benchmark run started."""

    date: str  # UTC, to the minute
    commit: str  # short hash, "+dirty" when the working tree differs from it
    machine: str  # CPU model, cores, memory
    load: float  # 1-minute load average at the start
    command: str  # how the script was run
    about: str = ""  # what the benchmark measures: its docstring's first line

    @classmethod
    def start(cls, repo: Path = REPO) -> Run:
        """The context of a run starting now."""
        return cls(
            date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            commit=commit_of(repo),
            machine=machine(),
            load=os.getloadavg()[0],
            command=shlex.join(["python", _script(), *sys.argv[1:]]),
            about=_first_line(sys.modules["__main__"].__doc__),
        )

    def cells(self) -> list[str]:
        """The context columns of every row."""
        return [self.date, self.commit, self.machine, f"{self.load:.2f}"]


def _first_line(doc: str | None) -> str:
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def _script() -> str:
    """The running script, relative to the repository when it lies inside it."""
    path = Path(sys.argv[0]).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def commit_of(repo: Path) -> str:
    """The short hash of ``repo``'s HEAD, ``+dirty`` when a file differs from it (tracked or
    new, ignored ones and RESULTS.md itself excepted); ``unknown`` outside git."""
    git = ["git", "-C", str(repo)]
    try:
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            [*git, "status", "--porcelain", "--", ".", ":(exclude)benchmarks/RESULTS.md"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}+dirty" if changed else head


def machine() -> str:
    """``CPU model, N cores, M GiB``: this process's usable cores and the total memory."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{_cpu_model()}, {cores} cores, {memory:.0f} GiB"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return " ".join(line.partition(":")[2].split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def write(
    benchmark: str,
    run: Run,
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    notes: str = "",
    path: Path | None = None,
) -> Path:
    """Replace ``benchmark``'s section of the results file with this run's table; return the
    file written (``path``, else ``STEPTRACE_RESULTS``, else ``benchmarks/RESULTS.md``)."""
    target = path or Path(os.environ.get("STEPTRACE_RESULTS") or RESULTS)
    text = target.read_text(encoding="utf-8") if target.exists() else HEADER
    updated = replace_section(text, benchmark, section(benchmark, run, columns, rows, notes))
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=target.parent, prefix=".results-", delete=False
    ) as out:
        out.write(updated)
    Path(out.name).replace(target)
    print(f"results: {benchmark} written to {target}")
    return target


def section(
    benchmark: str,
    run: Run,
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    notes: str = "",
) -> str:
    """The section's text, markers included."""
    head = [*CONTEXT, *columns]
    lines = [
        begin_marker(benchmark),
        f"## {benchmark}.py",
        "",
        *([run.about, ""] if run.about else []),
        f"`{run.command}`",
        "",
        "| " + " | ".join(_cell(c) for c in head) + " |",
        "|" + "---|" * len(head),
    ]
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"{benchmark}: a row has {len(row)} cells for {len(columns)} columns")
        lines.append("| " + " | ".join(_cell(c) for c in [*run.cells(), *row]) + " |")
    if notes:
        lines += ["", notes.strip()]
    return "\n".join([*lines, end_marker(benchmark)]) + "\n"


def _cell(value: object) -> str:
    """A table cell: ``None`` is "–", text kept on one line, pipes escaped."""
    text = "–" if value is None else str(value)
    return " ".join(text.split()).replace("|", "\\|")


def begin_marker(benchmark: str) -> str:
    return f"<!-- results: {benchmark} -->"


def end_marker(benchmark: str) -> str:
    return f"<!-- end of results: {benchmark} -->"


def replace_section(text: str, benchmark: str, new: str) -> str:
    """``text`` with ``benchmark``'s section replaced by ``new``, or ``new`` appended."""
    begin, end = begin_marker(benchmark), end_marker(benchmark)
    start = text.find(begin)
    if start < 0:
        return text.rstrip("\n") + "\n\n" + new
    stop = text.find(end, start)
    if stop < 0:
        raise ValueError(f"{benchmark}: its section has no end marker ({end!r})")
    stop += len(end)
    if text.startswith("\n", stop):
        stop += 1
    return text[:start] + new + text[stop:]
