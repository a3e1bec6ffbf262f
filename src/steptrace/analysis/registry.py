"""The figures of a trace, in the order they are computed: one entry per figure module.

Each figure module declares its ``FIGURE`` (``context.FigureSpec``): its name, how it is
computed from a ``TraceContext``, and what it reads. ``measure`` computes the figures that
are not ``on_demand``; a caller asks for the others by name (the HTML report for the
steps' lanes), and the per-rank summary for only those it keeps. A new figure is a module
with a ``FIGURE`` and one line here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from steptrace.analysis.communication import summary as communication
from steptrace.analysis.compiler import steps as compiled
from steptrace.analysis.context import FigureSpec
from steptrace.analysis.critical import path as critical_path
from steptrace.analysis.efficiency import roofline
from steptrace.analysis.graphs import replays as graphs
from steptrace.analysis.loader import figure as loader
from steptrace.analysis.memory import usage as memory
from steptrace.analysis.time import (
    copies,
    cpu,
    gpu,
    kernels,
    operators,
    outside,
    phases,
)
from steptrace.analysis.timeline import lanes
from steptrace.trace.fields import Selection, select

FIGURES: tuple[FigureSpec[Any], ...] = (
    gpu.FIGURE,
    phases.FIGURE,
    outside.FIGURE,
    kernels.FIGURE,
    graphs.FIGURE,
    loader.FIGURE,
    copies.FIGURE,
    operators.FIGURE,
    cpu.FIGURE,
    compiled.FIGURE,
    communication.FIGURE,
    memory.FIGURE,
    roofline.FIGURE,
    critical_path.FIGURE,
    lanes.FIGURE,
)


def figures(names: Iterable[str] | None = None) -> tuple[FigureSpec[Any], ...]:
    """The figures named (in registry order), or every one that is not on demand; a
    ``KeyError`` names one that does not exist."""
    if names is None:
        return tuple(f for f in FIGURES if not f.on_demand)
    wanted = set(names)
    if unknown := wanted - {f.name for f in FIGURES}:
        raise KeyError(f"no figure named {', '.join(sorted(unknown))}")
    return tuple(f for f in FIGURES if f.name in wanted)


def fields_for(chosen: Iterable[FigureSpec[Any]]) -> Selection:
    """The trace fields the ``chosen`` figures read: what loading must decode for them."""
    return select({group for figure in chosen for group in figure.groups})
