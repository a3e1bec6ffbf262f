"""Shared fixtures: the real traces of ../shared/traces and a writer of synthetic traces."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "traces"
NOT_A_TRACE = "memory_timeline_export_raw__memory_analysis.raw.gz"


def real_traces() -> list[Path]:
    """Every Chrome trace in ../shared/traces (the memory-timeline export is not one)."""
    found = sorted(p for p in TRACES.glob("*/*.gz") if p.name != NOT_A_TRACE)
    assert found, f"no traces found under {TRACES}"
    return found


def gpu_trace(name_part: str) -> Path:
    (match,) = [p for p in real_traces() if name_part in p.name]
    return match


def read_json(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


WriteTrace = Callable[..., Path]


@pytest.fixture
def write_trace(tmp_path: Path) -> WriteTrace:
    """Write a trace document (or raw text) to a fresh file and return its path."""
    counter = iter(range(1_000_000))

    def write(document: Any, *, name: str | None = None, gz: bool = False) -> Path:
        path = tmp_path / (name or f"trace{next(counter)}.json{'.gz' if gz else ''}")
        data = document if isinstance(document, bytes | str) else json.dumps(document)
        raw = data.encode() if isinstance(data, str) else data
        path.write_bytes(gzip.compress(raw) if gz else raw)
        return path

    return write
