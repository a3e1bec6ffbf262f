"""The regular expressions of scrub: one alternation tried once per distinct string.

Each alternative is a named group; ``Scrubber`` decides what a match becomes from the
group's name (``shapes`` settles the ambiguous ones). Leftmost match wins; at one position
the earlier alternative wins, so placeholders are recognised first and a whole URL or
e-mail address goes before the names inside it.
"""

from __future__ import annotations

import re

KINDS = (
    "user",
    "host",
    "ip",
    "email",
    "token",
    "jwt",
    "secret",
    "pem",
    "hex-secret",
    "base64-secret",
)
PLACEHOLDER = re.compile(rf"<({'|'.join(KINDS)})-([1-9]\d*)>")
_PLACEHOLDER = PLACEHOLDER.pattern.replace("(", "(?:")

_B64 = r"A-Za-z0-9+/"
_LOCAL = r"\w.!#$%&*+?^~-"  # an e-mail's local part (Unicode letters too); no / = ' { } |
_LABEL = r"[^\W_](?:[\w-]{0,61}[^\W_])?"  # a domain label, internationalised
_SECRET_WORD = (
    r"(?i:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|access[_-]?key"
    r"|private[_-]?key|secret[_-]?key|credentials?|authorization|cookie)"
)
_NAME_CHARS = r"[\w$-](?:[\w.$-]*[\w$-])?"  # a user name in a path

_PEM_HEADER = r"-{4,5} ?BEGIN (?P<pem_type>[A-Z0-9 ]{0,39}[A-Z0-9]) ?-{4,5}"

