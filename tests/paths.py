"""Where the repository's parts are, for a test wherever it lies under tests/ (the tests
mirror the source's folders, so a test's own path says nothing of the repository's)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SRC = REPO / "src"
DOCS = REPO / "docs"
EXAMPLES = REPO / "examples"
BENCHMARKS = REPO / "benchmarks"
GOLDEN = TESTS / "golden"
FIXTURES = TESTS / "fixtures"
