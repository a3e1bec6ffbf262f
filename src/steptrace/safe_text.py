"""Text read from a trace or a file name, made safe to print: data, never terminal control."""

from __future__ import annotations

import html
import re

# C0 and C1 control characters but tab and newline (which the layouts use), and DEL
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


# one line: every C0/C1 control (tab and newline too), the Unicode line and paragraph
# separators, and the bidirectional overrides that can make a line read as another
_NOT_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def one_line(text: str) -> str:
    """``visible``, newlines and tabs included, for what must stay one line (an error, a
    warning): a file name holding a newline cannot start a line of its own."""
    return _NOT_ONE_LINE.sub(_escaped, text)


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def html_text(text: str) -> str:
    """``visible`` and HTML-escaped (quotes too): text from a trace stays text in a page,
    in an element or an attribute alike. The one HTML escape of the reports."""
    return html.escape(visible(text))


def visible(text: str) -> str:
    """Control characters made visible (``\\x1b``): text from a trace drives no terminal,
    viewer or browser, in any format, nor in a warning or an error."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
