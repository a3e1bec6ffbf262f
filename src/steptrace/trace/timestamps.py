"""Microseconds as written in the trace -> exact integer nanoseconds.

Kineto writes epoch-scale microseconds with nanosecond decimals (``1712195495502094.547``).
A float64 resolves only 0.25 µs at that scale, so the text of each ``ts`` and ``dur`` is
kept undecoded (``msgspec.Raw``) and read exactly here, a whole batch at a time:

1. the usual batch, plain decimals all written alike (``1712195495502094.547`` or
   ``1669783687464181``: one length, the point at one place): a matrix of digits, one
   row per value, multiplied by the powers of ten, with no Python object per value;
2. plain decimals of varied lengths: with the points taken out, the texts are integers
   (``1712195495502094547``) that msgspec reads in C; each is then scaled by the number
   of decimals it had, found with numpy;
3. any other batch: digit by digit, with numpy over a matrix of characters (integer part
   and three decimals exactly, the fourth rounding half away from zero);
4. what none of those reads (an exponent, a string, ``null``, 19 integer digits or more):
   ``decimal.Decimal``, one value at a time.

Durations are small numbers: decoded as floats on the one-pass path, rounding them to the
nanosecond is exact (``durations``).

A value is usable when it is a JSON number of magnitude below 2**62 ns (about 146 years):
differences of two usable values never overflow int64.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import msgspec
import numpy as np
from numpy.typing import NDArray

Ints = NDArray[np.int64]
LIMIT_NS = 1 << 62
OK, NOT_A_NUMBER, OUT_OF_RANGE = 0, 1, 2

_WIDTH = 32  # longer texts take the Decimal path
_INTEGER_DIGITS = 18  # at most this many before the point on the fast path (fits int64)
_LIMIT_US = LIMIT_NS // 1000 + 1  # an integer part from here on is out of range
_MINUS, _DOT, _ZERO, _NEWLINE = ord("-"), ord("."), ord("0"), ord("\n")
_POWERS = 10 ** np.arange(_INTEGER_DIGITS + 1, dtype=np.int64)
_SCALE = np.array([1000, 100, 10, 1], dtype=np.int64)  # by number of decimal places
_DECIMAL_WEIGHTS = _SCALE[1:]  # nanoseconds of the first, second and third decimal
_LIMIT_SCALED = LIMIT_NS // _SCALE  # below this, scaled values stay below 2**62 ns
_INTEGERS = msgspec.json.Decoder(list[int])
_THOUSAND = Decimal(1000)


def nanoseconds(values: list[msgspec.Raw]) -> tuple[NDArray[np.int64], NDArray[np.int8]]:
    """Each value in integer nanoseconds (0 where unusable), and its status (``OK``, ...)."""
    n = len(values)
    ns = np.zeros(n, dtype=np.int64)
    status = np.full(n, NOT_A_NUMBER, dtype=np.int8)
    if n == 0:
        return ns, status
    text = b"\n".join(values)
    if (exact := _alike(text, n, len(values[0]))) is not None:
        return exact, np.zeros(n, dtype=np.int8)
    if (exact := _as_integers(text, n)) is not None:
        return exact, np.zeros(n, dtype=np.int8)
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=n)
    width = int(min(lengths.max(), _WIDTH))
    if width > 0:
        _by_digits(text, lengths, width, ns, status)
    for i in np.flatnonzero((status != OK) & (lengths > 0)).tolist():
        ns[i], status[i] = _slow(bytes(values[i]))
    return ns, status


def durations(values: list[float | None] | list[msgspec.Raw]) -> tuple[Ints, NDArray[np.int8]]:
    """``dur`` in integer nanoseconds: floats as decoded on the one-pass path, else text.

    A float ``dur`` rounded to the nanosecond is exact: for values below 2**51 ns (26 days),
    the one that msgspec decoded is within 10**-6 ns of what the text says.
    """
    if values and isinstance(values[0], msgspec.Raw):
        return nanoseconds(values)
    with np.errstate(invalid="ignore"):
        scaled = np.array(values, dtype=np.float64) * 1000  # None: NaN
        finite = np.isfinite(scaled)
        fits = finite & (np.abs(scaled) < LIMIT_NS)
    ns = np.where(fits, np.rint(np.where(fits, scaled, 0)), 0).astype(np.int64)
    status = np.where(fits, OK, np.where(finite | np.isinf(scaled), OUT_OF_RANGE, NOT_A_NUMBER))
    return ns, status.astype(np.int8)


def _alike(text: bytes, n: int, width: int) -> NDArray[np.int64] | None:
    """Values of ``width`` characters each, digits with the point at one place (at most
    three decimals, the integer part within range), read as a matrix; None otherwise."""
    if width == 0 or len(text) != n * (width + 1) - 1:
        return None  # not all of one width (a value holds no newline, see below)
    rows = np.frombuffer(text + b"\n", dtype=np.uint8).reshape(n, width + 1)
    point = text.find(b".", 0, width)  # in the first value: the others must agree
    integer_digits = point if point >= 0 else width
    places = width - integer_digits - 1 if point >= 0 else 0
    if not 0 < integer_digits <= _INTEGER_DIGITS or places > 3 or places == 0 <= point:
        return None
    digits = rows[:, :width] - np.uint8(_ZERO)  # anything but a digit wraps above 9
    if point >= 0:
        if (rows[:, point] != _DOT).any():
            return None
        digits[:, point] = 0
    # every row ends in the newline and has only digits besides its point: each value is
    # exactly ``width`` characters of a plain decimal
    if (rows[:, width] != _NEWLINE).any() or (digits > 9).any():
        return None
    integer = digits[:, :integer_digits].astype(np.int64) @ _POWERS[integer_digits - 1 :: -1]
    if (integer >= _LIMIT_US - 1).any():
        return None  # near or past the limit: the digit path says which are out of range
    ns = integer * 1000
    if places:
        ns += digits[:, point + 1 :].astype(np.int64) @ _DECIMAL_WEIGHTS[:places]
    return ns


def _as_integers(text: bytes, n: int) -> NDArray[np.int64] | None:
    """Plain decimals of at most three places, read as integers; None if any is not."""
    try:
        digits = np.array(_INTEGERS.decode(b"[%s]" % text.replace(b".", b"").replace(b"\n", b",")))
    except (msgspec.DecodeError, OverflowError):
        return None
    if digits.dtype != np.int64 or digits.size != n:
        return None  # beyond int64 (an object array), or a text holding a comma
    chars = np.frombuffer(text, dtype=np.uint8)
    ends = np.flatnonzero(chars == _NEWLINE)
    points = np.flatnonzero(chars == _DOT)
    value_of_point = np.searchsorted(ends, points)
    if np.unique(value_of_point).size != points.size:
        return None  # two points in one text: not a number
    places = np.zeros(n, dtype=np.int64)
    places[value_of_point] = np.append(ends, chars.size)[value_of_point] - points - 1
    if places.max(initial=0) > 3 or (np.abs(digits) >= _LIMIT_SCALED[places]).any():
        return None
    return digits * _SCALE[places]


def _by_digits(
    text: bytes,
    lengths: NDArray[np.int64],
    width: int,
    ns: NDArray[np.int64],
    status: NDArray[np.int8],
) -> None:
    """Plain decimals (``-?digits(.digits)?``), read as a matrix of characters."""
    chars_of = np.frombuffer(text + bytes(width), dtype=np.uint8)
    starts = np.zeros(lengths.size, dtype=np.int64)
    np.cumsum(lengths[:-1] + 1, out=starts[1:])
    columns = np.arange(width)
    chars = chars_of[starts[:, None] + columns]
    inside = columns < lengths[:, None]
    digits = (chars - _ZERO).astype(np.int64)  # uint8 wraps: anything else is > 9
    is_digit = inside & (digits <= 9)
    is_dot = inside & (chars == _DOT)
    negative = chars[:, 0] == _MINUS
    dots = is_dot.sum(axis=1)
    point = np.where(dots == 1, is_dot.argmax(axis=1), lengths)  # where the decimals start
    plain = (
        (lengths <= width)
        & (dots <= 1)
        & (is_digit.sum(axis=1) + dots + negative == lengths)
        & is_digit.any(axis=1)
        & (point - negative <= _INTEGER_DIGITS)
    )
    digits = np.where(is_digit, digits, 0)
    before = point[:, None] - columns - 1  # the power of ten of each integer digit
    integer = (digits * _POWERS[np.clip(before, 0, _INTEGER_DIGITS)] * (before >= 0)).sum(axis=1)
    after = columns - point[:, None]  # 1 for the first decimal
    decimal_weight = np.select([after == 1, after == 2, after == 3], [100, 10, 1], 0)
    fraction = (digits * decimal_weight).sum(axis=1)
    fraction += ((digits * (after == 4)).sum(axis=1) >= 5).astype(np.int64)
    value = np.where(integer < _LIMIT_US, integer, _LIMIT_US) * 1000 + fraction  # no overflow
    fits = value < LIMIT_NS
    ns[plain] = np.where(negative, -value, value)[plain] * fits[plain]
    status[plain] = np.where(fits, OK, OUT_OF_RANGE)[plain]


def _slow(text: bytes) -> tuple[int, int]:
    """Any other JSON value: a number in another spelling, or not a number at all."""
    try:
        value = Decimal(text.decode("ascii"))
    except (InvalidOperation, UnicodeDecodeError, ValueError):
        return 0, NOT_A_NUMBER
    if not value.is_finite():
        return 0, NOT_A_NUMBER
    if abs(value) >= _LIMIT_US:  # compared before scaling: 1e999999 stays cheap
        return 0, OUT_OF_RANGE
    ns = int((value * _THOUSAND).to_integral_value(ROUND_HALF_UP))
    return (ns, OK) if abs(ns) < LIMIT_NS else (0, OUT_OF_RANGE)
