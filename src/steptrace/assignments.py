"""``NAME=VALUE`` assignments applied to a frozen struct of non-negative numbers.

The one way thresholds are overridden (``--threshold input_share=0.2``): each value is
converted to its field's type, and every field must stay a finite, non-negative number.
Errors are one sentence in the user's words: an unknown name lists the valid ones, a value
of the wrong kind says what kind it must be.
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
    kinds = {f.name: f.type for f in msgspec.structs.fields(type(value))}
    for name, text in changes.items():
        if name not in kinds:
            raise ValueError(f"unknown threshold {name!r}; the thresholds are: {', '.join(kinds)}")
        try:
            msgspec.convert(text, kinds[name], strict=False)
        except msgspec.ValidationError:
            kind = "a whole number" if kinds[name] is int else "a number"
            raise ValueError(f"threshold {name}={text!r}: must be {kind}") from None
    chosen = msgspec.convert(msgspec.to_builtins(value) | changes, type(value), strict=False)
    for name, number in msgspec.to_builtins(chosen).items():
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"threshold {name}={number}: must be a finite, non-negative number")
    return chosen
