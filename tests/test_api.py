"""The public API is small, sorted, and analysis imports no torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

import steptrace

PUBLIC = [
    "Finding",
    "LoaderSpans",
    "RankThresholds",
    "RanksReport",
    "Report",
    "Scenario",
    "Thresholds",
    "Window",
    "analyze",
    "analyze_ranks",
    "analyze_trace",
    "capture",
    "compare",
    "diff",
    "investigate",
    "load_trace",
    "profile_inference",
    "profile_training",
]


def test_the_exported_names_are_exactly_the_curated_list() -> None:
    assert steptrace.__all__ == PUBLIC


def test_every_public_name_has_a_docstring_and_at_most_ten_parameters() -> None:
    pytest.importorskip("torch")
    import inspect

    for name in PUBLIC:
        value = getattr(steptrace, name)
        assert (inspect.getdoc(value) or "").strip(), f"{name} has no docstring"
        if (callable(value) and not isinstance(value, type)) or name in ("Capture", "capture"):
            target = value.__init__ if isinstance(value, type) else value
            parameters = inspect.signature(target).parameters
            assert len(parameters) - ("self" in parameters) <= 10, name


def test_a_window_value_replaces_the_capture_keyword_lists() -> None:
    pytest.importorskip("torch")
    import inspect

    for entry in (steptrace.profile_training, steptrace.profile_inference, steptrace.capture):
        parameters = inspect.signature(entry).parameters
        assert "window" in parameters and "active" not in parameters, entry
        assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


@pytest.mark.slow
def test_analysis_does_not_import_torch() -> None:
    code = (
        "import sys, steptrace, steptrace.cli, steptrace.pipeline, "
        "steptrace.report.formats.to_text;"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_capture_names_resolve_on_first_use() -> None:
    pytest.importorskip("torch")
    for name in steptrace.__all__:
        value = getattr(steptrace, name)
        assert value.__module__.startswith("steptrace."), name
        assert value.__name__ == ("Capture" if name == "capture" else name)
    with pytest.raises(AttributeError):
        steptrace.no_such_thing  # noqa: B018


@pytest.mark.slow
def test_the_command_line_starts_without_numpy() -> None:
    """Reading a trace starts before numpy and msgspec load: they must not come first."""
    code = (
        "import sys, steptrace.cli, steptrace.trace.read.source;"
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


@pytest.mark.slow
def test_help_on_the_package_needs_no_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None;"  # as if torch were not installed
        "import pydoc, steptrace; pydoc.render_doc(steptrace);"
        "assert 'analyze' in dir(steptrace) and 'capture' not in dir(steptrace)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
