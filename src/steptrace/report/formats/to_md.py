"""Markdown: headings, paragraphs and GitHub tables; every other block as its fallback
(``document.shown``: charts are left to the tables, a heatmap is the table it carries).

Everything read from a trace is escaped: names go in code spans fenced longer than any
backtick inside them, other text has Markdown's and HTML's special characters escaped and
no web address made a link, control characters are made visible, and a table cell never
breaks its row.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from steptrace.report.document import Column, Document, Paragraph, Section, Table, shown
from steptrace.report.formats.cells import cell_text, visible

_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#&!])")
_BACKTICKS = re.compile(r"`+")


class MarkdownRenderer:
    def __init__(self, *, terminal: bool = False) -> None:
        del terminal  # Markdown is the same wherever it goes

    def render(self, documents: Sequence[Document]) -> str:
        return "\n".join(_document(d) for d in documents)


def _document(document: Document) -> str:
    out = [f"# {text(document.title)}\n"]
    for section in document.sections:
        out.append(_section(section))
    return "\n".join(out)


def _section(section: Section) -> str:
    out = [f"## {text(section.heading)}\n"]
    for block in (b for each in section.blocks for b in shown(each, (Paragraph, Table))):
        if isinstance(block, Paragraph):
            out.append(_paragraph(block))
        elif isinstance(block, Table):
            out.append(_table(block))
    return "\n".join(out)


def _paragraph(paragraph: Paragraph) -> str:
    body = "<br>".join(text(line) for line in paragraph.text.splitlines())
    if paragraph.tone == "warning":
        return f"> {body}\n"
    if paragraph.tone == "question":
        return f"- {body}\n"
    if paragraph.tone == "verdict":
        return f"**{body}**\n"
    return f"{body}\n"


def _table(table: Table) -> str:
    header = "| " + " | ".join(text(c.title) for c in table.columns) + " |"
    align = "|" + "|".join("---:" if c.numeric else ":---" for c in table.columns) + "|"
    rows = [
        "| "
        + " | ".join(
            _cell(cell_text(v, c.unit), c) for v, c in zip(row, table.columns, strict=True)
        )
        + " |"
        for row in table.rows
    ]
    caption = [f"\n{text(table.caption)}"] if table.caption else []
    return "\n".join([header, align, *rows, *caption]) + "\n"


def _cell(value: str, column: Column) -> str:
    if column.unit == "name":
        return code(" ".join(value.split())).replace("|", "\\|")
    return "<br>".join(text(line) for line in value.splitlines())


def text(value: str) -> str:
    """Plain words, with every character Markdown or HTML would act on escaped, control
    characters made visible, and no web address turned into a link."""
    escaped = _SPECIAL.sub(r"\\\1", " ".join(visible(value).split()))
    return escaped.replace("://", "\\://").replace("www.", "www\\.")


def code(value: str) -> str:
    """A code span that shows ``value`` as it is, whatever backticks it holds."""
    value = visible(value)
    longest = max((len(run) for run in _BACKTICKS.findall(value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or not value.strip() else ""
    return f"{fence}{pad}{value}{pad}{fence}"


RENDERER = MarkdownRenderer
