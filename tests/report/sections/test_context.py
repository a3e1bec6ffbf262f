"""The report's devices line: NVIDIA's compute capability, AMD's gfx version (ROCm writes
it where CUDA writes the capability), each read from the trace's deviceProperties."""

from __future__ import annotations

import pytest

from steptrace.report.sections.context import devices
from tests.conftest import gpu_trace, read_json, report_of


@pytest.mark.parametrize(("name", "word"), [("mi250", "gfx"), ("v100_1rank", "cc")])
def test_the_version_is_named_for_its_vendor(name: str, word: str) -> None:
    first = read_json(gpu_trace(name))["deviceProperties"][0]
    said = f"{first['name']} ({word} {first['computeMajor']}.{first['computeMinor']})"
    assert said in devices(report_of(name))
