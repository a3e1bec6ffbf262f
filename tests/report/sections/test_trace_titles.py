"""A report's title names the trace and, when the trace says so, its rank and world size."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptrace.report.sections.trace import title
from tests import reference
from tests.conftest import report_of, trace_params


@pytest.mark.parametrize("path", trace_params())
def test_the_title_says_only_what_the_trace_holds(path: Path) -> None:
    info = reference.read_exact(path).get("distributedInfo") or {}
    found = title(report_of(path.name))
    assert "None" not in found
    if "rank" not in info:
        assert "(rank" not in found
    elif "world_size" in info:
        assert found.endswith(f"(rank {info['rank']} of {info['world_size']})")
    else:  # the A100 critical-path examples: a rank, no world size
        assert found.endswith(f"(rank {info['rank']})")
