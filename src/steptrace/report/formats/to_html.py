"""HTML: one self-contained page (inline CSS, SVG and script, no network).

Every text is escaped; charts are drawn by ``svg`` from the numbers the sections hold, the
timeline by ``timeline_svg``. The page's one inline script (``timeline_script``) is added
only when a timeline is drawn: it zooms, pans and selects on it, and follows the findings'
links to their places; everything else reads without it. Data for the script sits in
JSON blocks escaped so that no text can close them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from steptrace.report.document import (
    Bars,
    Block,
    Chart,
    Document,
    Heatmap,
    Jumps,
    Paragraph,
    RooflineChart,
    Section,
    Stacked,
    Strips,
    Table,
    TimelineFigure,
    shown,
)
from steptrace.report.formats.cells import cell_text
from steptrace.report.svg import charts as svg
from steptrace.report.svg import roofline as roofline_svg
from steptrace.report.svg import timeline as timeline_svg
from steptrace.report.svg import timeline_style
from steptrace.report.svg.timeline_script import SCRIPT
from steptrace.safe_text import html_text

STYLE = (
    """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1100px;
color:#222;line-height:1.45;padding:0 1rem}
h1{font-size:1.5rem}h1,p{overflow-wrap:anywhere}
h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd}
.question{background:#f3f6fb;border-left:4px solid #4e79a7;padding:.3rem 1rem}
.verdict{font-size:1.05rem;font-weight:600;background:#eef6ee;border-left:4px solid #59a14f;
padding:.5rem 1rem;margin:.4rem 0}section:first-of-type h2{margin-top:.6rem}
.warning{background:#fff8e6;border-left:4px solid #f28e2b;padding:.4rem 1rem;margin:.3rem 0}
table{border-collapse:collapse;width:100%;font-size:.85rem;margin:.5rem 0}
th,td{border:1px solid #ddd;padding:.3rem .5rem;text-align:right;vertical-align:top}
td.text,th.text{text-align:left}caption{caption-side:bottom;text-align:left;font-size:.8rem;
color:#555;padding-top:.2rem}code{font-size:.85em;word-break:break-all}svg{max-width:100%;height:auto}
summary{font-size:.85rem;color:#555;cursor:pointer}
"""
    + timeline_style.STYLE
)


class HtmlRenderer:
    def __init__(self, *, terminal: bool = False) -> None:
        del terminal  # a page is the same wherever it goes

    def render(self, documents: Sequence[Document]) -> str:
        named = documents[0].title if len(documents) == 1 else f"{len(documents)} reports"
        title = html_text(named if named.startswith("steptrace") else f"steptrace: {named}")
        # one report: its sections' ids are their keys (the verdict's is "verdict")
        prefixes = [""] if len(documents) == 1 else [f"d{k}-" for k in range(len(documents))]
        body = "".join(_document(d, p) for d, p in zip(documents, prefixes, strict=True))
        drawn = any(
            isinstance(b, TimelineFigure) for d in documents for s in d.sections for b in s.blocks
        )
        script = f"<script>{SCRIPT}</script>" if drawn else ""
        return (
            f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{STYLE}</style></head><body>{body}{script}</body></html>\n"
        )


def _document(document: Document, prefix: str) -> str:
    """One document; ids are ``<prefix><section key>[-<n>]``, unique on the page (the
    prefix ``d<document>-`` where a page holds several). The title opens the first
    section, so that the verdict's section is the first thing on the page."""
    seen: dict[str, int] = {}
    parts: list[str] = []
    title = f"<h1>{html_text(document.title)}</h1>"
    for section in document.sections:
        count = seen[section.key] = seen.get(section.key, 0) + 1
        key = section.key if count == 1 else f"{section.key}-{count}"
        parts.append(_section(section, prefix + key, prefix, "" if parts else title))
    return "".join(parts) or title


_DRAWN = (
    Paragraph,
    Table,
    Bars,
    Stacked,
    Strips,
    Heatmap,
    RooflineChart,
    TimelineFigure,
    Jumps,
)


def _section(section: Section, anchor: str, prefix: str = "", title: str = "") -> str:
    """The heading and blocks (those HTML does not draw, as their fallback); the lines of
    the question share one box."""
    parts: list[str] = []
    for block in (b for each in section.blocks for b in shown(each, _DRAWN)):
        joined = (
            parts and parts[-1].endswith("</p>") and parts[-1].startswith('<p class="question">')
        )
        if isinstance(block, Paragraph) and block.tone == "question" and joined:
            parts[-1] = parts[-1].removesuffix("</p>") + "<br>" + _lines(block.text) + "</p>"
        else:
            parts.append(_block(block, anchor, prefix))
    blocks = "".join(parts)
    heading = f"{title}<h2>{html_text(section.heading)}</h2>"
    return f'<section id="{html_text(anchor)}">{heading}{blocks}</section>'


def _block(block: Block, anchor: str = "", prefix: str = "") -> str:
    if isinstance(block, TimelineFigure):
        return timeline_svg.figure(block, anchor) + _caption(block.caption)
    if isinstance(block, Jumps):
        return _jumps(block, prefix + block.target)
    if isinstance(block, RooflineChart):  # the chart, then its table: both are the section
        return roofline_svg.roofline(block) + _caption(block.caption) + _table(block.table)
    if isinstance(block, Paragraph):
        kind = f' class="{block.tone}"' if block.tone != "plain" else ""
        return f"<p{kind}>{_lines(block.text)}</p>"
    if isinstance(block, Table):
        return _table(block)
    assert isinstance(block, Bars | Stacked | Strips | Heatmap)  # what ``_DRAWN`` leaves
    caption = f"<p><small>{html_text(block.caption)}</small></p>" if block.caption else ""
    if isinstance(block, Heatmap):  # its numbers under it, folded away (no script needed)
        numbers = f"<details><summary>the numbers</summary>{_table(block.table)}</details>"
        return _chart(block) + caption + numbers
    return _chart(block) + caption


def _caption(text: str) -> str:
    return f"<p><small>{html_text(text)}</small></p>" if text else ""


def _jumps(block: Jumps, target: str) -> str:
    """Links that scroll to the timeline; its script then selects and marks the place."""
    items = "".join(
        f'<li><a class="tl-jump" href="#{html_text(target)}" data-fig="{html_text(target)}" '
        f'data-mark="{item.mark}">{html_text(item.text)}</a></li>'
        for item in block.items
    )
    return f'<p>On the timeline:</p><ul class="jumps">{items}</ul>'


def _chart(block: Chart) -> str:
    if isinstance(block, Bars):
        return svg.bars(block.labels, block.values, block.unit, highlight=block.highlight)
    if isinstance(block, Stacked):
        series = [(s.name, s.values) for s in block.series]
        muted = [s.name for s in block.series if s.muted]
        return svg.stacked(block.rows, series, block.totals, block.unit, muted)
    if isinstance(block, Heatmap):
        return svg.heatmap(
            block.rows,
            block.columns,
            block.values,
            block.unit,
            diverging=block.diverging,
            marked=block.marked,
        )
    return svg.strips([(s.name, s.values) for s in block.groups], block.unit)


def _lines(text: str) -> str:
    return "<br>".join(html_text(line) for line in text.splitlines())


def _table(table: Table) -> str:
    kinds = ["" if c.numeric else ' class="text"' for c in table.columns]
    head = "".join(
        f"<th{k}>{_breakable(c.title)}</th>" for c, k in zip(table.columns, kinds, strict=True)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{k}>{_cell(cell_text(v, c.unit), c.unit == 'name')}</td>"
            for v, c, k in zip(row, table.columns, kinds, strict=True)
        )
        + "</tr>"
        for row in table.rows
    )
    caption = f"<caption>{html_text(table.caption)}</caption>" if table.caption else ""
    return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_JOINS = re.compile(r"(?<=[._#])(?=\S)")  # after a name's separators: a label's parts


def _breakable(title: str) -> str:
    """A column title, escaped, that may wrap after ``.``, ``_`` or ``#``
    (``Optimizer.zero_grad#SGD.zero_grad ms``), never inside a word, so that wide tables
    fit the page."""
    return "<wbr>".join(html_text(part) for part in _JOINS.split(title))


def _cell(value: str, name: bool) -> str:
    lines = "<br>".join(html_text(line) for line in value.splitlines())
    return f"<code>{lines}</code>" if name else lines


RENDERER = HtmlRenderer
