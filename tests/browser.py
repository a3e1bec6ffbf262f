"""A real headless Chromium page for the HTML tests: one launch, problems collected.

``loaded(path)`` opens a local file with no network: every console error, page error and
request that is not ``file:`` lands in the returned list, which the test asserts empty.
Without Chromium the test is skipped here and fails in CI (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def need_chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: .ci/run installs it (apt-get install chromium)")
        pytest.skip("Chromium is not installed here (.ci/run installs it in CI)")
    return CHROMIUM


@contextmanager
def loaded(path: Path, size: tuple[int, int] = (1200, 900)) -> Iterator[tuple[Any, list[str]]]:
    """(the page with ``path`` loaded in a window of ``size`` pixels, the problems seen
    while loading it)."""
    executable = need_chromium()
    playwright = pytest.importorskip("playwright.sync_api")
    problems: list[str] = []
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=ARGS)
        page = browser.new_page(viewport={"width": size[0], "height": size[1]})
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.on(
            "request",
            lambda r: problems.append(f"request {r.url}") if "file:" not in r.url else None,
        )
        page.goto(path.as_uri())
        try:
            yield page, problems
        finally:
            browser.close()
