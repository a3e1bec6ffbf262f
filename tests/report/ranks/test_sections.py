"""The multi-rank report: golden renders in every format, the same sections in every
format, folding beyond 16 ranks, and names from the traces escaped everywhere.

Regenerate the goldens on purpose, then review the diff:

    .venv/bin/python -m pytest tests/report/ranks/test_sections.py --update-goldens
"""

from __future__ import annotations

import json
import re
import statistics

import msgspec
import pytest

from steptrace.across.ranks.figures import RankLanes
from steptrace.report.document import Heatmap, Table
from steptrace.report.formats.renderers import formats, renderer
from steptrace.report.model import RanksReport
from steptrace.report.ranks import fold as rank_fold
from steptrace.report.ranks.sections import ranks_document
from tests.across.ranks.reports import fixture_job, fixture_report, widened
from tests.report.formats.test_renderers_golden import GOLDEN, SUFFIX, headings


def render(report: RanksReport, name: str, lanes: tuple[RankLanes, ...] | None = None) -> str:
    """The report in format ``name``, its HTML with the fixture's lanes unless given."""
    drawn = fixture_job().lanes if lanes is None else lanes
    return renderer(name).render([ranks_document(report, lanes=drawn)])


@pytest.mark.parametrize("name", sorted(SUFFIX))
def test_ranks_render_matches_its_golden_file(name: str, request: pytest.FixtureRequest) -> None:
    text = render(fixture_report(), name)
    golden = GOLDEN / f"ranks.{SUFFIX[name]}"
    if request.config.getoption("--update-goldens"):
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"{golden} is missing: run pytest with --update-goldens"
    assert text == golden.read_text(encoding="utf-8")


def test_every_format_renders_a_ranks_report() -> None:
    assert set(formats()) == set(SUFFIX)


def test_the_formats_show_exactly_the_documents_sections_in_order() -> None:
    document = ranks_document(fixture_report(), lanes=fixture_job().lanes)
    expected = [s.heading for s in document.sections]
    assert expected[0].startswith("The job") and expected[-1] == "Findings" and len(expected) == 9
    assert "Timeline of a step across ranks" in expected
    text = renderer("text").render([document])
    bold = [line for line in headings("text", text) if not line.startswith(("─", "warning"))]
    shown = [line for line in bold if line in expected]
    assert shown == expected  # each once, in order
    markdown = renderer("md").render([document])
    assert [h.replace("\\", "") for h in headings("md", markdown)] == expected
    html = renderer("html").render([document])
    assert [h.replace("&amp;", "&") for h in headings("html", html)] == expected


def test_json_is_the_report_itself() -> None:
    report = fixture_report()
    data = json.loads(render(report, "json"))
    assert data["schema"] == "steptrace.ranks/2"
    assert "timelines" not in data  # the lanes are HTML's, from the traces
    assert msgspec.json.decode(render(report, "json"), type=RanksReport) == report


def test_the_straggler_and_its_phase_lead_the_report() -> None:
    text = render(fixture_report(), "text")
    straggler = text.split("Stragglers, most excess first", 1)[1].split("\n\n", 1)[0]
    row = [line for line in straggler.splitlines() if "read_batch" in line]
    assert len(row) == 1 and row[0].split("│")[1].strip() == "2"  # the planted rank 2


def _tables(document_sections: tuple, key: str) -> list[Table]:  # type: ignore[type-arg]
    (section,) = [s for s in document_sections if s.key == key]
    return [
        b.table if isinstance(b, Heatmap) else b
        for b in section.blocks
        if isinstance(b, Table | Heatmap)
    ]


@pytest.mark.parametrize("ranks", [8, 64, 512])
def test_tables_fold_beyond_16_ranks_and_name_the_deviating_rank(ranks: int) -> None:
    slow = ranks - 3
    report = widened(ranks, slow_rank=slow, extra_ms=40.0)
    sections = ranks_document(report).sections
    heat, figures, labels = _tables(sections, "matrix")
    assert [r[:2] for r in labels.rows] == [r[:2] for r in figures.rows]
    steps = len(report.ranks[0].steps)
    rank_cells = [row[0] for row in figures.rows]
    if ranks <= rank_fold.FOLD_ABOVE:
        assert rank_cells == [str(r) for r in range(ranks) for _ in range(steps)]
        assert "folded" not in figures.caption
        return
    named = sorted({c for c in rank_cells if c.isdigit()}, key=int)
    assert str(slow) in named and len(named) == rank_fold.NAMED
    assert rank_cells.count("median") == rank_cells.count("p90") == rank_cells.count("max") == steps
    assert len(figures.rows) == (rank_fold.NAMED + 3) * steps
    assert f"the other {ranks - rank_fold.NAMED} folded" in figures.caption
    # the max row per step is the slow rank's wall time; the median is a quiet rank's
    quiet = [s.wall_ms for s in report.ranks[0].steps]
    maxima = [row[2] for row in figures.rows if row[0] == "max"]
    medians = [row[2] for row in figures.rows if row[0] == "median"]
    assert maxima == pytest.approx([w + 40.0 for w in quiet]) and medians == pytest.approx(quiet)
    assert len(heat.rows) == rank_fold.NAMED + 3


