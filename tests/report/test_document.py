"""A block a renderer does not know is shown as its fallback: a new kind of block (a memory
curve, a critical-path strip) needs no edit of any renderer to reach every format."""

from __future__ import annotations

import json

import msgspec
import pytest

from steptrace.report.document import (
    Block,
    Column,
    Document,
    Heatmap,
    Paragraph,
    Section,
    Table,
    shown,
)
from steptrace.report.formats.renderers import formats, renderer


class Gauge(msgspec.Struct, frozen=True):
    """A block no renderer knows: its numbers as a table, its reading as a paragraph."""

    name: str
    value: float

    def fallback(self) -> tuple[Block, ...]:
        table = Table((Column("gauge", "name"), Column("value", "ms")), ((self.name, self.value),))
        return (Paragraph(f"{self.name} reads {self.value} ms"), table)


class Dial(msgspec.Struct, frozen=True):
    """A block whose fallback is another unknown block: shown as that one's fallback."""

    gauge: Gauge

    def fallback(self) -> tuple[Block, ...]:
        return (self.gauge,)


class _Data(msgspec.Struct):
    schema: str = "test"


def _document(*blocks: Block) -> Document:
    return Document("blocks", _Data(), lambda: (Section("gauges", "Gauges", blocks),))


@pytest.mark.parametrize("name", [f for f in formats() if f != "json"])
def test_an_unknown_block_renders_as_its_fallback_in_every_format(name: str) -> None:
    out = renderer(name).render([_document(Dial(Gauge("latency<b>", 12.5)))])
    assert "reads 12.5 ms" in out  # the paragraph
    assert "12.50" in out.split("reads 12.5 ms", 1)[1]  # then the table, in ms
    if name == "html":  # escaped as any text is: the fallback goes through the renderer
        assert "<b>" not in out and "&lt;b&gt;" in out


def test_json_writes_the_data_not_the_blocks() -> None:
    out = renderer("json").render([_document(Gauge("x", 1.0))])
    assert json.loads(out) == {"schema": "test"}


def test_known_blocks_are_shown_as_they_are_and_charts_degrade_to_their_table() -> None:
    table = Table((Column("rank"),), (("0",),))
    heat = Heatmap(rows=("0",), columns=("s",), values=((1.0,),), unit="ms", table=table)
    assert shown(table, (Paragraph, Table)) == (table,)
    assert shown(heat, (Paragraph, Table)) == (table,)
    assert shown(heat, (Paragraph, Table, Heatmap)) == (heat,)
    assert shown(Dial(Gauge("g", 2.0)), (Paragraph, Table)) == Gauge("g", 2.0).fallback()
