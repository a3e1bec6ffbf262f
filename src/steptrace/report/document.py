"""The section model: format-neutral blocks that every renderer lays out the same way.

A ``Document`` is a title and ``Section``s in reading order; a section is a heading and
blocks: ``Paragraph``s, ``Table``s (typed columns, raw cell values) and charts (``Bars``,
``Stacked``, ``Strips``, ``Heatmap``, ``RooflineChart``), the steps' lanes
(``TimelineFigure``) and links to places on them (``Jumps``). Every renderer knows
paragraphs and tables; a block it does not know, it renders as the block's ``fallback()``
(``shown``), as rich renders an object's ``__rich__``: so a new kind of block is one new
class, not an edit of every renderer. A chart draws numbers of the report (its tables, or
finer ones the JSON holds), never a figure of its own: its fallback is nothing, or the
table it carries (a ``Heatmap``'s, a ``RooflineChart``'s). Builders compute everything
here; renderers only format and escape.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import msgspec

from steptrace.analysis.spread import Spread
from steptrace.analysis.timeline.model import StepLanes

# text: plain words; name: something read from the trace (an operator, a kernel, a label);
# the others are numbers in that unit (share: 0 to 1, shown as a percentage; delta_ms: a
# signed change; number: three significant digits)
ColumnUnit = Literal[
    "text", "name", "ms", "delta_ms", "us", "share", "ratio", "count", "bytes", "number"
]
Cell = str | int | float | Spread | None  # None: not observed
Tone = Literal["plain", "question", "warning", "verdict"]


class Block(Protocol):
    """What a section holds: anything that says how to show it with simpler blocks."""

    def fallback(self) -> tuple[Block, ...]:
        """The simpler blocks (in the end paragraphs and tables) that stand in for this one
        where a renderer cannot show it; () where the section says it already."""
        ...


class Paragraph(msgspec.Struct, frozen=True, tag="paragraph"):
    text: str
    tone: Tone = "plain"

    def fallback(self) -> tuple[Block, ...]:
        return ()  # every renderer shows paragraphs


class Column(msgspec.Struct, frozen=True):
    title: str
    unit: ColumnUnit = "text"

    @property
    def numeric(self) -> bool:
        return self.unit not in ("text", "name")


class Table(msgspec.Struct, frozen=True, tag="table"):
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    caption: str = ""  # one line under the table

    def fallback(self) -> tuple[Block, ...]:
        return ()  # every renderer shows tables


class Series(msgspec.Struct, frozen=True):
    name: str
    values: tuple[float, ...]
    muted: bool = False  # drawn grey, not in a colour: the rest of something (outside labels)


class Bars(msgspec.Struct, frozen=True, tag="bars"):
    """One bar per label; ``highlight`` marks one of them (the first step, shown apart)."""

    labels: tuple[str, ...]
    values: tuple[float, ...]
    unit: str
    highlight: int | None = None
    caption: str = ""  # what the drawing shows beyond its numbers (colours, highlights)

    def fallback(self) -> tuple[Block, ...]:
        return ()  # the numbers are in the section's tables


class Stacked(msgspec.Struct, frozen=True, tag="stacked"):
    """One horizontal bar per row, split into series, drawn over the row's total."""

    rows: tuple[str, ...]
    series: tuple[Series, ...]
    totals: tuple[float, ...]
    unit: str
    caption: str = ""

    def fallback(self) -> tuple[Block, ...]:
        return ()  # the numbers are in the section's tables


class Strips(msgspec.Struct, frozen=True, tag="strips"):
    """Every raw value as a dot, one row per group: the distributions."""

    groups: tuple[Series, ...]
    unit: str
    caption: str = ""

    def fallback(self) -> tuple[Block, ...]:
        return ()  # the numbers are in the section's tables


class Heatmap(msgspec.Struct, frozen=True, tag="heatmap"):
    """A grid of cells, one row per rank (or bin of ranks), one column per step or phase.

    ``values[r][c]`` is the cell's number (``None``: not observed, drawn apart); with
    ``diverging`` the values are signed around 0 (below and above the others). ``table``
    holds the same numbers for formats that cannot draw (folded beyond ~16 ranks).
    """

    rows: tuple[str, ...]
    columns: tuple[str, ...]
    values: tuple[tuple[float | None, ...], ...]
    unit: str
    table: Table
    diverging: bool = False
    caption: str = ""
    marked: tuple[int, ...] = ()  # rows whose label is always drawn (the stragglers')

    def fallback(self) -> tuple[Block, ...]:
        return (self.table,)


class RooflinePoint(msgspec.Struct, frozen=True):
    """One operator on the roofline: where it sits and what its hover says."""

    label: str  # the operator and its shapes, short
    intensity: float  # FLOP per byte (the x axis)
    achieved_tflops: float  # the y axis
    ms: float  # its time: the point's area
    kind: str  # its model (GEMM, attention, elementwise, ...): the point's colour
    tip: str  # the table's row in words, for the hover


