"""The public GPU traces kept under tests/fixtures/public (see its README), analyzed once."""

from __future__ import annotations

import functools
from pathlib import Path

import steptrace
from tests.paths import FIXTURES

PUBLIC = FIXTURES / "public"
B200 = PUBLIC / "b200_vllm_eager_trace.json.gz"
MI300X = PUBLIC / "mi300x_qwen1.5-0.5b_inference.json.gz"
TRACELENS_H100 = PUBLIC / "tracelens_h100_qwen_reference.json"


@functools.cache
def public_report(path: Path) -> steptrace.Report:
    """The report of a public trace, once per session (reports are immutable)."""
    return steptrace.analyze(path)
