"""JSON text -> its strings, each with what it is: a key, or a value and the field it is in.

scrub rewrites strings in the text itself: every number, every space and every string it
does not change stay byte for byte what they were (``ts`` is read from the text exactly).
``split_strings`` cuts the text at its strings (quotes kept out); ``strings`` finds the
few strings that a field governs: the value of a user, host or secret-named key, every
string of an object or list under one (``"API_KEY": {"part1": ..., "part2": ...}``), or the
string after an option in a list (``["--password", "hunter2"]``, ``["--user", "alice"]``,
the lines of a PEM block, the words of its header); and the numbers of 6 digits or more
under a secret field (``"password": 98765432``).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Collection
from typing import NamedTuple

from steptrace.tools.scrub.patterns import PEM_END

_STRING = re.compile(rb'"([^"\\]*(?:\\.[^"\\]*)*)"')
_ESCAPED_QUOTE = b'\\"'
_SPACE = b" \t\r\n"
_FEW = 16  # up to this many wanted strings, each is searched for on its own
_FIELD_REACH = 4096  # strings looked back for a value's key
SECRET_DIGITS = 6  # a number under a secret field this long is a secret (a PIN, a password)
# what sits between strings: brackets, commas, and numbers (never inside a string)
_TOKEN = re.compile(rb"[\[\]{},]|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")

# What governs a string (one byte per string in ``Contexts.codes``).
VALUE, USER, HOST, SECRET, ID, VERSION, PEM = range(7)
DASHES = 7  # carried only: a PEM block goes on if the next string is BEGIN (``----``, ``BEGIN``)
_DASHES = re.compile(rb"-{4,5}")  # the closing word of an SSH2 header split into words
FIELD_CODES = {"user": USER, "host": HOST, "secret": SECRET, "id": ID, "version": VERSION}


class Number(NamedTuple):
    """A number under a secret field: ``parts[part][start:end]``, under key string ``key``."""

    key: int
    part: int
    start: int
    end: int

    def text(self, parts: list[bytes]) -> str:
        return parts[self.part][self.start : self.end].decode()


class Strings(NamedTuple):
    """A JSON text cut at its strings, and what governs the strings that something governs."""

    parts: list[bytes]  # ``split_strings``
    distinct: list[bytes]  # every string's contents once, in order of first appearance
    special: dict[int, int]  # string number -> code, for codes other than VALUE and KEY
    keyed: dict[bytes, int]  # the contents that give a code as a key -> that code
    numbers: list[Number]  # the numbers under a secret field


def split_strings(data: bytes) -> list[bytes]:
    """The text cut at its strings: the text between strings at even places, the contents
    of the strings (escapes as written) at odd places; ``b'"'.join`` gives it back."""
    if _ESCAPED_QUOTE in data:
        return _STRING.split(data)
    return data.split(b'"')


def decode(content: bytes) -> str:
    """A string's text from its JSON contents."""
    if b"\\" not in content:
        return content.decode("utf-8", "surrogateescape")
    text: str = json.loads(b'"' + content + b'"')
    return text


def unescaped(content: bytes) -> bytes:
    """A string's JSON contents, decoded when it holds a ``\\u`` escape (``\\u002d`` is
    ``-`` to the byte patterns)."""
    if b"\\u" not in content:
        return content
    return decode(content).encode("utf-8", "replace")


def encode(text: str) -> bytes:
    """JSON contents for a new string (ASCII: any character survives)."""
    return json.dumps(text)[1:-1].encode()


def strings(
    data: bytes, field_code: Callable[[bytes], int], carry: Callable[[bytes], int]
) -> Strings:
    """The text's strings and what governs them (only the few that something does).

    ``field_code(key)``: the code a key gives its value; ``carry(value)``: the code a value
    gives the next string of its list (``SECRET`` after ``--password``, ``PEM`` after the
    first line of a block, which lasts until its last line).
    """
    parts = split_strings(data)
    values = parts[1::2]
    distinct = list(dict.fromkeys(values))
    keyed = {content: code for content in distinct if (code := field_code(content))}
    carried = {content: code for content in distinct if (code := carry(content))}
    special: dict[int, int] = {}
    numbers: list[Number] = []
    for number in positions(values, keyed.keys() | carried.keys()):
        content = values[number]
        if is_key(parts, number):
            if content in keyed:
                _govern(parts, number, keyed[content], special)
                if keyed[content] == SECRET:
                    numbers += numbers_under(parts, number)
        elif content in carried:
            _carry_on(parts, number, carried[content], special)
    return Strings(parts, distinct, special, keyed, numbers)


