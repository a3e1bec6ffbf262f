"""The operators table's note on kernels a CUDA graph replayed (issue #44.4): said once under
the table, as text every format escapes, when a trace has replays no operator launched;
absent otherwise. The counts are checked against the raw events (integer ns)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from steptrace import units
from steptrace.pipeline import analyze_source
from steptrace.report.document import Paragraph, Section
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import View, report_document
from tests import reference
from tests.conftest import gpu_trace
from tests.paths import FIXTURES

DECODE = FIXTURES / "graphs" / "vllm_decode_full_graph_execution.json.gz"
GRAPH_LAUNCH = re.compile(r"^(?:cuda|cu|hip)GraphLaunch$")
SAID = "replayed by a CUDA graph"


def _note(path: Path) -> str:
    """The note's words, from the raw events: the kernels sharing a graph launch's
    correlation (no operator is above the launches of this trace) and their summed time."""
    evs = reference.events(reference.read_exact(path))
    calls = {
        e.raw["args"]["correlation"]
        for e in evs
        if GRAPH_LAUNCH.match(e.name) and e.cat == "cuda_runtime"
    }
    replayed = [
        e
        for e in reference.gpu_events(evs)
        if e.cat == "kernel" and e.raw["args"].get("correlation") in calls
    ]
    total_ms = sum(e.dur for e in replayed) / 1e6
    return (
        f"{len(replayed):,} kernels {SAID} ({units.ms(total_ms)} ms of GPU time over the whole "
        "trace): the operator is not observed."
    )


def _operators(path: Path, totals: bool) -> tuple[Section, dict[str, str]]:
    found = analyze_source(path)
    document = report_document(found.report, View(totals=totals))
    (section,) = [s for s in document.sections if s.key == "operators"]
    rendered = {name: renderer(name).render([document]) for name in ("text", "md", "html")}
    return section, rendered


@pytest.mark.parametrize("totals", [False, True])
def test_the_note_is_said_once_under_the_operators_table(totals: bool) -> None:
    section, rendered = _operators(DECODE, totals)
    note = _note(DECODE)
    notes = [b for b in section.blocks if isinstance(b, Paragraph) and SAID in b.text]
    assert [(b.text, b.tone) for b in notes] == [(note, "plain")]
    assert section.blocks[-1] == notes[0]  # under the table
    assert f"<p>{html.escape(note)}</p>" in rendered["html"]  # text in a paragraph, escaped
    assert rendered["html"].count(SAID) == 1
    assert note in rendered["md"].splitlines()
    assert rendered["md"].count(SAID) == 1
    assert " ".join(rendered["text"].split()).count(note) == 1


def test_no_note_without_graph_replays() -> None:
    section, rendered = _operators(gpu_trace("amd_mi250_rocm62_minitoy_train"), False)
    assert not any(isinstance(b, Paragraph) for b in section.blocks)
    assert all(SAID not in text for text in rendered.values())
