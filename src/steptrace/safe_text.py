"""Text read from a trace or a file name, made safe to print: data, never terminal control."""

from __future__ import annotations

import re

# C0 and C1 control characters but tab and newline (which the layouts use), and DEL
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """Control characters made visible (``\\x1b``): text from a trace drives no terminal,
    viewer or browser, in any format, nor in a warning or an error."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
