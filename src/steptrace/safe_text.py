"""Text read from a trace or a file name, made safe to print: data, never terminal control.

One rule for every output: what a reader cannot see, or what would make a line read as
another, is shown as a visible escape. That is every control character (C0, C1, DEL), every
invisible format character (Unicode's ``Cf``: the bidirectional overrides and isolates of
the "Trojan Source" trick, the marks ``U+200E``/``U+200F``/``U+061C``, zero-width spaces
and joiners, the byte-order mark, tag characters), the line and paragraph separators, a
few blank letters (the Hangul fillers) and lone surrogates. A surrogate from a file name
that is not valid UTF-8 (``os.fsdecode``'s surrogate escapes) is shown as the byte it
stands for (``\\xff``); others as ``\\ud800``.
"""

from __future__ import annotations

import html
import re

_INVISIBLE = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"  # Cf
    "\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0"  # blank letters and marks
    "\u2028\u2029"  # the line and paragraph separators
)
_SURROGATES = "\ud800-\udfff"
# what ``visible`` escapes: tab and newline are kept, the layouts use them
_HIDDEN = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}{_SURROGATES}]")
# what ``one_line`` escapes: tab and newline too
_NOT_ONE_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{_INVISIBLE}{_SURROGATES}]")
# what JSON output writes as ``\\u`` escapes (JSON escapes C0 itself; no surrogate is left)
_JSON_HIDDEN = re.compile(f"[\x7f-\x9f{_INVISIBLE}]")
_SURROGATE = re.compile(f"[{_SURROGATES}]")


def visible(text: str) -> str:
    """Control and invisible characters made visible (``\\x1b``, ``\\u202e``): text from a
    trace drives no terminal, viewer or browser, in any format, nor in a warning or an
    error, and reads as what it is."""
    return _HIDDEN.sub(_escaped, text)


def one_line(text: str) -> str:
    """``visible``, newlines and tabs included, for what must stay one line (an error, a
    warning): a file name holding a newline cannot start a line of its own."""
    return _NOT_ONE_LINE.sub(_escaped, text)


def html_text(text: str) -> str:
    """``visible`` and HTML-escaped (quotes too): text from a trace stays text in a page,
    in an element or an attribute alike. The one HTML escape of the reports."""
    return html.escape(visible(text))


def without_surrogates(text: str) -> str:
    """``text`` with its lone surrogates shown as escapes (as ``visible`` does), the rest
    as it is: the only characters that UTF-8, and so JSON, cannot hold."""
    return _SURROGATE.sub(_escaped, text)


def json_visible(text: str) -> str:
    """JSON text with every invisible character of its strings written as a ``\\u`` escape:
    the same values once parsed, nothing hidden when read as text. (JSON escapes C0 controls
    itself, and such characters can only sit inside strings.)"""
    return _JSON_HIDDEN.sub(_json_escaped, text)


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a file name that is not UTF-8
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _json_escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)  # a UTF-16 surrogate pair, as JSON writes one
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"
