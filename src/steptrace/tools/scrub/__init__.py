"""``scrub``: a copy of a trace without the names, addresses and secrets that must stay home.

Contract: ``scrub_text(data) -> (scrubbed, report)`` rewrites the strings of a JSON trace
text, keys and values at any depth, and the numbers of 6+ digits under a secret field (a
placeholder string), nothing else: numbers (so every timing), spaces and untouched strings
stay byte for byte, and the keys the analyses read (``ts``, ``args``,
``Input Dims``...) and the event phase are never changed. ``scrub_document(doc)`` does the
same for a decoded document (pure: ``doc`` is not mutated); ``scrub_file(source, target)``
reads a ``.json`` or ``.json.gz`` trace (several gzip members too) and writes a new file
only; ``check_file(source)`` reports what scrub would replace. Bad input raises a one-line
``TraceError`` naming the file.

Each secret becomes ``<kind-N>``: the same secret always gets the same placeholder (user
and host names in any capitalisation), numbered per kind in a fixed order (the declared
fields first, then every string in order of first appearance): the output is deterministic.
Placeholders are recognised and kept, and new ones are numbered after those in the trace,
so scrubbing a scrubbed trace changes nothing. The kinds, and how each is found:

- ``user``: the folder after ``/home/``, ``/Users/``, ``C:\\Users\\`` (any case),
  ``/data/users/``; under ``/scratch``, ``/work``, ``/gpfs``, ``/lustre``, ``/fsx``,
  ``/checkpoint`` the folder after ``home``/``users``/``scratch``, else the first folder
  that is not a file-system word; ``~alice``; ``torchinductor_alice``; the values of user
  fields and options (``username``, ``USER``, ``started_by``, ``--user``, also as two
  elements of a list); the user of a URL. Once known (3+ characters), a name is replaced
  everywhere, in any capitalisation.
- ``host``: the values of host fields and options (``hostname``, ``HOSTNAME``,
  ``MASTER_ADDR``...), replaced everywhere with their first label; the host of any URL or
  UNC path (``\\\\server\\share``, ``//server01/share``); and
  dotted names shaped like a host name (see ``shapes``): ``node12.cs.example.edu``,
  ``gpu3.hpc.example.ac.uk``, ``gpu-node-44.cluster``, never ``torch.nn.functional``.
- ``ip``: IPv4 and IPv6 addresses (in brackets, mapped into IPv6), ports kept; versions
  such as ``12.8.4.1`` are kept (``shapes`` says how they are told apart).
- ``email``: ``local@domain``, with ``+``, any case, non-ASCII local parts, internationalised
  domains, and ``%40`` for ``@``. The credentials of a URL are not e-mails: ``user`` and
  ``secret``.
- ``token``: AWS key ids, GitHub (``ghp_ gho_ ghu_ ghs_ ghr_ github_pat_``), Hugging Face,
  OpenAI and Anthropic (``sk-``), GitLab, Slack (``xox?-``, ``xapp-``, webhooks), Stripe,
  npm, SendGrid, Google (``AIza``, ``ya29.``) keys, and ``Bearer`` tokens of any length.
- ``jwt``: ``eyJ…``-headed JSON web tokens.
- ``secret``: the values of secret-named fields and options (``*_KEY``, ``*_KEY_ID``,
  ``*TOKEN*``, ``PASSWORD``, ``auth``, ``--password=``, ``password: ``, ``Authorization:``,
  including every string and number of an object or list under one, and the string after
  ``--token`` in a list), the passwords of URLs and the signatures of signed URLs
  (``sig=``); once known (2+ characters, 6+ for a number), replaced everywhere.
- ``pem``: a whole ``-----BEGIN …-----`` (or SSH2 ``---- BEGIN … ----``) block, to its
  ``END`` line or the string's end, whatever stands before its header (``KEY=``); in a
  list, over the following strings (its lines, or its header's words) up to its ``END``
  line or to a string starting with ``-`` that is none (an option).
- ``hex-secret``: 32+ hex digits mixing digits and letters, except Kineto's ``trace_id``
  and a hashed ``pg_name``; ``base64-secret``: 40+ base64 characters mixing upper case,
  lower case and digits, not touching ``_`` (every run of a mangled C++ name is one).

Generic names (``root``, ``localhost``, ``shared``...) and the words of the trace format
(``cpu_op``, ``kernel``...) identify nobody and are never replaced.
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from steptrace.errors import TraceError
from steptrace.tools.scrub.field_kinds import FORMAT_KEYS, field_kind
from steptrace.tools.scrub.inout import check_paths, check_trace, read_trace, write_new
from steptrace.tools.scrub.learn import learn
from steptrace.tools.scrub.patterns import PEM_END, PEM_HEADER, SECRET_OPTION
from steptrace.tools.scrub.scrubber import Scrubber
from steptrace.tools.scrub.tally import Place, ScrubReport
from steptrace.tools.scrub.text import (
    DASHES,
    FIELD_CODES,
    ID,
    PEM,
    SECRET,
    VALUE,
    VERSION,
    Number,
    Strings,
    decode,
    encode,
    field_of,
    positions,
    strings,
    unescaped,
)

__all__ = ["Place", "ScrubReport", "check_file", "scrub_document", "scrub_file", "scrub_text"]

_KEPT_KEYS = frozenset(key.encode() for key in FORMAT_KEYS)
_KEY_LENGTH = 200  # a longer string is no field name worth reading
Replaced = tuple[bytes, tuple[str, ...]]  # a string's new JSON contents, the kinds replaced
_OPTION_LENGTH = 64  # a secret option alone in a string is shorter
_OPTION = re.compile(r"-{1,2}[A-Za-z][\w.-]*")
_KEEPING = (ID, VERSION)  # the codes of the fields whose value is kept where another is not
_HEADER_WORD = re.compile(rb"-{4,5}(BEGIN)?")  # a header split into words: -----BEGIN RSA ...


def scrub_text(data: bytes) -> tuple[bytes, ScrubReport]:
    """A scrubbed copy of a JSON trace's text, and what was replaced."""
    with _collector_paused():  # millions of small objects, no cycles
        return _scrub_text(data)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _scrub_text(data: bytes) -> tuple[bytes, ScrubReport]:
    found = strings(data, _field_code, _carry)
    scrubber = Scrubber(learn(found))
    lost = _lost_fields(found, scrubber)
    if lost:  # their values are scrubbed as if the keys were written as they will be
        found = strings(data, lambda key: VALUE if key in lost else _field_code(key), _carry)
    parts = found.parts
    counts: Counter[str] = Counter()
    places: Counter[tuple[str, str | None]] = Counter()
    numbers = [(n, scrubber.number(n.text(parts))) for n in found.numbers]  # declared: first
    for number, (content, kinds) in _replacements(found, scrubber):
        parts[2 * number + 1] = content
        counts.update(kinds)
        field = field_of(parts, number)
        label = decode(parts[2 * field + 1]) if field >= 0 else None
        places.update((kind, label) for kind in kinds)
    for value, placeholder in reversed(numbers):  # from the end: the spans before stay
        _replace_number(parts, value, placeholder)
        counts["secret"] += 1
        places["secret", decode(parts[2 * value.key + 1])] += 1
    scrubbed = b'"'.join(parts) if counts else data
    return scrubbed, _report(counts, places)


