"""Integer fields as every Kineto vintage writes them (``7``, ``"7"``, ``"stream 7"``,
``"0x0"``), read a column at a time: in C when the column holds plain integers, value by
value otherwise; what cannot be read, or does not fit in 64 bits, is ``missing``."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from types import NoneType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from steptrace.trace.fields import MISSING

Ints = NDArray[np.int64]
ThreadKey = tuple[int | str, int | str]
_DIGITS = re.compile(r"-?\d+")
_INT64 = (-(2**63), 2**63)
_NONE = {NoneType}
_INTS = {int, NoneType}
_NUMBERS = {int, float, NoneType}


def ints(
    values: list[Any], fallback: Iterator[int | str] | None = None, missing: int = MISSING
) -> Ints | list[int]:
    """An integer field per row; where it is absent, ``fallback`` (pid or tid), else
    ``missing``."""
    types = set(map(type, values))
    if types <= _INTS and (fallback is None or NoneType not in types):  # the usual case
        if NoneType in types:
            values = [missing if v is None else v for v in values]
        try:
            return np.array(values, dtype=np.int64)  # converted in C
        except OverflowError:
            pass
    written: Iterable[object] = values
    if fallback is not None:
        written = (f if v is None else v for v, f in zip(values, fallback, strict=True))
    return [
        v if type(v) is int and _INT64[0] <= v < _INT64[1] else as_int(v, missing) for v in written
    ]


def as_int(value: object, missing: int = MISSING) -> int:
    """An integer field as written (``7``, ``"7"``, ``"stream 7"``, ``"0x0"``); else
    ``missing``."""
    number = _parse_int(value)
    return number if number is not None and _INT64[0] <= number < _INT64[1] else missing


def _parse_int(value: object) -> int | None:
    if type(value) is int:
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        if value.lower().startswith("0x"):
            try:
                return int(value, 16)
            except ValueError:
                return None
        match = _DIGITS.search(value)
        if match:
            return int(match.group())
    return None


def thread_id_of(value: int | str) -> int | str:
    """A pid or tid as written: ``"25738"`` is ``25738``; a name stays a name."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return value


def canonical_threads(
    raw_threads: Iterable[ThreadKey],
) -> tuple[NDArray[np.int32], tuple[ThreadKey, ...]]:
    """``"25738"`` and ``25738`` are the same thread: per raw thread, its canonical id."""
    canonical: dict[ThreadKey, int] = {}
    remap = [
        canonical.setdefault((thread_id_of(p), thread_id_of(t)), len(canonical))
        for p, t in raw_threads
    ]
    return np.array(remap, dtype=np.int32), tuple(canonical)
