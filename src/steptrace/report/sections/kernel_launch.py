"""The kernels table's launch-shape columns: occupancy, blocks per SM, registers, shared
memory (``analysis.kernels``), and the caption naming the kernels that do not fill the GPU;
the operators table's note on the kernels a CUDA graph replayed, which no operator launched
(``analysis.graphs``). Words only: the figures are the analysis's."""

from __future__ import annotations

from collections.abc import Sequence

from steptrace import units
from steptrace.analysis.graphs.replays import ReplayedWork
from steptrace.analysis.time.kernels import KernelStat
from steptrace.report.document import Cell, Column, Paragraph

LAUNCH_COLUMNS = (
    Column("occupancy", "share"),
    Column("blocks/SM", "number"),
    Column("regs", "count"),
    Column("smem", "bytes"),
)
LAUNCH_NOT_RECORDED = (
    "Occupancy and launch shape: not recorded in this trace (NVIDIA traces write them since 2022)."
)


def launch_shape(k: KernelStat) -> tuple[Cell, ...]:
    shown = (
        k.occupancy_pct / 100 if k.occupancy_pct is not None else None,
        k.blocks_per_sm,
        round(k.registers_per_thread) if k.registers_per_thread is not None else None,
        k.shared_memory_bytes,
    )
    return tuple(v if v is not None else "—" for v in shown)


def launch_caption(kernels: Sequence[KernelStat]) -> str:
    """What the launch columns are, and the kernels whose grid does not fill the GPU."""
    said = (
        "Occupancy (Kineto's estimate), blocks per SM, registers per thread and shared "
        "memory (smem) per block: means over the calls weighted by their duration (—: not "
        "recorded)."
    )
    thin = [k.name for k in kernels if k.blocks_per_sm is not None and k.blocks_per_sm < 1]
    if not thin:
        return said
    names = "; ".join(units.short(n, 60) for n in thin)
    return (
        f"{said} Fewer blocks than SMs, so some SMs get no work (the GPU is not filled): "
        f"{names}. Persistent kernels launch about one block per SM by design, and "
        "collectives a few; elsewhere a larger batch or a split-K kernel fills it."
    )


def graph_note(work: ReplayedWork | None) -> tuple[Paragraph, ...]:
    """Under the operators table: the work CUDA graphs replayed with no operator above their
    launch, in words; nothing where there is none."""
    if work is None:
        return ()
    said = f"{work.kernels:,} kernel" + ("s" if work.kernels != 1 else "")
    if work.copies:
        said += f" and {work.copies:,} " + ("copies or sets" if work.copies != 1 else "copy or set")
    return (
        Paragraph(
            f"{said} replayed by a CUDA graph ({units.ms(work.gpu_ms)} ms of GPU time over the "
            "whole trace): the operator is not observed."
        ),
    )