def _replace_number(parts: list[bytes], value: Number, placeholder: str) -> None:
    """A number under a secret field replaced by its placeholder, a string."""
    part = parts[value.part]
    new = b'"' + encode(placeholder) + b'"'
    parts[value.part] = part[: value.start] + new + part[value.end :]


def _lost_fields(found: Strings, scrubber: Scrubber) -> frozenset[bytes]:
    """The keys of ids and versions that scrubbing renames into a field of another kind.

    Such a key keeps its value (a ``trace_id``'s hex, a version shaped like an address) only
    while it is named so: once renamed (a user declared as ``trace_id``), a second scrub
    would replace the value, so the first one does too.
    """
    keeping = [(key, code) for key, code in found.keyed.items() if code in _KEEPING]
    return frozenset(
        key
        for key, code in keeping
        if key not in _KEPT_KEYS and _field_code(encode(scrubber.preview(decode(key)))) != code
    )


def _replacements(found: Strings, scrubber: Scrubber) -> list[tuple[int, Replaced]]:
    """(string number, new contents and kinds) of every string that changes.

    Each distinct string is scrubbed once per code; the declared fields go first, so that
    their placeholders come first, then every other string in order of first appearance.
    """
    values, special = found.parts[1::2], found.special
    by_code: dict[tuple[int, bytes], Replaced | None] = {}
    for number, code in sorted(special.items()):
        if (code, values[number]) not in by_code:
            by_code[code, values[number]] = _scrub_string(scrubber, values[number], code)
    plain = {content: _scrub_string(scrubber, content, VALUE) for content in found.distinct}
    changed = {content: result for content, result in plain.items() if result}
    hits = positions(values, changed.keys())
    found_plain = [(number, changed[values[number]]) for number in hits if number not in special]
    found_special = [(number, by_code[code, values[number]]) for number, code in special.items()]
    return [(number, result) for number, result in found_plain + found_special if result]


