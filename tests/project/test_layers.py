"""The pipeline's shape: no import cycle, and no stage imports one above it.

Every ``import`` in ``src/steptrace`` counts, including those inside functions and under
``TYPE_CHECKING``: a cycle hidden in a function is still a cycle of design.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.paths import SRC

# Lower layers first: a module may import its own layer or any layer below it, never above.
# The base modules are plain data and helpers every stage may use.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset(
        {
            "errors",
            "process",  # Ctrl-C, workers, the machine, deadlines, the user's code, files
            "lazy",
            "units",
            "safe_text",
            "window",
            "scenario",
            "devices",
            "assignments",
            "paired",
        }
    ),
    frozenset({"trace"}),
    frozenset({"analysis", "across"}),  # across: several analyses at once, beside analysis
    frozenset({"hypotheses"}),
    # integrations: capture inside Lightning, Hugging Face and Accelerate loops
    frozenset({"report", "capturing", "validate", "integrations"}),
    frozenset({"pipeline", "tables"}),  # tables: the user's, built before the pipeline loads
    frozenset({"investigation"}),  # the closed loop: capture, analyze, check
    frozenset({"tools", "cli"}),
)
# Stages side by side that must not know each other.
APART = (
    ("capturing", "validate"),
    ("capturing", "report"),
    ("integrations", "report"),
    ("integrations", "validate"),
)


def modules() -> dict[str, Path]:
    """``steptrace.analysis.time.gpu`` -> its file, for every module of the package."""
    found = {}
    for path in sorted((SRC / "steptrace").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> Iterator[str]:
    """The steptrace modules that ``name`` imports, anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:  # ``from m import name``: the module m
                target = target.rpartition(".")[0]
            if target.startswith("steptrace.") and target != name:
                yield target


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: set(imports(name, path, known)) for name, path in found.items()}


def stage(module: str) -> str:
    """``steptrace.analysis.time.gpu`` -> ``analysis``; ``steptrace.pipeline`` -> ``pipeline``."""
    return module.split(".")[1]


def layer(module: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if stage(module) in names)


def test_every_module_has_a_layer() -> None:
    unplaced = {stage(m) for m in modules() if m != "steptrace"} - set().union(*LAYERS)
    assert unplaced == set()


def test_no_stage_imports_one_above_it() -> None:
    upward = [
        f"{module} imports {target}"
        for module, targets in graph().items()
        if module != "steptrace"
        for target in targets
        if layer(target) > layer(module)
    ]
    assert upward == []


@pytest.mark.parametrize(("one", "other"), APART)
def test_side_by_side_stages_do_not_know_each_other(one: str, other: str) -> None:
    crossing = [
        f"{module} imports {target}"
        for module, targets in graph().items()
        if module != "steptrace"
        for target in targets
        if {stage(module), stage(target)} == {one, other}
    ]
    assert crossing == []


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph, or None (depth-first search, colours)."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_no_cycle_between_stages() -> None:
    edges: dict[str, set[str]] = {}
    for module, targets in graph().items():
        if module != "steptrace":
            edges.setdefault(stage(module), set()).update(
                stage(t) for t in targets if stage(t) != stage(module)
            )
    assert cycle(edges) is None


def test_no_cycle_between_modules() -> None:
    """Package ``__init__`` files re-export their modules: they are left out of this one."""
    packages = {name for name, path in modules().items() if path.name == "__init__.py"}
    edges = {
        module: targets - packages for module, targets in graph().items() if module not in packages
    }
    assert cycle(edges) is None


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set(), "c": {"b"}}) is None