def test_a_heatmap_bins_ranks_beyond_128_and_keeps_the_worst() -> None:
    report = widened(512, slow_rank=300, extra_ms=40.0)
    (section,) = [s for s in ranks_document(report).sections if s.key == "matrix"]
    heat = section.blocks[0]
    assert isinstance(heat, Heatmap)
    assert len(heat.rows) == rank_fold.BIN_ABOVE and heat.rows[75] == "300–303"
    quiet = [s.phases_ms["read_batch"] for s in report.ranks[0].steps]
    assert heat.values[75] == pytest.approx(tuple(q + 40.0 for q in quiet))
    assert heat.values[0] == pytest.approx(tuple(quiet))
    assert heat.marked == (75,)  # the straggler's bin is always labelled, in bold
    html = render(report, "html")
    assert re.search(r'<text font-weight="bold" [^>]*>300–303</text>', html)


def test_phase_comparison_is_each_rank_against_the_others_median() -> None:
    report = fixture_report()
    (section,) = [s for s in ranks_document(report).sections if s.key == "phases"]
    table = section.blocks[0]
    assert isinstance(table, Table)
    (row,) = [r for r in table.rows if r[0] == "read_batch"]
    per_rank = {
        r.rank: statistics.median(s.phases_ms.get("read_batch", 0.0) for s in r.steps)
        for r in report.ranks
    }
    others = statistics.median(v for k, v in per_rank.items() if k != 2)
    assert row[2] == "2" and row[3] == pytest.approx(per_rank[2])
    assert row[4] == pytest.approx(others) and row[5] == pytest.approx(per_rank[2] - others)


HOSTILE = "<img src=x onerror=alert(1)>\x1b]0;pwn\x07`|[bold]x[/]"


def hostile_report() -> tuple[RanksReport, tuple[RankLanes, ...]]:
    """The fixture with its straggler's phase and every path renamed to hostile text, and
    its ranks' lanes with hostile names."""
    report = fixture_report()
    ranks = tuple(
        msgspec.structs.replace(
            r,
            path=f"/tmp/{HOSTILE}/rank-{r.rank}.json",
            steps=tuple(
                msgspec.structs.replace(
                    s,
                    phases_ms={
                        (HOSTILE if k == "read_batch" else k): v for k, v in s.phases_ms.items()
                    },
                )
                for s in r.steps
            ),
        )
        for r in report.ranks
    )
    stragglers = tuple(msgspec.structs.replace(s, phase=HOSTILE) for s in report.stragglers)
    collectives = tuple(
        msgspec.structs.replace(c, process_group=HOSTILE) for c in report.collectives
    )
    lanes = tuple(
        msgspec.structs.replace(
            t,
            lanes=msgspec.structs.replace(
                t.lanes, names=tuple(f"{HOSTILE}</script>{n}" for n in t.lanes.names)
            ),
        )
        for t in fixture_job().lanes
    )
    hostile = msgspec.structs.replace(
        report, ranks=ranks, stragglers=stragglers, collectives=collectives
    )
    return hostile, lanes


@pytest.mark.parametrize("name", sorted(SUFFIX))
def test_hostile_names_and_paths_are_escaped(name: str) -> None:
    report, lanes = hostile_report()
    out = render(report, name, lanes)
    assert "\x1b" not in out and "\x07" not in out
    if name == "json":
        assert json.loads(out)["stragglers"][0]["phase"] == HOSTILE  # data, kept exactly
        return
    assert "\\x1b" in out  # shown, made visible
    if name == "md":  # outside code spans (where it is shown as it is)
        assert not re.search(r"(?<!\\)<img", re.sub(r"(`+).*?\1", "", out))
    if name == "html":
        assert "<img" not in out
    if name == "html":
        assert "&lt;img src=x onerror=alert(1)&gt;" in out
        figure = out.split('<div class="tl"', 1)[1].rsplit("</div>", 1)[0]
        assert out.replace(figure, "").count("<svg") == 2  # the heatmaps, beside the timeline
        assert out.count("<script") == 2 and out.count("</script>") == 2  # data, then code
        assert "\\u003c/script\\u003e" in out  # a name's </script> cannot close the data
        assert "<\\/script" not in out and "\\x1b]0;pwn" in out
    if name == "md":
        table_lines = [line for line in out.splitlines() if line.startswith("|")]
        widths = {len(re.findall(r"(?<!\\)\|", line)) for line in table_lines}
        assert all(w >= 2 for w in widths)  # a | in a name never adds a cell
        for block in out.split("\n\n"):
            lines = [line for line in block.splitlines() if line.startswith("|")]
            assert len({len(re.findall(r"(?<![\\])\|", line)) for line in lines}) <= 1
    if name == "text":
        assert "[bold]x[/]" in out  # rich markup printed literally