RULES: dict[str, str] = {
    "keep": _PLACEHOLDER,
    # PEM (-----BEGIN X-----) and SSH2 (---- BEGIN X ----) blocks, to their END or the end
    "pem": _PEM_HEADER + r"(?s:.*?-{4,5} ?END (?P=pem_type) ?-{4,5}|.*)",
    "url": r"(?<![\w+.-])[A-Za-z][A-Za-z0-9+.-]{1,15}://"
    rf"(?:(?P<url_user>{_PLACEHOLDER}|[^\s/?#@:<>\"'\[\]]*)"
    rf"(?::(?P<url_password>{_PLACEHOLDER}|[^\s/?#@<>\"']*))?@)?"
    rf"(?P<url_host>{_PLACEHOLDER}|\[[0-9A-Fa-f:.]+(?:%[\w.-]+)?\]|[^\s/?#@:<>\"'\[\]\\,;()|]+)?",
    "email": rf"(?<![{_LOCAL}])[{_LOCAL}]+(?:@|%40)(?:{_LABEL}\.)+"
    r"(?P<email_tld>xn--[A-Za-z0-9-]{2,59}|[^\W\d_]{2,63})(?![\w-]|\.[^\W_])",
    "jwt": r"(?<![\w-])eyJ[\w-]{5,}\.[\w-]{5,}\.[\w-]*",
    "token": r"(?<![A-Za-z0-9])(?:"
    r"(?:hf_|api_org_|gh[pousr]_)[A-Za-z0-9]{30,}|github_pat_\w{22,}"
    r"|sk-(?:proj-|svcacct-|admin-|ant-[a-z]+\d*-)?[\w-]{20,}|glpat-[\w-]{20,}"
    r"|xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}"
    r"|(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{20,}"
    r"|npm_[A-Za-z0-9]{36}|AIza[\w-]{35}|ya29\.[\w-]{20,}"
    r"|(?:AKIA|ASIA|AIDA|AROA|AIPA|ANPA|ANVA|AGPA|ABIA|ACCA)[0-9A-Z]{16}"
    r"|T[A-Z0-9]{8,}/B[A-Z0-9]{8,}/[A-Za-z0-9]{20,}|SG\.[\w-]{22}\.[\w-]{43})(?![A-Za-z0-9])",
    "bearer": r"(?P<bearer_word>(?<![\w-])(?i:bearer)[ \t]+)(?P<bearer_value>[\w.~+/=-]+)",
    "assign": rf"(?<![\w.-])(?P<assign_name>-{{0,2}}[\w.-]*?{_SECRET_WORD}[\w.-]*)"
    r"(?P<assign_separator>[\"']?[ \t]*(?::|=(?!=))[ \t]*|[ \t]+)"
    r"(?:(?P<assign_quote>[\"'])(?P<assign_quoted>(?:(?!(?P=assign_quote)).)*)(?P=assign_quote)"
    rf"|(?P<assign_value>(?:(?i:basic|bearer|token|digest)[ \t]+)?"
    rf"(?:{_PLACEHOLDER}|[^\s\"',;)\]}}<>]+)))",
    # a signed URL's signature or key, percent-encoded or not (Azure SAS ``sig=``, S3, GCS)
    "query": r"(?<=[?&;])(?P<query_name>(?i:sig|signature|x-amz-signature|x-goog-signature"
    r"|x-amz-security-token|x-amz-credential|access_token|refresh_token|client_secret"
    r"|key|api_key|apikey|token|password|secret))=(?P<query_value>[^&#\s\"'<>]+)",
    "home": r"(?P<home_root>[\\/](?i:home|homes|users|usr[\\/]home)[\\/]+)"
    rf"(?P<home_user>{_NAME_CHARS})",
    "cluster": r"(?<![^\s\"'=:(,;\[])"
    r"(?P<cluster_root>[\\/](?i:scratch|work|gpfs|lustre|fsx|checkpoint|pscratch)[\\/]+)"
    r"(?P<cluster_folders>[\w.@$+-]+(?:[\\/]+[\w.@$+-]+){0,4})",
    "tilde": r"(?<![\w~:\\/.-])~(?P<tilde_user>[A-Za-z_][\w.-]*)(?=[\\/\s\"',;)]|$)",
    "inductor": rf"(?<=torchinductor_)(?P<inductor_user>{_NAME_CHARS})",
    # a host after two backslashes (a UNC path) or two slashes (``shapes.is_path_host``)
    "unc": r"(?<![\w:/\\])(?P<unc_root>\\\\|//)"
    r"(?P<unc_host>[A-Za-z0-9](?:[\w-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[\w-]*[A-Za-z0-9])?)*)"
    r"(?=[\\/]|$)",
    "ip6_framed": r"\[(?P<ip6_framed_address>[0-9A-Fa-f:.]{2,}?)(?:%[\w.-]+)?\](?::\d{1,5})?",
    "ip4": r"(?<![\w.-])(?P<ip4_address>(?:\d{1,3}\.){3}\d{1,3})(?P<ip4_port>:\d{1,5}(?!\d))?"
    r"(?![\w-]|\.\d)",
    "ip6": r"(?<![\w:.])(?P<ip6_address>[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}"
    r"(?:\.\d{1,3}){0,3})(?P<ip6_zone>%[\w.-]+)?(?![\w:.])",
    "host": r"(?<![\w.@%/-])"
    r"(?P<host_name>(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]{0,62})"
    r"(?![\w-]|\.[A-Za-z0-9])",
    "hex": r"(?<![A-Za-z0-9])(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*[0-9])"
    r"[0-9a-fA-F]{32,}(?![A-Za-z0-9])",
    # not touching "_": every run of a mangled C++ kernel name (_ZN...) is part of one
    "base64": rf"(?<![{_B64}_])(?=[{_B64}]*[A-Z])(?=[{_B64}]*[a-z])(?=[{_B64}]*[0-9])"
    rf"[{_B64}]{{40,}}={{0,2}}(?![{_B64}=_])",
}
# What a match of each rule is, when the rule itself says it.
RULE_KINDS = {
    "email": "email",
    "jwt": "jwt",
    "token": "token",
    "pem": "pem",
    "hex": "hex-secret",
    "base64": "base64-secret",
    "home": "user",
    "tilde": "user",
    "inductor": "user",
}
# Names declared in text (``username: alice``, ``HOSTNAME=gn17``, ``--password hunter2``).
DECLARED = re.compile(
    r"(?<![\w.-])(?P<name>-{0,2}[\w.-]*?"
    r"(?i:user|login|logname|owner|author|_by|host|node|addr|address|ip|pass|pwd|secret|token"
    r"|key|credential|authorization|cookie)[\w.-]*)[\"']?"
    r"(?P<separator>[ \t]*(?::|=(?!=))[ \t]*|[ \t]+)[\"']?"
    r"(?P<value>[^\s\"',;)\]}<>=][^\s\"',;)\]}<>]*)"
)
SECRET_OPTION = re.compile(
    rf"-{{1,2}}[\w.-]*?{_SECRET_WORD}[\w-]*|(?i:bearer|authorization(?::[ \t]*bearer)?)"
)
# A PEM block is cut out of a string before any other rule is tried: a rule matching from
# before its header (``SSH_PRIVATE_KEY=``, ``--private-key=``, ``Bearer``) would take the
# header's dashes for its value, and the block's lines would be left to the other rules.
PEM_BLOCK = re.compile(RULES["pem"])
PEM_HEADER = re.compile(_PEM_HEADER.replace("?P<pem_type>", "").encode())
PEM_END = re.compile(rb"-{4,5} ?END ")
HASHED_ID = re.compile(r"[0-9a-fA-F]{32,}(?:_\d+)?")


def combined(
    known_names: list[str], known_secrets: list[str], *, rules: bool = True
) -> re.Pattern[str]:
    """Every rule (only placeholders without ``rules``), then the names and secrets the
    document declares, as one alternation."""
    chosen = RULES if rules else {"keep": RULES["keep"]}
    parts = [f"(?P<{name}>{rule})" for name, rule in chosen.items()]
    long_names = [name for name in known_names if len(name) > 3]
    short_names = [name for name in known_names if len(name) <= 3]
    if long_names:  # "_" separates words here: alice_runs; never inside a letter run
        parts.append(rf"(?P<known_long>(?<![^\W_])(?i:{_alternatives(long_names)})(?![^\W_]))")
    if short_names:  # a whole word: a user "max" never touches aten::max_pool2d
        parts.append(rf"(?P<known_short>(?<!\w)(?i:{_alternatives(short_names)})(?!\w))")
    if known_secrets:
        parts.append(rf"(?P<known_secret>(?<!\w)(?:{_alternatives(known_secrets)})(?!\w))")
    return re.compile("|".join(parts))


def _alternatives(words: list[str]) -> str:
    """Longest first, so that a name is never cut by a shorter one it starts with."""
    return "|".join(re.escape(word) for word in sorted(set(words), key=lambda w: (-len(w), w)))