class Roof(msgspec.Struct, frozen=True):
    label: str  # "bfloat16 matrix", "float32 vector", ...
    tflops: float


class RooflineChart(msgspec.Struct, frozen=True, tag="roofline"):
    """Operators as points under their roofs (log-log: FLOP/byte, TFLOP/s): the memory
    roof ``bandwidth_tbps`` × intensity and one flat roof per precision the rows use
    (drawn by HTML; the other formats show ``table``, the same rows)."""

    points: tuple[RooflinePoint, ...]
    roofs: tuple[Roof, ...]
    bandwidth_tbps: float | None
    table: Table
    caption: str = ""

    def fallback(self) -> tuple[Block, ...]:
        return (self.table,)


class LaneGroup(msgspec.Struct, frozen=True):
    """One trace's (or rank's) lanes of a step, shifted by ``offset_ns`` on the figure."""

    label: str  # "" for a single trace; "rank 3" on a job's figure
    offset_ns: int
    lanes: StepLanes
    name_base: int = 0  # its bars' names start here in the figure's names


class PathPiece(msgspec.Struct, frozen=True, array_like=True):
    """A piece of a critical path's strip: one segment, or (``count`` > 1) consecutive ones
    too narrow to draw apart, coloured by the kind with the most time in them."""

    kind: int  # index into the figure's path_kinds
    start_ns: int  # from the view's start
    end_ns: int
    name: int  # index into the figure's path_names (merged: the longest's); -1: idle
    count: int = 1
    kind_ns: int = 0  # merged: the time of its kind in it
    bar: int = -1  # the id of the lanes' bar it lies inside (innermost); -1: none drawn


class PathStrip(msgspec.Struct, frozen=True):
    """One step's critical path (``analysis.critical_path``) under the view's lanes."""

    step: str
    length_ns: int  # the whole path
    hidden_ns: int  # its time past the view's end: not drawn
    resolution_ns: int  # segments shorter than this are merged into pieces
    pieces: tuple[PathPiece, ...]


class TimelineView(msgspec.Struct, frozen=True):
    """What one choice of the figure's step menu draws: its groups over ``span_ns``, and
    the critical paths of its steps when computed."""

    label: str  # the step's name
    span_ns: int
    groups: tuple[LaneGroup, ...]
    paths: tuple[PathStrip, ...] = ()


class Mark(msgspec.Struct, frozen=True):
    """A range to show on the figure (a finding's ``evidence.where``)."""

    label: str
    view: int  # index into the figure's views
    start_ns: int  # from the view's start
    end_ns: int
    thread: str | None  # the thread named (``Where.thread``)
    streams: tuple[int, ...]
    lanes: tuple[int, ...] = ()  # the view's lanes (in drawing order) of that thread and streams
    names: tuple[int, ...] = ()  # names (indices into the figure's) the finding lists


class TimelineFigure(msgspec.Struct, frozen=True, tag="timeline"):
    """The steps on one time axis, lanes per thread and stream (drawn by HTML only; the
    other formats show the section's paragraphs). ``shown`` is the view drawn first."""

    kinds: tuple[str, ...]
    names: tuple[str, ...]
    views: tuple[TimelineView, ...]
    shown: int
    marks: tuple[Mark, ...] = ()
    caption: str = ""
    path_kinds: tuple[str, ...] = ()  # PathPiece.kind indexes this
    path_names: tuple[str, ...] = ()  # PathPiece.name indexes this

    def fallback(self) -> tuple[Block, ...]:
        return ()  # the section's paragraph says what it draws


class Jump(msgspec.Struct, frozen=True):
    text: str
    mark: int  # index into the figure's marks


class Jumps(msgspec.Struct, frozen=True, tag="jumps"):
    """Links to places on the section ``target``'s timeline (HTML only)."""

    target: str  # the section key of the timeline
    items: tuple[Jump, ...]

    def fallback(self) -> tuple[Block, ...]:
        return ()  # links into a figure that is not drawn


Chart = Bars | Stacked | Strips | Heatmap


def shown(block: Block, known: tuple[type, ...]) -> tuple[Block, ...]:
    """What a renderer that knows the ``known`` kinds of block shows for ``block``: the block
    itself, or its fallback's, recursively."""
    if isinstance(block, known):
        return (block,)
    return tuple(b for simpler in block.fallback() for b in shown(simpler, known))


class Section(msgspec.Struct, frozen=True):
    key: str  # a stable id: question, notes, steps, labels, gpu, ... (golden files name them)
    heading: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Document:
    """What one report, comparison or diff shows, and the data its JSON form writes.

    The sections are built when a renderer first asks for them: JSON, which writes the
    data, never does (and so never imports the builders).
    """

    title: str
    data: msgspec.Struct  # the typed value (a report, a comparison...) JSON writes
    build: Callable[[], tuple[Section, ...]]

    @functools.cached_property
    def sections(self) -> tuple[Section, ...]:
        return self.build()
