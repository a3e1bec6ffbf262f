"""Where the repository's parts are, for a test wherever it lies under tests/ (the tests
mirror the source's folders, so a test's own path says nothing of the repository's)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SRC = REPO / "src"
DOCS = REPO / "docs"
EXAMPLES = REPO / "examples"
BENCHMARKS = REPO / "benchmarks"
GOLDEN = TESTS / "golden"
FIXTURES = TESTS / "fixtures"


def benchmark(name: str) -> ModuleType:
    """A script of ``benchmarks/`` imported as a module (its parts are tested, or measure)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(name)
