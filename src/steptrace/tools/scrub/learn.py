"""The first pass: the names and secrets a trace declares, to be replaced everywhere, and the
placeholders it holds already (so that new ones are numbered after them).

Declared: the values of user, host and secret fields (``username``, ``HOSTNAME``,
``HF_TOKEN``...) and of their options on command lines (``--password hunter2``,
``user=alice``), the users of paths (``/home/alice``, ``/scratch/alice``, ``~alice``,
``torchinductor_alice``), the passwords of URLs, and the string after a secret option in a
list (``["--token", "..."]``). A host name also declares its first label (``gpu-node-17`` of
``gpu-node-17.corp.example.com``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from steptrace.tools.scrub.field_kinds import field_kind, learnable
from steptrace.tools.scrub.patterns import DECLARED, PEM_BLOCK, PLACEHOLDER, RULES
from steptrace.tools.scrub.shapes import cluster_user, common_folder, is_path_host
from steptrace.tools.scrub.text import HOST, SECRET, USER, Strings, decode

_NAME_MIN = 3  # user and host names this long are replaced everywhere
_SECRET_MIN = 2  # secrets this long (6 for a number) are replaced everywhere
_NUMBER_MIN = 6
_FOLDERS = re.compile(r"[\\/]+")
_VERSION = re.compile(r"v?\d+(?:\.\d+)+")
_LEARNED_RULES = ("keep", "url", "home", "cluster", "tilde", "inductor", "unc")
_LEARN = re.compile(
    "|".join(f"(?P<{name}>{RULES[name]})" for name in _LEARNED_RULES)
    + f"|(?P<declared>{DECLARED.pattern})"
)
_AUTH_SCHEMES = frozenset({"basic", "bearer", "token", "digest"})
_CODE_KINDS = {USER: "user", HOST: "host", SECRET: "secret"}


class Known(NamedTuple):
    """What the first pass found."""

    names: dict[str, str]  # casefolded user or host name -> its kind
    secrets: frozenset[str]  # exact values
    numbers: dict[str, int]  # kind -> the highest placeholder number in the trace


def learn(found: Strings) -> Known:
    """The declared names and secrets, and the placeholders, of a trace's strings."""
    names: dict[str, str] = {}
    secrets: set[str] = set()
    numbers: dict[str, int] = {}
    for number, code in sorted(found.special.items()):
        if code in _CODE_KINDS:
            _add(_CODE_KINDS[code], decode(found.parts[2 * number + 1]), names, secrets)
    for secret_number in found.numbers:
        _add("secret", secret_number.text(found.parts), names, secrets)
    for content in found.distinct:
        for kind, value in _declared(decode(content), numbers):
            _add(kind, value, names, secrets)
    return Known(names, frozenset(secrets), numbers)


def _declared(text: str, numbers: dict[str, int]) -> list[tuple[str, str]]:
    """(kind, value) of every name ``text`` declares; placeholders update ``numbers``.

    A PEM block declares nothing: cut out first, ``private_key: -----BEGIN`` (``----`` for
    SSH2) teaches no secret that would be replaced everywhere.
    """
    if "BEGIN" in text:
        text = PEM_BLOCK.sub("<>", text)
    found: list[tuple[str, str]] = []
    for match in _LEARN.finditer(text):
        group = match.lastgroup
        if group == "keep":
            kind, number = PLACEHOLDER.fullmatch(match.group()).groups()  # type: ignore[union-attr]
            numbers[kind] = max(numbers.get(kind, 0), int(number))
        elif group == "url" and match.group("url_password"):
            found.append(("secret", match.group("url_password")))
        elif group in ("home", "tilde", "inductor"):
            found.append(("user", match.group(f"{group}_user")))
        elif group == "cluster":
            folders = _FOLDERS.split(match.group("cluster_folders"))
            place = cluster_user(folders)
            if place is not None and not common_folder(folders[place]):
                found.append(("user", folders[place]))
        elif group == "unc" and is_path_host(host := match.group("unc_host"), match["unc_root"]):
            found.append(("host", host))
        elif group == "declared":
            found.extend(_declaration(match))
    return found


def _declaration(match: re.Match[str]) -> list[tuple[str, str]]:
    name, separator, value = match.group("name", "separator", "value")
    if not separator.strip() and not name.startswith("-"):
        return []  # "name value" is an option only
    kind = field_kind(name.lstrip("-"))
    if value.lower() in _AUTH_SCHEMES:
        return []  # Authorization: Bearer <token>: the token is a token, not learned here
    if kind == "secret" or (kind in ("user", "host") and value[:1].isalpha()):
        return [(kind, value)]
    return []


def _add(kind: str, value: str, names: dict[str, str], secrets: set[str]) -> None:
    value = value.strip()
    if not learnable(value) or PLACEHOLDER.search(value):
        return
    if kind == "secret":
        if _VERSION.fullmatch(value):
            return  # a version (tiktoken==0.9.0), not a secret
        if len(value) >= (_NUMBER_MIN if value.isdigit() else _SECRET_MIN):
            secrets.add(value)
        return
    if len(value) >= _NAME_MIN:
        names.setdefault(value.casefold(), kind)
    label = value.partition(".")[0]  # a host's first label: gpu-node-17 of its FQDN
    if kind == "host" and label != value and len(label) >= _NAME_MIN and learnable(label):
        names.setdefault(label.casefold(), kind)
