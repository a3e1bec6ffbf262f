"""The input shapes an operator row shows: its most frequent recorded (dims, types), and of
equally frequent ones those of its earliest call, recomputed from the raw JSON."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from steptrace.analysis.measure import measure
from steptrace.trace.load import load_trace
from tests import reference
from tests.conftest import trace_params


def _typical(path: Path) -> dict[str, tuple[Any, Any]]:
    """Per operator name: the typical (dims, types), by a plain count over the calls in
    table order (by start, longer first)."""
    calls: dict[str, dict[str, tuple[int, int, Any, Any]]] = defaultdict(dict)
    for row, e in enumerate(reference.events(reference.read_exact(path))):
        args = e.raw.get("args") or {}
        if not reference.is_cpu_op(e) or "Input Dims" not in args:
            continue
        dims, types = args["Input Dims"], args.get("Input type")
        key = json.dumps([dims, types], default=float)
        count, first, _, _ = calls[e.name].get(key, (0, row, dims, types))
        calls[e.name][key] = (count + 1, first, dims, types)
    typical = {}
    for name, shapes in calls.items():
        count, first, dims, types = max(shapes.values(), key=lambda s: (s[0], -s[1]))
        typical[name] = (dims, types)
    return typical


@pytest.mark.parametrize("path", trace_params())
def test_each_operator_shows_its_typical_shapes(path: Path) -> None:
    operators = measure(load_trace(path, groups=(), progress=False)).operators
    typical = _typical(path)
    shown = {
        o.name: (json.loads(o.input_shapes), o.input_types and json.loads(o.input_types))
        for o in operators
        if o.input_shapes is not None
    }
    assert shown == {
        name: (json.loads(json.dumps(d, default=float)), json.loads(json.dumps(t, default=float)))
        for name, (d, t) in typical.items()
    }
