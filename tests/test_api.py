"""The public API is small, sorted and importable without torch."""

from __future__ import annotations

import subprocess
import sys

import steptrace


def test_all_is_curated_and_sorted() -> None:
    assert steptrace.__all__ == sorted(steptrace.__all__)
    for name in steptrace.__all__:
        assert hasattr(steptrace, name)


def test_analysis_does_not_import_torch() -> None:
    code = (
        "import sys, steptrace, steptrace.cli, steptrace.report.text;"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
