"""One operator call's recorded inputs, read for its cost model, and what a model returns.

Contract: ``Call.parse(dims, types, strides, concrete)`` reads the JSON texts a trace
records (``Input Dims``, ``Input type``, ``Input Strides``, ``Concrete Inputs``) into a
``Call``, or None when they do not describe the same inputs; ``Call.tensor(i)`` is input
``i`` as a ``Tensor`` (None: not a tensor), ``Call.value(i)`` its concrete value (None:
not recorded). A model returns a ``Cost``: FLOPs and bytes of one call.

A tensor read through a stride of 0 (a broadcast view, ``expand``) holds fewer elements
than its shape: ``Tensor.stored`` counts those the call really reads, when the strides
were recorded.
"""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

from steptrace.analysis.efficiency.dtypes import Dtype, dtype_of


class Tensor(NamedTuple):
    shape: tuple[int, ...]
    dtype: Dtype
    stride: tuple[int, ...] | None = None

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def stored(self) -> int:
        """Elements in memory: a broadcast dimension (stride 0) holds one."""
        if self.stride is None or len(self.stride) != len(self.shape):
            return self.elements
        return math.prod(n for n, step in zip(self.shape, self.stride, strict=True) if step)

    @property
    def bytes(self) -> int:
        """What reading it moves: its stored elements at its dtype's size."""
        return self.stored * self.dtype.size


class Cost(NamedTuple):
    """One call's work: FLOPs, bytes read and written, at which precision, on the matrix
    units or not."""

    model: str  # GEMM, convolution, attention, elementwise, reduction, normalization
    flops: int
    bytes: int
    precision: str | None
    matrix: bool


class Call(NamedTuple):
    dims: list[Any]
    types: list[str]
    strides: list[Any] | None
    concrete: list[str] | None

    @classmethod
    def parse(cls, dims: str, types: str, strides: str | None, concrete: str | None) -> Call | None:
        """The recorded inputs, or None when they cannot be read as one list of inputs."""
        shapes, kinds = _json_list(dims), _json_list(types)
        if shapes is None or kinds is None or len(shapes) != len(kinds):
            return None
        steps = _json_list(strides) if strides else None
        values = _json_list(concrete) if concrete else None
        return cls(
            shapes,
            [str(k) for k in kinds],
            steps if steps is not None and len(steps) == len(shapes) else None,
            [str(v) for v in values] if values is not None and len(values) == len(shapes) else None,
        )

    def tensor(self, i: int) -> Tensor | None:
        """Input ``i`` as a tensor; None when it is not one (or is not there)."""
        if i >= len(self.dims):
            return None
        dtype, shape = dtype_of(self.types[i]), self.dims[i]
        if dtype is None or not _ints(shape):
            return None
        stride = self.strides[i] if self.strides is not None else None
        steps = tuple(int(s) for s in stride) if stride is not None and _ints(stride) else None
        return Tensor(tuple(shape), dtype, steps)

    def tensors(self) -> list[Tensor]:
        return [t for i in range(len(self.dims)) if (t := self.tensor(i)) is not None]

    def value(self, i: int) -> str | None:
        """Input ``i``'s concrete value as written; None when it was not recorded."""
        if self.concrete is None or i >= len(self.concrete) or not self.concrete[i]:
            return None
        return self.concrete[i]

    def ints(self, i: int) -> list[int] | None:
        """Input ``i``'s concrete value as a list of integers (``[1, 1]`` or ``2``)."""
        value = self.value(i)
        if value is None:
            return None
        parsed = _json_list(value) if value.startswith("[") else _json_list(f"[{value}]")
        return parsed if parsed is not None and _ints(parsed) else None


def _json_list(text: str) -> list[Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) else None


def _ints(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    )
