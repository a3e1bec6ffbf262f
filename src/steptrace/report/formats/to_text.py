"""Terminal text: rich tables and rules, colour only on an interactive terminal.

Paragraphs and tables; every other block as its fallback (``document.shown``: charts are
left to the tables, a heatmap is the table it carries). Text read from a trace is shown as
plain text, never as rich markup, and its control
characters are made visible (``\\x1b``), so a name cannot drive the terminal.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Sequence

from rich.console import Console
from rich.rule import Rule
from rich.table import Table as RichTable
from rich.text import Text

from steptrace.report.document import Cell, ColumnUnit, Document, Paragraph, Section, Table, shown
from steptrace.report.formats.cells import cell_text, visible
from steptrace.safe_text import one_line

WIDTH = 160  # when the output is not a terminal (a pipe, a file, a golden render)
_STYLE = {"plain": "", "question": "bold", "warning": "yellow", "verdict": "bold"}


class TextRenderer:
    def __init__(self, *, terminal: bool = False) -> None:
        self.terminal = terminal

    def render(self, documents: Sequence[Document]) -> str:
        width = shutil.get_terminal_size((WIDTH, 40)).columns if self.terminal else WIDTH
        output = io.StringIO()
        console = Console(
            file=output,
            width=width,
            force_terminal=self.terminal,
            color_system="auto" if self.terminal else None,
            highlight=False,
        )
        for document in documents:
            console.print(Rule(Text(plain(document.title))))  # Text: never markup
            for section in document.sections:
                _section(console, section)
        return output.getvalue()


def _section(console: Console, section: Section) -> None:
    console.print(Text(plain(section.heading), style="bold underline"))
    for block in (b for each in section.blocks for b in shown(each, (Paragraph, Table))):
        if isinstance(block, Paragraph):
            console.print(Text(plain(block.text), style=_STYLE[block.tone]))
        elif isinstance(block, Table):
            console.print(_table(block))
    console.print()


def _table(table: Table) -> RichTable:
    shown = RichTable(caption=Text(plain(table.caption)) if table.caption else None)
    for column in table.columns:
        shown.add_column(
            Text(plain(column.title)),
            justify="right" if column.numeric else "left",
            overflow="fold",
        )
    for row in table.rows:
        shown.add_row(*(Text(_cell(v, c.unit)) for v, c in zip(row, table.columns, strict=True)))
    return shown


def _cell(value: Cell, unit: ColumnUnit) -> str:
    """A cell's words; a name (data from the trace) on one line, its newlines escaped,
    so that it cannot split the row (the report's own text keeps its line breaks)."""
    text = cell_text(value, unit)
    return one_line(text) if unit == "name" else plain(text)


def plain(text: str) -> str:
    """Text as it is: control characters made visible; ``Text`` keeps it from being markup."""
    return visible(text)


RENDERER = TextRenderer
