"""Tensor dtypes as a trace writes them (``Input type``): their sizes, precisions and
promotion, for the cost models of operators (``op_models``).

Kineto writes a tensor's dtype in C++ words (``float``, ``c10::BFloat16``, ``long int``)
and a non-tensor argument by its kind (``Scalar``, ``Int``, ``Double``, ``Bool``,
``ScalarList``, ``TensorList``, ``GenericList``, or ``""``). ``promote`` follows torch's
rules: dimensioned tensors decide, a zero-dimensional tensor only when it is of a higher
category (bool < integer < floating < complex), a Python number only when it is higher
still (then the default dtype of its category); float16 with bfloat16 gives float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class Dtype(NamedTuple):
    name: str  # torch's name: float32, bfloat16, ...
    size: int  # bytes per element
    category: int  # 0 bool, 1 integer, 2 floating, 3 complex
    precision: str | None  # the peak it runs at (``hardware.PRECISIONS``); None: no peak


_DTYPES = (
    (("float",), Dtype("float32", 4, 2, "float32")),
    (("double",), Dtype("float64", 8, 2, None)),
    (("c10::Half",), Dtype("float16", 2, 2, "float16")),
    (("c10::BFloat16",), Dtype("bfloat16", 2, 2, "bfloat16")),
    (("c10::Float8_e4m3fn", "c10::Float8_e4m3fnuz"), Dtype("float8_e4m3fn", 1, 2, "float8")),
    (("c10::Float8_e5m2", "c10::Float8_e5m2fnuz"), Dtype("float8_e5m2", 1, 2, "float8")),
    (("c10::Float8_e8m0fnu",), Dtype("float8_e8m0fnu", 1, 2, None)),
    (("c10::Float4_e2m1fn_x2",), Dtype("float4_e2m1fn_x2", 1, 2, "float4")),
    (("long int", "long", "int64_t"), Dtype("int64", 8, 1, None)),
    (("int",), Dtype("int32", 4, 1, None)),
    (("short int", "short"), Dtype("int16", 2, 1, None)),
    (("signed char",), Dtype("int8", 1, 1, None)),
    (("unsigned char",), Dtype("uint8", 1, 1, None)),
    (("bool",), Dtype("bool", 1, 0, None)),
    (("c10::complex<float>",), Dtype("complex64", 8, 3, None)),
    (("c10::complex<double>",), Dtype("complex128", 16, 3, None)),
)
DTYPES: dict[str, Dtype] = {name: dtype for names, dtype in _DTYPES for name in names}
BY_NAME: dict[str, Dtype] = {dtype.name: dtype for _, dtype in _DTYPES}
# torch's ScalarType codes, as concrete inputs write a ``dtype=`` argument
SCALAR_TYPES: dict[int, str] = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    9: "complex64",
    10: "complex128",
    11: "bool",
    15: "bfloat16",
    23: "float8_e5m2",
    24: "float8_e4m3fn",
}
_DEFAULT = {0: "bool", 1: "int64", 2: "float32", 3: "complex64"}  # a Python number's


def dtype_of(text: str) -> Dtype | None:
    """The dtype a trace's ``Input type`` names; None for a non-tensor argument."""
    return DTYPES.get(text)


def scalar_type(concrete: str) -> Dtype | None:
    """The dtype of a ``dtype=`` argument's concrete value (a ScalarType code)."""
    try:
        name = SCALAR_TYPES.get(int(concrete))
    except ValueError:
        return None
    return BY_NAME.get(name) if name else None


def number_category(concrete: str) -> int | None:
    """The category of a Python number from its concrete value; None when not recorded."""
    text = concrete.strip()
    if text in ("True", "False"):
        return 0
    if not text:
        return None
    if "j" in text:
        return 3
    if any(c in text for c in ".eEn"):  # 0.5, 1e-05, inf, nan
        return 2
    return 1


def promote(
    dimensioned: Sequence[Dtype], zero_dim: Sequence[Dtype], numbers: Sequence[int]
) -> Dtype | None:
    """The result dtype of an elementwise operation on these operands (torch's rules)."""
    result = _widest(dimensioned)
    zero = _widest(zero_dim)
    if zero is not None and (result is None or zero.category > result.category):
        result = zero
    top = max(numbers, default=-1)
    if result is None or top > result.category:
        return BY_NAME[_DEFAULT[top]] if top >= 0 else result
    return result


def _widest(dtypes: Sequence[Dtype]) -> Dtype | None:
    if not dtypes:
        return None
    names = {d.name for d in dtypes}
    if names == {"float16", "bfloat16"}:
        return BY_NAME["float32"]
    return max(dtypes, key=lambda d: (d.category, d.size))
