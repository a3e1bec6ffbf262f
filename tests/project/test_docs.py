"""The documentation: a short README that links every reference page, links and anchors
that resolve, commands and options that exist; and benchmarks/results.py, which writes each
benchmark's own section of RESULTS.md and keeps the others (driven here with hand-made rows:
no benchmark runs)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import click
import pytest

from steptrace.cli import app
from tests.paths import REPO, benchmark

ROOT = REPO
BENCHMARKS = ROOT / "benchmarks"
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)


def test_the_readme_is_short_and_links_every_reference_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert len(pages) >= 8
    for name in [*(f"docs/{p}" for p in pages), "benchmarks/RESULTS.md", "CHANGELOG.md"]:
        assert f"]({name})" in readme, name


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the page's headings (outside code blocks)."""
    text = _FENCE.sub("", page.read_text())
    titles = re.findall(r"^#+ +(.+?) *$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", t.lower()).replace(" ", "-") for t in titles}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    for link in _LINK.findall(page.read_text()):
        if link.startswith(("http://", "https://")):
            continue
        name, _, anchor = link.partition("#")
        target = (page.parent / name).resolve() if name else page
        assert target.exists(), f"{page.name}: {link}"
        if anchor:
            assert anchor in anchors(target), f"{page.name}: {link}"


def documented_commands(page: Path) -> list[list[str]]:
    """Each ``steptrace ...`` command line of the page's code blocks, as words, its
    continuation lines joined, comments and redirections cut."""
    commands = []
    for block in _FENCE.findall(page.read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            words = line.split("#")[0].split(">")[0].split()
            while words and "=" in words[0]:  # an environment variable set before it
                words.pop(0)
            if words[:1] == ["steptrace"]:
                commands.append(words[1:])
    return commands


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_documented_command_and_option_exists(page: Path) -> None:
    for words in documented_commands(page):
        if words == ["--version"]:
            continue
        command = app.commands.get(words[0])
        assert isinstance(command, click.Command), f"{page.name}: steptrace {words[0]}"
        options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        for word in words[1:]:
            if word.startswith("-"):
                assert word.split("=")[0] in options, f"{page.name}: steptrace {' '.join(words)}"


@pytest.fixture
def results() -> ModuleType:
    return benchmark("results")


def a_run(results: ModuleType, date: str = "2030-01-02 03:04 UTC") -> Any:
    return results.Run(
        date=date, commit="abc1234", machine="Some CPU, 2 cores, 24 GiB", load=1.5, command="x"
    )


def test_a_section_is_replaced_and_the_others_are_kept(results: ModuleType, tmp_path: Path) -> None:
    target = tmp_path / "RESULTS.md"
    first = a_run(results)
    for name in ("alpha", "beta", "gamma"):
        results.write(name, first, ["figure"], [[f"{name} 1"]], path=target)
    before = target.read_text()
    assert before.startswith(results.HEADER)

    later = a_run(results, date="2031-05-06 07:08 UTC")
    rows = [["beta 2", 0.5], ["beta 3", None]]
    results.write("beta", later, ["figure", "ratio"], rows, path=target)
    after = target.read_text()

    def section(text: str, name: str) -> str:
        start = text.index(results.begin_marker(name))
        return text[start : text.index(results.end_marker(name), start)]

    for kept in ("alpha", "gamma"):
        assert section(after, kept) == section(before, kept)
    beta = section(after, "beta")
    assert "beta 1" not in beta and "2030-01-02" not in beta
    context = "| 2031-05-06 07:08 UTC | abc1234 | Some CPU, 2 cores, 24 GiB | 1.50 |"
    assert f"{context} beta 2 | 0.5 |" in beta
    assert "| beta 3 | – |" in beta
    assert after.startswith(results.HEADER)
    assert [after.index(results.begin_marker(n)) for n in ("alpha", "beta", "gamma")] == sorted(
        after.index(results.begin_marker(n)) for n in ("alpha", "beta", "gamma")
    )
    assert after.count("<!-- results:") == 3


def test_a_new_benchmark_is_added_at_the_end(results: ModuleType, tmp_path: Path) -> None:
    target = tmp_path / "RESULTS.md"
    target.write_text("# Results\n\nhand-written header\n")
    results.write("first", a_run(results), ["s"], [["1.0"]], path=target)
    results.write("second", a_run(results), ["s"], [["2.0"]], path=target)
    text = target.read_text()
    assert text.startswith("# Results\n\nhand-written header\n")
    assert text.index("## first.py") < text.index("## second.py")


def test_every_row_starts_with_the_run_and_cells_stay_on_one_line(
    results: ModuleType,
) -> None:
    text = results.section("b", a_run(results), ["name", "value"], [["a|b", "two\nlines"]])
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0] == "| date | commit | machine | load at start | name | value |"
    assert table[2].endswith("| a\\|b | two lines |")
    with pytest.raises(ValueError, match="2 columns"):
        results.section("b", a_run(results), ["name", "value"], [["only one"]])


def test_a_section_without_its_end_is_refused(results: ModuleType) -> None:
    broken = results.HEADER + results.begin_marker("b") + "\n## b.py\n"
    with pytest.raises(ValueError, match="end marker"):
        results.replace_section(broken, "b", "new")


def test_the_environment_names_another_file(
    results: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trial = tmp_path / "trial.md"
    monkeypatch.setenv("STEPTRACE_RESULTS", str(trial))
    assert results.write("b", a_run(results), ["s"], [["1"]]) == trial
    assert "## b.py" in trial.read_text()


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_commit_is_the_short_hash_and_says_when_the_tree_differs(
    results: ModuleType, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    (repo / "benchmarks").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "code.py").write_text("x = 1\n")
    (repo / "benchmarks" / "RESULTS.md").write_text("# Results\n")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "one")
    head = git(repo, "rev-parse", "--short", "HEAD")
    assert results.commit_of(repo) == head
    (repo / "benchmarks" / "RESULTS.md").write_text("# Results\n\nmore\n")
    assert results.commit_of(repo) == head  # the file the benchmarks write does not count
    (repo / "code.py").write_text("x = 2\n")
    assert results.commit_of(repo) == f"{head}+dirty"
    git(repo, "checkout", "-q", "code.py")
    (repo / "new.py").write_text("y = 1\n")
    assert results.commit_of(repo) == f"{head}+dirty"
    assert results.commit_of(tmp_path / "not-a-repo") == "unknown"


def test_the_run_states_the_machine_and_the_load(results: ModuleType) -> None:
    run = results.Run.start()
    assert re.fullmatch(r".+, \d+ cores, \d+ GiB", run.machine)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", run.date)
    assert run.load >= 0
    assert re.fullmatch(r"[0-9a-f]{4,}(\+dirty)?|unknown", run.commit)


def test_every_benchmark_writes_a_section_the_committed_file_has() -> None:
    committed = (BENCHMARKS / "RESULTS.md").read_text()
    helpers = {"results", "process_tree", "figure_cost"}  # the writer; measuring helpers
    for script in sorted(BENCHMARKS.glob("*.py")):
        if script.stem in helpers:
            continue
        text = script.read_text()
        writes = (f'results.write("{script.stem}"', f'figure_cost.main("{script.stem}"')
        assert any(w in text for w in writes), script.name
        assert f"<!-- results: {script.stem} -->" in committed, script.name
