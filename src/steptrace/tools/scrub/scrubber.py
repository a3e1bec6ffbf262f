"""The second pass: each string with its secrets replaced by placeholders.

A placeholder is ``<kind-N>``; the same secret (user and host names in any capitalisation)
always gets the same one, numbered per kind in the order the strings are scrubbed (the
declared fields, then every string in order of first appearance), after the highest
number the trace holds already. Placeholders already in the text are kept as
they are, so that scrubbing twice changes nothing and never merges two secrets into one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from steptrace.tools.scrub import shapes
from steptrace.tools.scrub.field_kinds import GENERIC, field_kind
from steptrace.tools.scrub.learn import Known
from steptrace.tools.scrub.patterns import HASHED_ID, PEM_BLOCK, PLACEHOLDER, RULE_KINDS, combined
from steptrace.tools.scrub.text import HOST, ID, PEM, SECRET, USER, VALUE, VERSION

_FOLDERS = re.compile(r"([\\/]+)")
_FIELD_KINDS = {USER: "user", HOST: "host", SECRET: "secret"}
_FOLDED = frozenset({"user", "host", "email"})  # kinds whose capitalisation says nothing
_LOOK_BEHIND = 24
_ROUNDS = 8  # each round replaces more with placeholders: two or three suffice
_AUTH_SCHEME = re.compile(r"(?i:basic|bearer|token|digest)[ \t]+")
_SECRET_RULES = frozenset({"token", "jwt", "hex", "base64", "pem", "known_secret"})
_IPV4 = re.compile(r"(?:\d{1,3}\.){3}\d{1,3}")
_NOT_SECRETS = GENERIC | {"basic", "bearer", "token", "digest"}


class Scrubber:
    """Replaces secrets in one string at a time, remembering every placeholder given."""

    def __init__(self, known: Known) -> None:
        self.names = known.names
        self.pattern = combined(list(known.names), sorted(known.secrets))
        self.names_only = combined(list(known.names), sorted(known.secrets), rules=False)
        self.placeholders: dict[tuple[str, str], str] = {}
        self.numbers: Counter[str] = Counter(known.numbers)
        self.code = VALUE
        self.kinds: list[str] = []
        self.rules: dict[str, Callable[[re.Match[str]], str]] = {
            "keep": re.Match.group,
            "url": self._url,
            "bearer": self._bearer,
            "assign": self._assign,
            "cluster": self._cluster,
            "query": self._query,
            "unc": self._unc,
            "ip6_framed": self._ip6_framed,
            "ip4": self._ip4,
            "ip6": self._ip6,
            "host": self._host,
            "known_long": self._known_name,
            "known_short": self._known_name,
            "known_secret": self._known_secret,
        }

    def scrub(self, text: str, code: int) -> tuple[str, tuple[str, ...]]:
        """``text`` with its secrets replaced, and the kinds replaced, in order.

        ``code``: what governs the string (``text``'s codes): a user, host or secret field's
        value is replaced whole when no rule matched in it.
        """
        if code == ID and HASHED_ID.fullmatch(text):
            return text, ()
        self.code, self.kinds = code, []
        if code == PEM and not PLACEHOLDER.fullmatch(text):
            return self.placeholder("pem", text), tuple(self.kinds)
        scrubbed = self.settled(text)
        kind = _FIELD_KINDS.get(code)
        named = text.strip().lower() not in GENERIC
        if scrubbed == text and kind and named and not PLACEHOLDER.search(text):
            scrubbed = self.placeholder(kind, text.strip())
        return scrubbed, tuple(self.kinds)

    def number(self, value: str) -> str:
        """The placeholder of a number under a secret field (the string that replaces it)."""
        kinds, self.kinds = self.kinds, []
        try:
            return self.placeholder("secret", value)
        finally:
            self.kinds = kinds

    def preview(self, text: str) -> str:
        """``text`` scrubbed as a plain string, giving out no placeholder and counting none."""
        saved = dict(self.placeholders), self.numbers.copy(), self.code, self.kinds
        try:
            return self.scrub(text, VALUE)[0]
        finally:
            self.placeholders, self.numbers, self.code, self.kinds = saved

    def settled(self, text: str) -> str:
        """``text`` scrubbed until scrubbing it again changes nothing.

        A placeholder changes what its neighbours look like: the base64 run after
        ``/home/alice/`` is no match (it touches a name), after ``/home/<user-1>/`` it is
        one; a second scrub would see it so, the first one does too.
        """
        scrubbed = self.sub(text)
        for _ in range(_ROUNDS):
            if scrubbed == text:
                break
            text, scrubbed = scrubbed, self.sub(scrubbed)
        return scrubbed

    def sub(self, text: str) -> str:
        """``text`` scrubbed once: each PEM block first, whatever stands before its header
        (``SSH_PRIVATE_KEY=``, ``--private-key=``), then every rule between the blocks."""
        if "BEGIN" not in text:
            return self.pattern.sub(self.replace, text)
        pieces, position = [], 0
        for block in PEM_BLOCK.finditer(text):
            pieces += [self._sub_span(text, position, block.start()), self.whole(block, "pem")]
            position = block.end()
        pieces.append(self._sub_span(text, position, len(text)))
        return "".join(pieces)

    def _sub_span(self, text: str, start: int, end: int) -> str:
        """``text[start:end]`` scrubbed once, the rules seeing the text before ``start``."""
        pieces, position = [], start
        for match in self.pattern.finditer(text, start, end):
            pieces += [text[position : match.start()], self.replace(match)]
            position = match.end()
        pieces.append(text[position:end])
        return "".join(pieces)

    def placeholder(self, kind: str, value: str) -> str:
        """The placeholder of ``value``, a secret of ``kind``; counts one replacement."""
        key = (kind, value.casefold() if kind in _FOLDED else value)
        found = self.placeholders.get(key)
        if found is None:
            self.numbers[kind] += 1
            found = self.placeholders[key] = f"<{kind}-{self.numbers[kind]}>"
        self.kinds.append(kind)
        return found

    def replace(self, match: re.Match[str]) -> str:
        rule = match.lastgroup or "keep"
        if rule in RULE_KINDS:
            return self.whole(match, RULE_KINDS[rule])
        return self.rules[rule](match)

    def whole(self, match: re.Match[str], kind: str) -> str:
        value = match.group()
        if kind == "email" and shapes.is_file_extension(match.group("email_tld")):
            return self.names_only.sub(self.replace, value)  # a file: model@v2.py
        if kind == "user":
            return self._user_in_path(match)
        return self.placeholder(kind, value)

    def _user_in_path(self, match: re.Match[str]) -> str:
        group = next(g for g in ("home_user", "tilde_user", "inductor_user") if match.group(g))
        user = match.group(group)
        if user.lower() in GENERIC:
            return match.group()
        return _with_groups(match, {group: self.placeholder("user", user)})

    def _url(self, match: re.Match[str]) -> str:
        replaced: dict[str, str] = {}
        user, password, host = match.group("url_user", "url_password", "url_host")
        if user and not PLACEHOLDER.fullmatch(user) and user.lower() not in GENERIC:
            replaced["url_user"] = self.placeholder("user", user)
        if password and not PLACEHOLDER.fullmatch(password):
            replaced["url_password"] = self.secret(password)
        if host and not PLACEHOLDER.fullmatch(host) and host.lower() not in GENERIC:
            replaced["url_host"] = self.host_or_address(host)
        return _with_groups(match, replaced)

    def host_or_address(self, host: str) -> str:
        """A URL's host: an IP address, or a host name whatever its shape."""
        bare = host.strip("[]").partition("%")[0]
        if _IPV4.fullmatch(bare) or ":" in bare:
            return self.placeholder("ip", bare)
        return self.placeholder("host", host)

    def secret(self, value: str, kind: str = "secret") -> str:
        """A value given to a secret, whole: its own kind when a rule matches all of it (a
        JWT, a known token), else ``kind``."""
        whole = self.pattern.fullmatch(value)
        if whole and whole.lastgroup in _SECRET_RULES:
            replaced = self.replace(whole)
            if replaced != value:
                return replaced
        return self.placeholder(kind, value)

    def _bearer(self, match: re.Match[str]) -> str:
        token = self.secret(match.group("bearer_value"), "token")
        return _with_groups(match, {"bearer_value": token})

    def _assign(self, match: re.Match[str]) -> str:
        name, separator = match.group("assign_name", "assign_separator")
        value_group = "assign_quoted" if match.group("assign_quote") else "assign_value"
        value = match.group(value_group)
        is_option = name.startswith("-") or separator.strip()
        if not is_option or field_kind(name.strip("-")) != "secret":
            start = match.end("assign_name")
            text = match.string
            return self.names_only.sub(self.replace, name) + self.sub(text[start : match.end()])
        scheme = _AUTH_SCHEME.match(value)
        prefix, body = (value[: scheme.end()], value[scheme.end() :]) if scheme else ("", value)
        if PLACEHOLDER.fullmatch(body.strip()) or (not scheme and body.lower() in _NOT_SECRETS):
            return match.group()  # Authorization: Bearer (the token follows elsewhere)
        kind = "token" if scheme else "secret"  # Authorization: Bearer ...
        # the name keeps no declared name or secret: a Docker auth whose base64 held "pwd"
        # read as the name of a "pwd=..." assignment, and was kept whole
        text, (start, end) = match.string, match.span(value_group)
        head = self.names_only.sub(self.replace, text[match.start() : start])
        return head + prefix + self.secret(body, kind) + text[end : match.end()]

    def _cluster(self, match: re.Match[str]) -> str:
        root, folders_text = match.group("cluster_root", "cluster_folders")
        pieces = _FOLDERS.split(folders_text)
        place = shapes.cluster_user(pieces[0::2])
        if place is None or pieces[2 * place].lower() in GENERIC:
            return root + self.sub(folders_text)
        before = "".join(pieces[: 2 * place])
        after = "".join(pieces[2 * place + 1 :])
        user = self.placeholder("user", pieces[2 * place])
        return root + self.sub(before) + user + self.sub(after)

    def _query(self, match: re.Match[str]) -> str:
        value = match.group("query_value")
        if PLACEHOLDER.fullmatch(value):
            return match.group()
        return _with_groups(match, {"query_value": self.secret(value)})

    def _unc(self, match: re.Match[str]) -> str:
        root, host = match.group("unc_root", "unc_host")
        if PLACEHOLDER.fullmatch(host) or host.lower() in GENERIC:
            return match.group()
        if not shapes.is_path_host(host, root):
            return root + self.sub(host)
        return root + self.host_or_address(host)

    def _ip6_framed(self, match: re.Match[str]) -> str:
        address = match.group("ip6_framed_address")
        if _IPV4.fullmatch(address):  # ops@[10.0.0.9]: an address, whatever its range
            return _with_groups(match, {"ip6_framed_address": self.placeholder("ip", address)})
        groups = [group for group in address.split(":") if group]
        if len(groups) < 2 or not shapes.is_ipv6_address(address, "", framed=True, host_field=True):
            return match.group()
        return _with_groups(match, {"ip6_framed_address": self.placeholder("ip", address)})

    def _ip4(self, match: re.Match[str]) -> str:
        address = match.group("ip4_address")
        before = match.string[max(0, match.start() - _LOOK_BEHIND) : match.start()]
        port = bool(match.group("ip4_port"))
        host_field = self.code == HOST
        if self.code == VERSION and not port:
            return match.group()
        if not shapes.is_ipv4_address(address, before, port=port, host_field=host_field):
            return match.group()
        return _with_groups(match, {"ip4_address": self.placeholder("ip", address)})

    def _ip6(self, match: re.Match[str]) -> str:
        address = match.group("ip6_address")
        before = match.string[max(0, match.start() - _LOOK_BEHIND) : match.start()]
        framed = bool(match.group("ip6_zone"))
        if self.code == VERSION or not shapes.is_ipv6_address(
            address, before, framed=framed, host_field=self.code == HOST
        ):
            return match.group()
        return _with_groups(match, {"ip6_address": self.placeholder("ip", address)})

    def _host(self, match: re.Match[str]) -> str:
        name = match.group("host_name")
        if shapes.is_host(name) or (self.code == HOST and name.casefold() in self.names):
            return self.placeholder("host", name)
        return self.names_only.sub(self.replace, name)

    def _known_name(self, match: re.Match[str]) -> str:
        value = match.group()
        return self.placeholder(self.names[value.casefold()], value)

    def _known_secret(self, match: re.Match[str]) -> str:
        return self.placeholder("secret", match.group())


def _with_groups(match: re.Match[str], replaced: dict[str, str]) -> str:
    """The match's text with the given groups' text replaced."""
    text, position, pieces = match.string, match.start(), []
    for group, new in sorted(replaced.items(), key=lambda item: match.start(item[0])):
        start, end = match.span(group)
        pieces += [text[position:start], new]
        position = end
    pieces.append(text[position : match.end()])
    return "".join(pieces)
