"""What one rank of a recorded gloo run does: join the group, train, profile, leave.

``run_rank(rank, job)`` is the function ``torch.multiprocessing`` starts in each process
(picklable: module level, plain-data arguments). It pins torch to one thread, joins the
``gloo`` group on loopback (``MASTER_ADDR=127.0.0.1``, the job's port), trains a small MLP
(``64-128-10``, SGD) on a tiny in-memory dataset and records the window with steptrace's
own ``Capture`` into ``<folder>/rank-<rank>.json.gz`` (with its scenario sidecar). Each
step is labelled ``read_batch``, ``transfer``, ``train`` (``forward``, ``backward``, in
explicit mode ``all_reduce``, then ``optimizer_step``).

Modes: ``ddp`` wraps the model in DistributedDataParallel, whose backward hooks all-reduce
the gradients; ``explicit`` all-reduces the flattened gradients with one blocking
``dist.all_reduce`` after backward. A ``Plant`` on this rank adds its ``extra_ms`` at the
start of its phase in every step: ``time.sleep``, or ``compute``, a loop of 256x256
matmuls that runs until ``extra_ms`` of wall time have passed (so it is calibrated at run
time, whatever the CPU's speed or its sharing with the other ranks).
"""

from __future__ import annotations

import os
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import msgspec

from steptrace.scenario import Scenario
from steptrace.window import Window

Mode = Literal["ddp", "explicit"]
PlantPhase = Literal["read_batch", "forward", "backward", "optimizer_step"]
How = Literal["sleep", "compute"]
PLANT_PHASES: tuple[PlantPhase, ...] = ("read_batch", "forward", "backward", "optimizer_step")
WINDOW = Window(cold_steps=0, wait=1, warmup=1, active=3)  # ProfilerStep#2..#4 recorded
BATCH, FEATURES, HIDDEN, CLASSES = 32, 64, 128, 10
_BUSY_SIDE = 256  # the compute plant's matmuls: ~1 ms each on one core, few trace events


class Plant(msgspec.Struct, frozen=True):
    """An effect planted on one rank: ``extra_ms`` more in ``phase``, every step.

    ``Plant(2, "read_batch", 25.0)`` sleeps 25 ms more in rank 2's ``read_batch``;
    ``how="compute"`` computes for that long instead.
    """

    rank: int
    phase: PlantPhase
    extra_ms: float
    how: How = "sleep"


class RankJob(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a rank needs, sent to each process."""

    folder: str
    world_size: int
    port: int
    mode: Mode
    plant: Plant | None
    seed: int
    timeout_s: float


def trace_path(folder: Path, rank: int) -> Path:
    """Where rank ``rank`` writes its trace."""
    return folder / f"rank-{rank}.json.gz"


def run_rank(rank: int, job: RankJob) -> None:
    """One process of the run (started by ``torch.multiprocessing``); it ends the process.

    After a successful run the process leaves with ``os._exit(0)``: the interpreter's
    shutdown after torch.profiler (which imports ``torch._inductor``) costs about 1.3 s of
    CPU per rank, measured, for nothing (every file is written and closed by then). An
    exception propagates as usual, for ``torch.multiprocessing`` to report.
    """
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(job.port)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo0" if sys.platform == "darwin" else "lo")
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    dist.init_process_group(
        "gloo", rank=rank, world_size=job.world_size, timeout=timedelta(seconds=job.timeout_s)
    )
    try:
        _train(rank, job)
        dist.barrier()  # outside the window: nobody leaves while another still records
    finally:
        dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _train(rank: int, job: RankJob) -> None:
    import torch

    torch.manual_seed(job.seed)  # the same initial weights on every rank
    model: Any = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES)
    )
    if job.mode == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = iter(_dataset(rank, job.seed, WINDOW.profiled_steps))
    plant = job.plant if job.plant is not None and job.plant.rank == rank else None
    device = torch.device("cpu")
    torch.distributed.barrier()  # every rank starts its window together
    with _capture(rank, job) as run:
        while not run.done:
            with run.phase("read_batch"):
                _extra(plant, "read_batch")
                inputs, target = next(batches)
            with run.phase("transfer"):
                inputs, target = inputs.to(device), target.to(device)
            with run.phase("train"):
                optimizer.zero_grad(set_to_none=True)
                with run.phase("forward"):
                    _extra(plant, "forward")
                    loss = torch.nn.functional.cross_entropy(model(inputs), target)
                with run.phase("backward"):
                    _extra(plant, "backward")
                    loss.backward()
                if job.mode == "explicit":
                    with run.phase("all_reduce"):
                        _all_reduce_gradients(model, job.world_size)
                with run.phase("optimizer_step"):
                    _extra(plant, "optimizer_step")
                    optimizer.step()
            run.step()


def _capture(rank: int, job: RankJob) -> Any:
    from steptrace.capturing.session import Capture

    scenario = Scenario(  # the plant is the recorder's truth: never written into the trace
        question="Which rank holds the distributed job back, and in which phase?",
        batch_size=BATCH,
        input_shapes=((BATCH, FEATURES),),
        device="cpu",
        data_origin="synthetic, in memory (one tiny dataset per rank)",
        simplifications=(
            f"{job.world_size} gloo processes on one host, one thread each; MLP "
            f"{FEATURES}-{HIDDEN}-{CLASSES}, SGD, mode {job.mode}"
        ),
    )
    return Capture(scenario, out=trace_path(Path(job.folder), rank), window=WINDOW)


def _dataset(rank: int, seed: int, steps: int) -> list[tuple[Any, Any]]:
    """``steps`` batches, different on each rank, made before the window."""
    import torch

    generator = torch.Generator().manual_seed(seed * 1000 + rank)
    inputs = torch.randn(steps * BATCH, FEATURES, generator=generator)
    target = torch.randint(0, CLASSES, (steps * BATCH,), generator=generator)
    return [
        (inputs[k * BATCH : (k + 1) * BATCH], target[k * BATCH : (k + 1) * BATCH])
        for k in range(steps)
    ]


def _all_reduce_gradients(model: Any, world_size: int) -> None:
    """One blocking all-reduce of the flattened gradients, averaged, copied back."""
    import torch
    import torch.distributed as dist

    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= world_size
    offset = 0
    for grad in grads:
        grad.copy_(flat[offset : offset + grad.numel()].view_as(grad))
        offset += grad.numel()


def _extra(plant: Plant | None, phase: PlantPhase) -> None:
    """The planted extra time, when this rank carries a plant in ``phase``."""
    if plant is None or plant.phase != phase:
        return
    if plant.how == "sleep":
        time.sleep(plant.extra_ms / 1000)
    else:
        busy_for(plant.extra_ms)


def busy_for(extra_ms: float) -> int:
    """Multiply small matrices until ``extra_ms`` of wall time have passed; the count."""
    import torch

    left = torch.ones(_BUSY_SIDE, _BUSY_SIDE)
    right = torch.ones(_BUSY_SIDE, _BUSY_SIDE)
    end = time.perf_counter() + extra_ms / 1000
    count = 0
    while time.perf_counter() < end:
        torch.mm(left, right)
        count += 1
    return count
