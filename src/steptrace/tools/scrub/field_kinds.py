"""What a field's name says about its value, and the words of the trace format scrub keeps.

``field_kind(name)``: ``"user"``, ``"host"``, ``"secret"``, ``"id"``, ``"version"`` or
``None``, from the words of the name (``HF_TOKEN``, ``apiKey``,
``x-api-key``, ``PGPASSWORD`` and ``--password`` are all split the same way). A
placeholder in a name (a key scrub replaced: ``<secret-1>``) is no word of it: read as
words it would make a secret field of a key that was none, and a second scrub would
replace its value.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from steptrace.tools.scrub.patterns import PLACEHOLDER
from steptrace.trace.decode import Event, FlowEvent, Instant, RawDocument
from steptrace.trace.fields import FIELDS
from steptrace.trace.kinds import CATEGORY_KINDS, IGNORED_CATEGORIES

FieldKind = Literal["user", "host", "secret", "id", "version"]

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_USER_NAMES = frozenset({"user", "username", "logname", "login", "owner", "author"})
_USER_PAIRS = frozenset({("started", "by"), ("created", "by"), ("submitted", "by")})
_HOST_NAMES = frozenset({"host", "hostname", "nodename", "nodelist", "fqdn"})
_HOST_PAIRS = frozenset(
    {
        ("host", "name"),
        ("node", "name"),
        ("master", "addr"),
        ("master", "address"),
        ("ip", "address"),
        ("ip", "addr"),
    }
)
# a word ending so: PGPASSWORD, csrftoken, apisecret
_SECRET_ENDINGS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "credentials")
_SECRET_WORDS = frozenset({"pwd", "credential", "authorization", "cookie", "auth"})  # Docker's auth
# ``*_KEY`` is a secret unless the word before says otherwise (a sort key, a dispatch key)
_PLAIN_KEYS = frozenset(
    {
        "dispatch",
        "sort",
        "cache",
        "primary",
        "foreign",
        "partition",
        "group",
        "dict",
        "map",
        "lookup",
        "index",
        "hash",
        "public",
        "row",
        "column",
        "id",
        "metric",
        "layout",
    }
)
# words after a secret word that make the field something else (HF_TOKEN_PATH, max_token_len)
_NOT_A_VALUE = frozenset(
    {
        "path",
        "file",
        "dir",
        "len",
        "length",
        "count",
        "num",
        "size",
        "limit",
        "type",
        "ids",
        "index",
        "position",
        "url",
        "env",
        "var",
        "name",
        "names",
        "kind",
        "required",
        "expiry",
        "ttl",
        "timeout",
        "max",
        "min",
    }
)
_ID_FIELDS = frozenset({"trace_id", "pg_name"})
# The keys the analyses read, and the vocabularies of the format (phases, categories).
FORMAT_KEYS = frozenset(
    {
        *RawDocument.__struct_encode_fields__,
        *Event.__struct_encode_fields__,
        *Instant.__struct_encode_fields__,
        *FlowEvent.__struct_encode_fields__,
        *(f.key for f in FIELDS),
        "ph",
        "traceEvents",
        "External id",
        "id",
        "s",
        "bp",
        "computeMajor",
        "computeMinor",
        "totalGlobalMem",
        "rank",
        "world_size",
        "backend",
        "pg_config",
        "Collective name",
        "Process Group Name",
        "Seq",
        "In msg nelems",
        "Group size",
        "dtype",
        "schema",
        "scenario",
        "capture",
    }
)
FORMAT_WORDS = frozenset(
    {
        *(word.lower() for word in FORMAT_KEYS),
        *CATEGORY_KINDS,
        *IGNORED_CATEGORIES,
        "ac2g",
        "fwdbwd",
        "cpu_instant_event",
        "gpu_user_annotation",
        "python",
        "cuda",
        "cpu",
        "gpu",
        "nccl",
        "gloo",
    }
)
# Values that name nobody and hide nothing: kept, and never learned as a name.
GENERIC = frozenset(
    {
        "",
        "root",
        "user",
        "users",
        "shared",
        "admin",
        "ubuntu",
        "nobody",
        "guest",
        "runner",
        "localhost",
        "git",
        "none",
        "null",
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "unknown",
        "default",
        "redacted",
        "***",
        "xxx",
        "n/a",
        "na",
    }
)


@lru_cache(maxsize=4096)
def field_kind(name: str) -> FieldKind | None:
    """The kind of value a field (or a command-line option) of this name holds."""
    if name in _ID_FIELDS:
        return "id"
    if "<" in name:
        name = PLACEHOLDER.sub(" ", name)
    words = [word.lower() for word in _WORDS.findall(name)]
    if not words:
        return None
    if _is_secret(words):
        return "secret"
    last = words[-1]
    pair = (words[-2], last) if len(words) > 1 else None
    if last in _USER_NAMES or pair in _USER_PAIRS:
        return "user"
    if last in _HOST_NAMES or pair in _HOST_PAIRS or last == "ip":
        return "host"
    if last in {"version", "ver", "release"}:
        return "version"
    return None


def _is_secret(words: list[str]) -> bool:
    for place, word in enumerate(words):
        secret = word.endswith(_SECRET_ENDINGS) or word in _SECRET_WORDS
        after = words[place + 1 :]
        if secret and not (set(after) & _NOT_A_VALUE):
            return True
    if words[-2:] == ["key", "id"]:  # private_key_id: a key's id names it
        words = words[:-1]
    last = words[-1]
    return last == "key" and len(words) > 1 and words[-2] not in _PLAIN_KEYS


def learnable(text: str) -> bool:
    """Whether a value is worth learning: not generic, not a word of the format."""
    lowered = text.strip().lower()
    return lowered not in GENERIC and lowered not in FORMAT_WORDS
