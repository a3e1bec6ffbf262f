"""Real multi-process recordings: a gloo run on the CPU, one trace per rank.

``record_gloo_run(folder, world_size=4, plant=Plant(2, "read_batch", 25.0))`` starts
``world_size`` processes (``torch.multiprocessing``, start method ``spawn``) that join a
``gloo`` process group on loopback (a free port found by binding port 0), train a small
MLP with DDP or an explicit all-reduce and record ProfilerStep#2..#4 each into
``folder/rank-<r>.json.gz`` (see ``steptrace.capturing.ranks.rank_step`` for the step). A
``Plant`` makes one rank slower in one phase by a known amount, so the truth is known by
construction; ``shift_clock`` (``steptrace.capturing.ranks.clock_shift``) then moves a rank's
clock.

The folder must be new (nothing is ever overwritten). A rank that raises, or a run that
outlives its timeout, ends every process and raises a one-line ``CaptureError``; the files
of a failed run are removed. ``record_demo_ranks`` is the short straggler run of the demo.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from steptrace.capturing.ranks.clock_shift import shift_clock
from steptrace.capturing.ranks.rank_step import (
    PLANT_PHASES,
    Mode,
    Plant,
    RankJob,
    run_rank,
    trace_path,
)
from steptrace.errors import CaptureError
from steptrace.scenario import sidecar_path

__all__ = ["DEMO_PLANT", "Plant", "record_demo_ranks", "record_gloo_run", "shift_clock"]

DEMO_PLANT = Plant(2, "read_batch", 20.0, "sleep")  # the demo's straggler: rank 2 reads slowly
_GROUP_TIMEOUT_S = 60.0  # init_process_group and every collective
_START_S, _PER_RANK_S = 60.0, 15.0  # the whole run's limit: spawning 8 torch imports is slow


def record_gloo_run(
    folder: str | Path,
    *,
    world_size: int,
    plant: Plant | None = None,
    mode: Mode = "ddp",
    seed: int = 0,
    timeout_s: float | None = None,
) -> tuple[Path, ...]:
    """Record one gloo run into the new ``folder``; the traces, rank 0 first.

    ``timeout_s`` bounds the whole run (default 60 s + 15 s a rank: starting a process
    costs about 3.5 s of CPU, torch and the profiler's imports); the group's own timeout
    (init and every collective) is at most 60 s.
    """
    check_run(world_size, plant, mode)
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=False)
    except FileExistsError:
        raise CaptureError(f"{folder} exists already: choose a new folder") from None
    except OSError as exc:
        raise CaptureError(f"{folder}: cannot create ({exc.strerror or exc})") from None
    limit_s = timeout_s if timeout_s is not None else _START_S + _PER_RANK_S * world_size
    job = RankJob(
        folder=str(folder),
        world_size=world_size,
        port=free_port(),
        mode=mode,
        plant=plant,
        seed=seed,
        timeout_s=min(_GROUP_TIMEOUT_S, limit_s),
    )
    paths = tuple(trace_path(folder, rank) for rank in range(world_size))
    try:
        _run_processes(job, limit_s)
    except BaseException:
        _remove(folder, paths)
        raise
    missing = [str(p) for p in paths if not p.is_file() or p.stat().st_size == 0]
    if missing:
        _remove(folder, paths)
        raise CaptureError(f"gloo run ended without the traces {', '.join(missing)}")
    return paths


def record_demo_ranks(folder: str | Path) -> tuple[Path, ...]:
    """Four ranks with DDP, rank 2's ``read_batch`` 20 ms slower (``DEMO_PLANT``)."""
    return record_gloo_run(folder, world_size=4, plant=DEMO_PLANT, mode="ddp")


def check_run(world_size: int, plant: Plant | None, mode: str) -> None:
    """Refuse a run that cannot be what it says, before any process starts."""
    if world_size < 2:
        raise CaptureError(f"a gloo run needs at least 2 ranks, not {world_size}")
    if mode not in ("ddp", "explicit"):
        raise CaptureError(f"mode must be 'ddp' or 'explicit', not {mode!r}")
    if plant is None:
        return
    if not 0 <= plant.rank < world_size:
        raise CaptureError(f"the plant's rank {plant.rank} is not one of the {world_size} ranks")
    if plant.phase not in PLANT_PHASES:
        raise CaptureError(
            f"the plant's phase must be one of {', '.join(PLANT_PHASES)}, not {plant.phase!r}"
        )
    if plant.how not in ("sleep", "compute"):
        raise CaptureError(f"the plant's how must be 'sleep' or 'compute', not {plant.how!r}")
    if not 0 < plant.extra_ms <= 10_000:
        raise CaptureError(f"the plant's extra_ms must be in (0, 10000], not {plant.extra_ms}")


def free_port() -> int:
    """A TCP port free on loopback now (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _run_processes(job: RankJob, limit_s: float) -> None:
    """Start every rank and wait for all of them, within ``limit_s``."""
    from torch.multiprocessing.spawn import (
        ProcessExitedException,
        ProcessRaisedException,
        start_processes,
    )

    context = start_processes(
        run_rank, args=(job,), nprocs=job.world_size, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + limit_s
    try:
        while not context.join(timeout=max(0.05, min(1.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                raise CaptureError(
                    f"gloo run of {job.world_size} ranks did not finish within {limit_s:g} s"
                )
    except ProcessRaisedException as exc:
        raise CaptureError(
            f"gloo run: rank {exc.error_index} failed: {last_line(exc.msg)}"
        ) from None
    except ProcessExitedException as exc:
        raise CaptureError(
            f"gloo run: rank {exc.error_index} exited with code {exc.exit_code}"
        ) from None
    finally:
        _end(context.processes)


def last_line(message: str) -> str:
    """The exception line of a child's traceback (``ValueError: ...``), one line."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def _end(processes: Sequence[Any]) -> None:
    """Kill every process still running (after an error or a timeout), and reap it."""
    for process in processes:
        if process.is_alive():
            process.kill()
    for process in processes:
        process.join(timeout=5)


def _remove(folder: Path, paths: Sequence[Path]) -> None:
    """Remove what this run wrote (the folder is ours: it was created new)."""
    for path in paths:
        path.unlink(missing_ok=True)
        sidecar_path(path).unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # something else is in it: leave it
        folder.rmdir()
