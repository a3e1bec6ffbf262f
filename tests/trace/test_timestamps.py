"""Exact nanoseconds from the trace's text, against ``Decimal`` arithmetic on the same text."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steptrace.trace import timestamps
from steptrace.trace.timestamps import LIMIT_NS, NOT_A_NUMBER, OK, durations, nanoseconds


def expected(text: bytes) -> int | None:
    """The obviously-correct reading: Decimal, times 1000, half up; None when unusable."""
    try:
        value = Decimal(text.decode())
    except (InvalidOperation, UnicodeDecodeError):
        return None
    if not value.is_finite():
        return None
    ns = int((value * 1000).to_integral_value(ROUND_HALF_UP))
    return ns if abs(ns) < LIMIT_NS else None


def raws(texts: list[bytes]) -> list[msgspec.Raw]:
    return msgspec.json.decode(b"[" + b",".join(texts) + b"]", type=list[msgspec.Raw])


def check(texts: list[bytes]) -> None:
    ns, status = nanoseconds(raws(texts))
    for text, got, ok in zip(texts, ns.tolist(), status.tolist(), strict=True):
        want = expected(text)
        assert (ok == OK) == (want is not None), text
        assert want is None or got == want, text


def decimal_text(integer_digits: int, places: int) -> st.SearchStrategy[bytes]:
    integer = st.integers(0, 10**integer_digits - 1)
    fraction = st.text("0123456789", min_size=places, max_size=places)
    sign = st.sampled_from(["", "", "", "-"])
    return st.builds(
        lambda s, i, f: f"{s}{i}{'.' + f if f else ''}".encode(), sign, integer, fraction
    )


EPOCH_SCALE = st.integers(0, 3).flatmap(lambda p: decimal_text(16, p))
ANY_SCALE = st.tuples(st.integers(1, 21), st.integers(0, 6)).flatmap(lambda t: decimal_text(*t))
EDGES = [
    b"1712195495502094.547",
    b"4611686018427387.903",  # 2**62 - 1 ns
    b"4611686018427387.904",  # 2**62 ns: out
    b"4611686018427387.9035",
    b"-4611686018427387.903",
    b"4611686018427386.9996",
    b"9223372036854775807",
    b"18446744073709551616",
    b"0.0005",
    b"-0.0005",
    b"0.004",
    b"1e3",
    b"1.5E-2",
    b"1e400",
    b'"12"',
    b"null",
    b"true",
    b"[1]",
]


@settings(max_examples=150, deadline=None)
@given(st.lists(EPOCH_SCALE, min_size=1, max_size=60))
def test_plain_decimals_of_at_most_three_places_are_exact(texts: list[bytes]) -> None:
    check(texts)


@settings(max_examples=150, deadline=None)
@given(st.lists(ANY_SCALE, min_size=1, max_size=60), st.lists(st.sampled_from(EDGES)))
def test_any_number_and_any_other_value_is_read_exactly_or_refused(
    texts: list[bytes], edges: list[bytes]
) -> None:
    check(texts + edges)


def test_each_path_is_taken_and_agrees() -> None:
    """The integer path takes the usual batch; one odd value sends it to the digit path."""
    usual = [b"1712195495502094.547", b"1712195495502095", b"1712195495502096.5"]
    assert timestamps._as_integers(b"\n".join(raws(usual)), 3) is not None
    assert timestamps._as_integers(b"\n".join(raws([*usual, b"0.004"])), 4) is None
    check(usual)
    check([*usual, b"0.004", b"1e3", b"null"])


def alike_texts(integer_digits: int, places: int) -> st.SearchStrategy[list[bytes]]:
    """Values written alike: one number of integer digits (no leading zero), one of places."""
    low = 10 ** (integer_digits - 1) if integer_digits > 1 else 0
    integer = st.integers(low, 10**integer_digits - 1)
    fraction = st.text("0123456789", min_size=places, max_size=places)
    value = st.builds(lambda i, f: f"{i}{'.' + f if f else ''}".encode(), integer, fraction)
    return st.lists(value, min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(
    st.tuples(st.integers(1, 19), st.integers(0, 4)).flatmap(lambda t: alike_texts(*t)),
)
def test_values_written_alike_are_read_as_a_matrix_exactly(texts: list[bytes]) -> None:
    """The matrix path takes what it can (a single width and point) and agrees with Decimal;
    what it leaves (four places, 19 digits, near 2**62 ns) goes to the other paths."""
    text = b"\n".join(raws(texts))
    alike = timestamps._alike(text, len(texts), len(texts[0]))
    if alike is not None:
        assert alike.tolist() == [expected(t) for t in texts]
    check(texts)


@pytest.mark.parametrize(
    ("texts", "taken"),
    [
        ([b"1712195495502094.547", b"1712195495502095.001"], True),
        ([b"1669783687464181", b"1669783687464194"], True),
        ([b"4611686018427386.999"], True),  # the last integer part it takes
        ([b"4611686018427387.903"], False),  # 2**62 - 1 ns: the digit path's
        ([b"1712195495502094.547", b"17121954955020945.47"], False),  # the point moves
        ([b"1712195495502094.547", b"-712195495502094.547"], False),  # a sign
        ([b"1712195495502094.547", b"1712195495502094e547"], False),  # an exponent
        ([b"12.5", b"1e3"], False),
        ([b"12.5", b"125"], False),  # two widths
        ([b"1.2345"], False),  # four places
    ],
)
def test_the_matrix_path_takes_only_values_written_alike(texts: list[bytes], taken: bool) -> None:
    text = b"\n".join(raws(texts))
    assert (timestamps._alike(text, len(texts), len(texts[0])) is not None) == taken
    check(texts)


def test_a_missing_value_is_not_a_number() -> None:
    ns, status = nanoseconds([msgspec.Raw(), *raws([b"5"])])
    assert status.tolist() == [NOT_A_NUMBER, OK] and ns[1] == 5000


@pytest.mark.parametrize(
    ("dur", "ns"),
    [(35115.869, 35115869), (0.704, 704), (0.001, 1), (2.0**40, 2**40 * 1000), (0.0, 0)],
)
def test_float_durations_round_to_their_exact_nanoseconds(dur: float, ns: int) -> None:
    got, status = durations([dur])
    assert got.tolist() == [ns] and status.tolist() == [OK]


def test_float_durations_that_are_unusable_are_flagged() -> None:
    got, status = durations([None, float("inf"), float("nan"), 1e300, 5.0])
    assert status.tolist() == [
        NOT_A_NUMBER,
        timestamps.OUT_OF_RANGE,
        NOT_A_NUMBER,
        timestamps.OUT_OF_RANGE,
        OK,
    ]
    assert got[-1] == 5000


@settings(max_examples=100, deadline=None)
@given(st.lists(decimal_text(9, 3).filter(lambda t: not t.startswith(b"-")), min_size=1))
def test_float_durations_equal_the_exact_reading(texts: list[bytes]) -> None:
    """What msgspec decodes as a float, rounded, is what Decimal reads from the text."""
    floats = msgspec.json.decode(b"[" + b",".join(texts) + b"]", type=list[float])
    got, _ = durations(list(floats))
    assert got.tolist() == [expected(t) for t in texts]
    assert np.array_equal(got, nanoseconds(raws(texts))[0])
