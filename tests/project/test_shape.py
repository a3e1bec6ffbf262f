"""The package stays walkable (issue #43): small modules, few ``Any``, folders of about 15.

Counted on the source as it is: a module's lines, the ``Any`` names its code uses (the AST's
names: annotations, aliases and casts, not the import), the modules of each folder
(``__init__`` not counted).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests import paths

SRC = paths.SRC / "steptrace"
MODULE_LINES = 400
ANY_PER_1000_LINES = 8
FOLDER_MODULES = 15


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_no_module_is_over_400_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in _modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert not long, long


def test_any_is_rare() -> None:
    lines = names = 0
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        lines += len(text.splitlines())
        tree = ast.parse(text)
        names += sum(isinstance(n, ast.Name) and n.id == "Any" for n in ast.walk(tree))
    assert names * 1000 <= ANY_PER_1000_LINES * lines, (names, lines)


def test_each_folder_holds_about_15_modules() -> None:
    counts: dict[str, int] = {}
    for path in _modules():
        if path.name != "__init__.py":
            folder = str(path.parent.relative_to(SRC))
            counts[folder] = counts.get(folder, 0) + 1
    over = {f: n for f, n in counts.items() if n > FOLDER_MODULES}
    assert not over, over


# Tests of the project as a whole (its docs, layers, examples, benchmarks, shape): no module.
WHOLE = "project"


def test_the_tests_mirror_the_source() -> None:
    """A module's tests are found from its path: ``src/steptrace/A/b.py`` (or the package
    ``A/b/``) is tested in ``tests/A/test_b.py`` or ``tests/A/test_b_<aspect>.py``; a
    package as a whole, through the names its ``__init__`` exports, in ``test_api*.py``
    beside its modules' tests."""
    misplaced = []
    for test in sorted(paths.TESTS.rglob("test_*.py")):
        folder = test.parent.relative_to(paths.TESTS)
        if folder.parts[:1] == (WHOLE,):
            continue
        source = SRC / folder
        names = {"api"} | {
            "api" if p.name == "__init__.py" else p.stem
            for p in (source.iterdir() if source.is_dir() else ())
            if p.suffix == ".py" or (p / "__init__.py").is_file()
        }
        named = test.stem.removeprefix("test_")
        if not any(named == n or named.startswith(f"{n}_") for n in names):
            misplaced.append(str(test.relative_to(paths.TESTS)))
    assert not misplaced, misplaced