def scrub_document(doc: Any) -> tuple[Any, ScrubReport]:
    """A scrubbed copy of a decoded JSON trace, and what was replaced (pure)."""
    try:
        data = json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except RecursionError:
        raise TraceError("JSON nested too deeply to be a trace") from None
    scrubbed, report = scrub_text(data)
    return json.loads(scrubbed.decode("utf-8", "surrogatepass")), report


def scrub_file(source: Path, target: Path) -> ScrubReport:
    """Write a scrubbed copy of the trace ``source`` to the new file ``target``."""
    source, target = Path(source), Path(target)
    check_paths(source, target)
    scrubbed, report = scrub_text(read_trace(source))
    check_trace(scrubbed, str(target))  # never write a file that is no longer a trace
    write_new(target, scrubbed)
    return report


def check_file(source: Path) -> ScrubReport:
    """What in the trace ``source`` still looks sensitive: what scrub would replace."""
    source = Path(source)
    check_paths(source, None)
    return scrub_text(read_trace(source))[1]


def _scrub_string(scrubber: Scrubber, content: bytes, code: int) -> Replaced | None:
    """A string's new JSON contents and the kinds replaced, or None when it is unchanged.

    A key the analyses read is never changed (as a value, no rule changes it either).
    """
    if content in _KEPT_KEYS:
        return None
    text = decode(content)
    scrubbed, kinds = scrubber.scrub(text, code)
    return None if scrubbed == text else (encode(scrubbed), kinds)


def _field_code(key: bytes) -> int:
    if len(key) > _KEY_LENGTH:
        return VALUE
    kind = field_kind(decode(key))
    return FIELD_CODES[kind] if kind else VALUE


def _carry(content: bytes) -> int:
    """What a list's string says of the next: a secret, a user or a host follows an option
    (``--token``, ``--user``, ``--master_addr``), a block goes on."""
    pem = _pem_carry(unescaped(content))
    if pem != VALUE:
        return pem
    if len(content) >= _OPTION_LENGTH:
        return VALUE
    option = decode(content).strip()
    if SECRET_OPTION.fullmatch(option):
        return SECRET
    kind = field_kind(option.lstrip("-")) if _OPTION.fullmatch(option) else None
    return FIELD_CODES[kind] if kind in ("user", "host") else VALUE


def _pem_carry(text: bytes) -> int:
    """``PEM`` after a PEM header without its END line (or the first word of a header split
    into words, ``-----BEGIN``), ``DASHES`` after ``----`` (an SSH2 header's first word)."""
    heads = [match.end() for match in PEM_HEADER.finditer(text)]
    if heads and not PEM_END.search(text, heads[-1]):
        return PEM
    word = _HEADER_WORD.fullmatch(text.strip()) if text[:1] == b"-" else None
    if word is None:
        return VALUE
    return PEM if word.group(1) else DASHES


def _report(counts: Counter[str], places: Counter[tuple[str, str | None]]) -> ScrubReport:
    ordered = sorted(places.items(), key=lambda item: (item[0][0], item[0][1] or ""))
    return ScrubReport(
        counts=dict(sorted(counts.items())),
        total=sum(counts.values()),
        places=tuple(Place(kind, field, count) for (kind, field), count in ordered),
    )
