"""Text from traces and file names, made safe to print."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from steptrace.safe_text import one_line, visible


def test_one_line_escapes_what_could_start_or_disguise_a_line() -> None:
    text = "a\nb\rc\td\x1b[2Je\u2028f\u202eg\u2066h é ✓"
    assert one_line(text) == "a\\x0ab\\x0dc\\x09d\\x1b[2Je\\u2028f\\u202eg\\u2066h é ✓"
    assert visible("a\nb\x1b") == "a\nb\\x1b"  # the layouts keep their own newlines


_DISGUISING = {
    "\u2028",
    "\u2029",
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
}


@given(st.text())
def test_one_line_leaves_no_control_nor_line_break(text: str) -> None:
    shown = one_line(text)
    assert not any(unicodedata.category(c) == "Cc" or c in _DISGUISING for c in shown)
    assert len(shown.splitlines()) <= 1
