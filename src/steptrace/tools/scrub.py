"""``scrub``: a copy of a trace with the names, paths and secrets that must not leave the team.

Contract: ``scrub_document(doc) -> (scrubbed, report)`` is pure: it returns a new
document and never mutates ``doc``. Every string value is scanned, at any depth; dict keys
(field names such as ``"Input Dims"``) and numbers (so every timing figure) are kept as
they are. Each secret becomes a placeholder ``<kind-N>``, numbered per kind in order of
first appearance, and the same secret always gets the same placeholder, so events that
shared a name still share one. ``scrub_file(source, target)`` reads a ``.json`` or
``.json.gz`` trace, writes the copy (gzip when ``target`` ends with ``.gz``) to a new file
only, and raises a one-line ``TraceError`` naming the file for any bad input.

What is redacted (the kind in the report, then the rule):

- ``email``: ``local@domain.tld`` (the local part with every character RFC 5322 allows).
- ``jwt``: ``eyJ….eyJ….signature``.
- ``token``: ``hf_``, ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``, ``github_pat_``,
  ``sk-``, ``glpat-``, ``xox?-`` followed by a long key; ``AKIA``/``ASIA`` + 16 characters.
  The lengths keep names such as the ``hf_transfer`` package out.
- ``user``: the name after ``/home/``, ``/Users/``, ``\\Users\\`` and ``torchinductor_``,
  and the values of user fields (``username``, ``user``, ``started_by``, ``LOGNAME``…);
  once known, a name of 3+ characters is replaced as a whole word everywhere.
- ``host``: the values of host fields (``host_name``, ``hostname``, ``HOSTNAME``…),
  replaced everywhere like user names, and fully qualified names with at least two dots
  ending in a TLD of ``_TLDS``: ``aten::add``, ``torch.nn.functional`` or ``model.py``
  never match, public host names in URLs (``www.ubuntu.com``) do.
- ``secret``: the values of fields named like a secret (``HF_TOKEN``, ``*_API_KEY``,
  ``*_PASSWORD``…); values of 8+ characters are replaced everywhere.
- ``hex-secret``: 32+ hex digits mixing digits and letters. Kineto's own ``trace_id`` and
  a hashed ``pg_name`` (random or derived ids that name nobody) are kept.
- ``base64-secret``: 40+ characters of ``A-Za-z0-9+/`` mixing upper case, lower case and
  digits, not touching ``_``: such a run is part of an identifier, and every run of a
  mangled C++ kernel name (``_ZN…``) is one (they are 40+ long and mixed, e.g.
  ``4conv6kernel23ImplicitGemmConvolutionINS1``).

Generic names (``root``, ``localhost``…) identify nobody and are kept. IP addresses are
not redacted: version strings such as ``12.8.4.1`` look the same.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from functools import lru_cache
from itertools import repeat
from pathlib import Path
from typing import Any

import msgspec

from steptrace.errors import TraceError
from steptrace.trace.source import decompress

__all__ = ["ScrubReport", "scrub_document", "scrub_file"]

_WORD_MIN = 3  # user and host names this long are replaced in free text too
_SECRET_WORD_MIN = 8  # secret field values this long are replaced in free text too
_GENERIC = frozenset(
    {"root", "user", "shared", "admin", "ubuntu", "nobody", "guest", "runner", "localhost"}
)
_USER_KEYS = frozenset(
    {"user", "username", "user_name", "tw_user", "started_by", "logname", "login"}
)
_HOST_KEYS = frozenset({"host", "hostname", "host_name", "nodename", "node_name"})
_ID_KEYS = frozenset({"trace_id", "pg_name"})
_TLDS = "com|net|org|io|ai|cloud|dev|internal|local|lan|corp|intra|intranet|localdomain"

_LOCAL = r"A-Za-z0-9!#$%&'*+/=?^_`{|}~.-"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_B64 = r"A-Za-z0-9+/"
_FORMATS = {
    "email": rf"(?<![{_LOCAL}])[{_LOCAL}]+@(?:{_LABEL}\.)+[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?",
    "jwt": r"(?<![\w-])eyJ[\w-]{5,}\.eyJ[\w-]{5,}\.[\w-]*",
    "token": r"(?<![A-Za-z0-9])(?:"
    r"(?:hf_|gh[pousr]_)[A-Za-z0-9]{30,}|github_pat_\w{22,}|sk-[\w-]{20,}|glpat-[\w-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9]))",
    "user": r"(?:(?<=/home/)|(?<=/Users/)|(?<=\\Users\\)|(?<=torchinductor_))"
    r"[\w-](?:[\w.-]*[\w-])?",
    "host": rf"(?<![\w.-])(?:{_LABEL}\.){{2,}}(?i:{_TLDS})(?![\w-]|\.[A-Za-z0-9])",
}
_SECRETS = {
    "hex-secret": r"(?<![A-Za-z0-9])(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*[0-9])"
    r"[0-9a-fA-F]{32,}(?![A-Za-z0-9])",
    "base64-secret": rf"(?<![{_B64}_])(?=[{_B64}]*[A-Z])(?=[{_B64}]*[a-z])(?=[{_B64}]*[0-9])"
    rf"[{_B64}]{{40,}}={{0,2}}(?![{_B64}=_])",
}
_PATH_USER = re.compile(_FORMATS["user"])
# Fixed vocabularies of the format (event phase, category): never personal, never changed.
_VOCABULARY_KEYS = frozenset({"ph", "cat"})
_SECRET_KEY = re.compile(
    r"(?:^|_)(?:token|secret|password|passwd|credentials?|(?:api|access|private|secret)_?key)$"
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[-.\s]+")
_HASHED_ID = re.compile(r"[0-9a-fA-F]{32,}(?:_\d+)?")
_FIRST_CHARACTER = re.compile(rb"\S")
_PLACEHOLDER = "<{kind}-{number}>"
_SCALARS = frozenset({int, float, bool, type(None)})  # kept as they are, checked first


class ScrubReport(msgspec.Struct, frozen=True):
    """What ``scrub`` replaced: the number of replacements per kind, and in all."""

    counts: dict[str, int]
    total: int


def scrub_document(doc: Any) -> tuple[Any, ScrubReport]:
    """A scrubbed copy of a decoded JSON document, and what was replaced (pure)."""
    scrubber = _Scrubber(_known_names(doc))
    scrubbed = scrubber.walk(doc, None)
    return scrubbed, scrubber.report()


def scrub_file(source: Path, target: Path) -> ScrubReport:
    """Write a scrubbed copy of the trace ``source`` to the new file ``target``."""
    source, target = Path(source), Path(target)
    _check_paths(source, target)
    try:
        scrubbed, report = scrub_document(_read(source))
        data = _encode(scrubbed, gz=target.name.endswith(".gz"))
    except RecursionError:
        raise TraceError(f"{source}: JSON nested too deeply to be a trace") from None
    _write(target, data)
    return report


@lru_cache(maxsize=4096)
def _key_kind(key: str) -> str | None:
    """The kind of a field's value from the field's name: user, host, secret, or None."""
    lowered = key.lower()
    if lowered in _USER_KEYS:
        return "user"
    if lowered in _HOST_KEYS:
        return "host"
    words = _CAMEL.sub("_", key).lower()
    return "secret" if _SECRET_KEY.search(words) else None


def _string_fields(node: dict[str, Any] | list[Any], found: list[tuple[str | None, str]]) -> None:
    """Append every string value, with the key it sits under (None in lists), in order."""
    items = node.items() if isinstance(node, dict) else zip(repeat(None), node)
    for key, child in items:
        kind = type(child)
        if kind is str or (kind not in _SCALARS and isinstance(child, str)):
            found.append((key, child))
        elif kind is dict or kind is list or isinstance(child, dict | list):
            _string_fields(child, found)


def _known_names(doc: Any) -> dict[str, str]:
    """User, host and secret values the document declares (value -> kind), in order."""
    fields: list[tuple[str | None, str]] = []
    if isinstance(doc, dict | list):
        _string_fields(doc, fields)
    known: dict[str, str] = {}
    seen: set[str] = set()
    for key, text in fields:
        kind = _key_kind(key) if isinstance(key, str) else None
        if kind and text.strip() and text.lower() not in _GENERIC:
            known.setdefault(text, kind)
        if text in seen:
            continue
        seen.add(text)
        for match in _PATH_USER.finditer(text):
            if match.group().lower() not in _GENERIC:
                known.setdefault(match.group(), "user")
    return known


def _pattern(known: dict[str, str]) -> re.Pattern[str]:
    """One alternation, tried in order at each position: formats, long runs, known names."""
    words = sorted(
        (name for name, kind in known.items() if len(name) >= _minimum_length(kind)),
        key=lambda name: (-len(name), name),
    )
    rules = {**_FORMATS, **_SECRETS}
    parts = [f"(?P<{_group(kind)}>{rule})" for kind, rule in rules.items()]
    if words:  # last: a long secret that starts with a known name is replaced whole
        names = "|".join(re.escape(word) for word in words)
        # a whole word: "_" joins words, so a user "max" never touches aten::max_pool2d
        parts.append(f"(?P<known>(?<![A-Za-z0-9_])(?:{names})(?![A-Za-z0-9_]))")
    return re.compile("|".join(parts))


def _minimum_length(kind: str) -> int:
    return _SECRET_WORD_MIN if kind == "secret" else _WORD_MIN


def _group(kind: str) -> str:
    return kind.replace("-", "_")


class _Scrubber:
    """Replaces secrets in strings, remembering each one's placeholder and counting."""

    def __init__(self, known: dict[str, str]) -> None:
        self.known = known
        self.pattern = _pattern(known)
        self.placeholders: dict[tuple[str, str], str] = {}
        self.numbers: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.cache: dict[str, tuple[str, tuple[str, ...]]] = {}

    def walk(self, node: Any, key: str | None) -> Any:
        """A copy of ``node`` with every string value scrubbed; keys and numbers kept."""
        kind = type(node)
        if kind in _SCALARS:
            return node
        if kind is str or isinstance(node, str):
            return self.field(key, node)
        scalars = _SCALARS  # numbers, most values, skip the call
        if kind is dict or isinstance(node, dict):
            return {
                name: child
                if type(child) in scalars or name in _VOCABULARY_KEYS
                else self.walk(child, str(name))
                for name, child in node.items()
            }
        if kind is list or isinstance(node, list):
            return [child if type(child) in scalars else self.walk(child, None) for child in node]
        return node

    def field(self, key: str | None, text: str) -> str:
        """A string value; a declared name too short for free text is replaced whole here."""
        if key in _ID_KEYS and _HASHED_ID.fullmatch(text):
            return text
        scrubbed = self.text(text)
        kind = self.known.get(text)
        if scrubbed == text and kind and key and _key_kind(key) == kind:
            self.counts[kind] += 1
            return self.placeholder(kind, text)
        return scrubbed

    def text(self, text: str) -> str:
        """``text`` with every match replaced (each distinct string is matched once)."""
        hit = self.cache.get(text)
        if hit is None:
            kinds: list[str] = []
            scrubbed = self.pattern.sub(lambda match: self.replace(match, kinds), text)
            hit = self.cache[text] = (scrubbed, tuple(kinds))
        if hit[1]:
            self.counts.update(hit[1])
        return hit[0]

    def replace(self, match: re.Match[str], kinds: list[str]) -> str:
        value = match.group()
        group = match.lastgroup or ""
        kind = self.known[value] if group == "known" else group.replace("_", "-")
        if kind == "user" and value.lower() in _GENERIC:
            return value
        kinds.append(kind)
        return self.placeholder(kind, value)

    def placeholder(self, kind: str, value: str) -> str:
        if (kind, value) not in self.placeholders:
            self.numbers[kind] += 1
            number = self.numbers[kind]
            self.placeholders[kind, value] = _PLACEHOLDER.format(kind=kind, number=number)
        return self.placeholders[kind, value]

    def report(self) -> ScrubReport:
        counts = dict(sorted(self.counts.items()))
        return ScrubReport(counts=counts, total=sum(counts.values()))


