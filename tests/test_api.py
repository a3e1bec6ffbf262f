"""The public API is small, sorted, and analysis imports no torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

import steptrace


def test_all_is_curated_and_sorted() -> None:
    assert steptrace.__all__ == sorted(steptrace.__all__)


def test_analysis_does_not_import_torch() -> None:
    code = (
        "import sys, steptrace, steptrace.cli, steptrace.report.text;"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_capture_names_resolve_on_first_use() -> None:
    pytest.importorskip("torch")
    for name in steptrace.__all__:
        assert getattr(steptrace, name) is not None
    with pytest.raises(AttributeError):
        steptrace.no_such_thing  # noqa: B018
