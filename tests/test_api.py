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
        "import sys, steptrace, steptrace.cli, steptrace.pipeline, steptrace.report.to_text;"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_capture_names_resolve_on_first_use() -> None:
    pytest.importorskip("torch")
    for name in steptrace.__all__:
        assert getattr(steptrace, name) is not None
    with pytest.raises(AttributeError):
        steptrace.no_such_thing  # noqa: B018


def test_the_command_line_starts_without_numpy() -> None:
    """Reading a trace starts before numpy and msgspec load: they must not come first."""
    code = (
        "import sys, steptrace.cli, steptrace.trace.source;"
        "heavy = {'numpy', 'msgspec'} & set(sys.modules);"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lazy_names_are_listed_and_importable() -> None:
    import steptrace.trace

    assert set(steptrace.__all__) <= set(dir(steptrace))
    assert set(steptrace.trace.__all__) <= set(dir(steptrace.trace))
    from steptrace.trace import EventTable, load_trace

    assert load_trace is steptrace.load_trace
    assert EventTable.__name__ == "EventTable"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        steptrace.trace.nope  # noqa: B018


def test_help_on_the_package_needs_no_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None;"  # as if torch were not installed
        "import pydoc, steptrace; pydoc.render_doc(steptrace);"
        "assert 'analyze' in dir(steptrace) and 'capture' not in dir(steptrace)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