def _check_paths(source: Path, target: Path) -> None:
    if not source.exists():
        raise TraceError(f"{source}: no such file")
    if source.is_dir():
        raise TraceError(f"{source}: is a folder, not a trace file")
    if target.resolve() == source.resolve():
        raise TraceError(f"{target}: is the input itself; scrub writes a new file")
    if target.exists() or target.is_symlink():
        raise TraceError(f"{target}: exists already; scrub never overwrites a file")


def _read(source: Path) -> Any:
    """The whole decoded document, every key kept (stdlib ``json``)."""
    try:
        raw = source.read_bytes()
    except OSError as exc:
        raise TraceError(f"{source}: cannot read ({exc.strerror or exc})") from None
    data = decompress(raw, str(source))
    if not _FIRST_CHARACTER.search(data):
        raise TraceError(f"{source}: empty file")
    try:
        doc = json.loads(data)
    except ValueError as exc:
        message = " ".join(str(exc).split())[:200]
        raise TraceError(f"{source}: invalid or truncated JSON ({message})") from None
    if not _is_trace(doc):
        raise TraceError(f"{source}: not a torch.profiler trace (no traceEvents)")
    return doc


def _is_trace(doc: Any) -> bool:
    """A Chrome trace: an object with a ``traceEvents`` list, or a list of event objects."""
    if isinstance(doc, dict):
        return isinstance(doc.get("traceEvents"), list)
    return isinstance(doc, list) and all(isinstance(event, dict) for event in doc)


def _encode(doc: Any, *, gz: bool) -> bytes:
    """Compact JSON (ASCII, so any string survives); gzip with a fixed mtime when asked."""
    data = json.dumps(doc, separators=(",", ":")).encode()
    return gzip.compress(data, compresslevel=6, mtime=0) if gz else data


def _write(target: Path, data: bytes) -> None:
    """Create ``target`` (never replace a file); remove a partial file on failure."""
    try:
        handle = target.open("xb")
    except FileExistsError:
        raise TraceError(f"{target}: exists already; scrub never overwrites a file") from None
    except OSError as exc:
        raise TraceError(f"{target}: cannot write ({exc.strerror or exc})") from None
    try:
        with handle:
            handle.write(data)
    except OSError as exc:
        target.unlink(missing_ok=True)
        raise TraceError(f"{target}: cannot write ({exc.strerror or exc})") from None
