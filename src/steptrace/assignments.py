"""``NAME=VALUE`` assignments applied to a frozen struct of non-negative numbers.

The one way thresholds are overridden (``--threshold input_share=0.2``): each value is
converted to its field's type, and every field must stay a finite, non-negative number.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import msgspec

Numbers = TypeVar("Numbers", bound=msgspec.Struct)


def assigned(value: Numbers, assignments: list[str]) -> Numbers:
    """A copy of ``value`` with ``["name=1.5", ...]`` applied (ValueError when invalid)."""
    changes: dict[str, Any] = {}
    for assignment in assignments:
        name, sep, text = assignment.partition("=")
        if not sep:
            raise ValueError(f"threshold {assignment!r}: expected NAME=VALUE")
        changes[name.strip()] = text.strip()
    try:
        chosen = msgspec.convert(msgspec.to_builtins(value) | changes, type(value), strict=False)
    except msgspec.ValidationError as exc:
        raise ValueError(f"thresholds: {exc}") from None
    for name, number in msgspec.to_builtins(chosen).items():
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"threshold {name}={number}: must be a finite, non-negative number")
    return chosen