def numbers_under(parts: list[bytes], key: int) -> list[Number]:
    """The numbers of key string ``key``'s value: the value itself, or every number of the
    object or list it opens."""
    found: list[Number] = []
    depth, part = 0, 2 * key + 2
    start = parts[part].find(b":") + 1
    while part < len(parts):
        for token in _TOKEN.finditer(parts[part], start):
            text = token.group()
            if text in (b"[", b"{"):
                depth += 1
            elif text in (b"]", b"}", b","):
                depth -= text != b","
                if depth <= 0:
                    return found
            else:
                if len(text.lstrip(b"-")) >= SECRET_DIGITS:  # fewer: a count, a flag
                    found.append(Number(key, part, token.start(), token.end()))
                if depth == 0:
                    return found
        if depth == 0:  # the value is a string (or null, true, false)
            return found
        part, start = part + 2, 0
    return found


def positions(values: list[bytes], wanted: Collection[bytes]) -> list[int]:
    """The places of the wanted strings, in order: searched in C when they are few."""
    if len(wanted) > _FEW:
        return [number for number, content in enumerate(values) if content in wanted]
    found: list[int] = []
    for content in wanted:
        place = -1
        with contextlib.suppress(ValueError):
            while True:
                place = values.index(content, place + 1)
                found.append(place)
    return sorted(found)


def is_key(parts: list[bytes], number: int) -> bool:
    """Whether string ``number`` is a key (a colon follows it)."""
    after = parts[2 * number + 2]
    start = after[:1]
    return start == b":" or (start in _SPACE and after.lstrip()[:1] == b":")


def field_of(parts: list[bytes], number: int) -> int:
    """The string number of the key string ``number`` sits under (itself for a key), or -1."""
    for key in range(number, max(number - _FIELD_REACH, -1), -1):
        if is_key(parts, key):
            return key
        if b"}" in parts[2 * key]:
            return -1
    return -1


def _govern(parts: list[bytes], number: int, code: int, special: dict[int, int]) -> None:
    """Give ``code`` to the value of key ``number``: a string, or every string of an object
    or a list (keys aside)."""
    count = len(parts) // 2
    after = parts[2 * number + 2]
    if after.rstrip()[-1:] not in (b"{", b"["):
        if after.strip() == b":" and number + 1 < count:  # a string, not a number or null
            special.setdefault(number + 1, code)
        return
    depth = _opened(after)
    for inner in range(number + 1, count):
        if inner > number + 1:
            depth += _opened(parts[2 * inner])
        if depth <= 0:
            return
        if not is_key(parts, inner):
            special.setdefault(inner, code)


def _carry_on(parts: list[bytes], number: int, code: int, special: dict[int, int]) -> None:
    """Give ``code`` to the strings after string ``number`` in its list (one; for a PEM
    block, up to its END line, or up to a string that starts with ``-`` and is neither an END
    line nor a header's closing ``----``: an option, never a line of a block)."""
    count = len(parts) // 2
    for following in range(number + 1, count):
        if parts[2 * following].strip() != b"," or is_key(parts, following):
            return
        content = unescaped(parts[2 * following + 1])
        if code == DASHES:
            if content.strip() != b"BEGIN":
                return
            code = PEM
        elif content[:1] == b"-" and not (code == PEM and _in_block(content)):
            return  # an option after an option (no value), or after a block
        special.setdefault(following, code)
        if code != PEM or PEM_END.search(content):
            return


def _in_block(content: bytes) -> bool:
    return bool(PEM_END.match(content) or _DASHES.fullmatch(content.rstrip()))


def _opened(text: bytes) -> int:
    return text.count(b"{") + text.count(b"[") - text.count(b"}") - text.count(b"]")
