"""Text from traces and file names, made safe to print."""

from __future__ import annotations

import json
import os
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from steptrace.safe_text import html_text, json_visible, one_line, visible, without_surrogates


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


_UNSEEN = {"Cc", "Cf", "Cs", "Zl", "Zp"}


@given(st.text(st.characters(codec=None, exclude_categories=())))
def test_nothing_unseen_is_left_in_any_text(text: str) -> None:
    """Controls, format characters (BiDi, zero-width), separators and lone surrogates (a
    file name that is not UTF-8) are all shown as escapes, and the result is valid UTF-8."""
    for shown in (one_line(text), visible(text), html_text(text)):
        kept = [c for c in shown if unicodedata.category(c) in _UNSEEN and c not in "\n\t"]
        assert kept == []
        shown.encode()  # no surrogate left


def test_each_hidden_character_reads_as_its_escape() -> None:
    assert visible("a\u202eb\u2066c\u200bd\ufeffe") == "a\\u202eb\\u2066c\\u200bd\\ufeffe"
    assert visible("\U000e0041\u061c\u200e\u200f") == "\\U000e0041\\u061c\\u200e\\u200f"
    assert visible(os.fsdecode(b"trace\xff\xfe.json")) == "trace\\xff\\xfe.json"
    assert visible("\ud800") == "\\ud800"  # a lone surrogate from JSON's \ud800
    assert visible("é ✓ 中 \u00e9") == "é ✓ 中 é"  # visible text is left alone


def test_json_keeps_the_value_and_hides_nothing() -> None:
    text = json.dumps({"name": "a\u202eb\U000e0041\x85"}, ensure_ascii=False)
    shown = json_visible(text)
    assert shown == '{"name": "a\\u202eb\\udb40\\udc41\\u0085"}'
    assert json.loads(shown) == json.loads(text)
    assert without_surrogates(os.fsdecode(b"a\xff")) == "a\\xff"
