"""What a collective call's recorded args say: its message size, its group's ranks.

``record_param_comms`` operators carry the ``collective`` field group (``CommArgs`` reads
it, row by row or many rows at once); a ``c10d::*`` operator only its recorded shapes.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from steptrace.trace.table import EventTable

_DTYPE_BYTES = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "long": 8,
    "int64": 8,
    "int": 4,
    "int32": 4,
    "short": 2,
    "int16": 2,
    "byte": 1,
    "uint8": 1,
    "char": 1,
    "int8": 1,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "c10::half": 2,
    "c10::bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}


class CommArgs:
    """The collective args of the rows that carry them (the ``collective`` field group):
    ``at(row)`` is a row's index among them, the getters read the field there (one index,
    or many: ``texts``, ``numbers``)."""

    def __init__(self, events: EventTable) -> None:
        self.events = events
        self.rows = events.sparse_column("collective").rows

    def at(self, row: int) -> int | None:
        k = int(np.searchsorted(self.rows, row))
        return k if k < self.rows.size and int(self.rows[k]) == row else None

    def text(self, field: str, k: int) -> str | None:
        return self.events.text(int(self.events.sparse_column(field).values[k]))

    def number(self, field: str, k: int) -> int:
        return int(self.events.sparse_column(field).values[k])

    def texts(self, field: str, ks: NDArray[np.intp]) -> list[str | None]:
        """``text`` at each of ``ks``, each distinct id looked up once."""
        ids = self.events.sparse_column(field).values[ks].tolist()
        known = {i: self.events.text(i) for i in set(ids)}
        return [known[i] for i in ids]

    def numbers(self, field: str, ks: NDArray[np.intp]) -> list[int]:
        """``number`` at each of ``ks``."""
        values: list[int] = self.events.sparse_column(field).values[ks].tolist()
        return values


def message_bytes(nelems: int, dtype: str | None) -> int | None:
    """A message's size from its element count and dtype name; None when either is unknown."""
    size = _DTYPE_BYTES.get((dtype or "").lower())
    return nelems * size if size is not None and nelems >= 0 else None


def shape_bytes(events: EventTable, row: int) -> int | None:
    """The first input tensor's size from the recorded shapes, when shapes were recorded."""
    dims_text = events.text(int(events.input_dims[row]))
    if dims_text is None:
        return None
    try:
        dims = json.loads(dims_text)
        types = json.loads(events.text(int(events.input_types[row])) or "[]")
    except ValueError:
        return None
    while dims and isinstance(dims[0], list) and dims[0] and isinstance(dims[0][0], list):
        dims = dims[0]  # a TensorList: its first tensor
    if not dims or not isinstance(dims[0], list) or not dims[0] or not types:
        return None
    count = 1
    for d in dims[0]:
        count *= int(d)
    return message_bytes(count, str(types[0]))


@functools.lru_cache(maxsize=256)
def group_ranks(text: str | None) -> tuple[int, ...] | None:
    """The global ranks of a group as recorded (``"[0, 1]"``); None when not a list of ints."""
    if not text:
        return None
    try:
        ranks = json.loads(text)
    except ValueError:
        return None
    if not isinstance(ranks, list) or not ranks or not all(isinstance(r, int) for r in ranks):
        return None
    return tuple(ranks)


def nanoseconds(us: float, clock_ns: int) -> int:
    """Absolute integer ns of a time in the table's microseconds: exact, because they hold
    integer ns of the trace's origin."""
    return clock_ns + round(us * 1000)


def nanoseconds_at(us: NDArray[np.float64], clock_ns: int) -> list[int]:
    """``nanoseconds`` of each value, the rounding (ties to even) done by numpy."""
    scaled = us * 1000
    if not (np.abs(scaled) < 2**62).all():  # beyond int64 (or NaN): one at a time
        return [nanoseconds(x, clock_ns) for x in us.tolist()]
    return [clock_ns + x for x in np.rint(scaled).astype(np.int64).tolist()]


def first_of_each(groups: Sequence[Sequence[int]]) -> NDArray[np.intp]:
    """Where each of the (non-empty) ``groups`` starts once they are laid end to end."""
    sizes = np.fromiter(map(len, groups), np.intp, len(groups))
    return np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.intp)
