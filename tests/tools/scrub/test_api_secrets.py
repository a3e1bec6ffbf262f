"""Generated secrets of every class scrub removes, and where they are planted in a trace.

Every secret is assembled at run time from pieces and random characters (hypothesis
strategies, or a seeded ``random.Random``): no token-shaped literal sits in the source.
The strategies are used by the other ``test_scrub_*`` modules; the tests here check that
the builders make what they claim (else a test could pass on a malformed secret).
"""

from __future__ import annotations

import base64
import copy
import json
import random
import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from steptrace.scenario import Scenario, record_payload
from steptrace.tools.scrub.field_kinds import FORMAT_WORDS, GENERIC

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
# words a generated user name must not be: scrub keeps them on purpose
_NOT_NAMES = (
    GENERIC
    | FORMAT_WORDS
    | {"home", "users", "scratch", "work", "gpfs", "data", "main", "proj", "test", "runs"}
)


@dataclass(frozen=True)
class Secret:
    """A secret of one class, as planted: ``text`` goes into a field; ``gone`` must not be
    left anywhere (``words``: nowhere as a whole word, in any capitalisation); ``fields``
    are declared beside it (``username``, ``MY_API_KEY``...)."""

    kind: str
    text: str
    gone: tuple[str, ...]
    words: tuple[str, ...] = ()
    fields: dict[str, Any] = field(default_factory=dict)
    also: tuple[str, ...] = ()  # other classes it may be reported as (a hex Bearer token)

    def reported(self, counts: dict[str, int]) -> bool:
        """Whether a report counts this secret's class."""
        return bool({self.kind, *self.also} & set(counts))


def _chars(alphabet: str, low: int, high: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=low, max_size=high if high is not None else low)


def _prefixed(prefix: str, alphabet: str, low: int, high: int | None = None) -> Any:
    return _chars(alphabet, low, high).map(lambda body: prefix + body)


def user_names() -> st.SearchStrategy[str]:
    return st.from_regex(r"[a-z][a-z0-9]{3,9}", fullmatch=True).filter(
        lambda name: name not in _NOT_NAMES and not name.isdigit()
    )


def _labels(low: int = 2, high: int = 8) -> st.SearchStrategy[str]:
    return st.from_regex(rf"[a-z][a-z0-9]{{{low - 1},{high - 1}}}", fullmatch=True)


# ---------------------------------------------------------------------------- users
_LAYOUTS = (
    "/home/{u}/proj/train.py",
    "/Users/{u}/code/model.py",
    "C:\\Users\\{u}\\AppData\\run.py",
    "c:\\users\\{u}\\Desktop\\run.py",
    "/scratch/{u}/runs/a.py",
    "/data/users/{u}/exp/b.py",
    "/work/{u}/job/c.py",
    "/gpfs/alpine/proj12/scratch/{u}/d.py",
    "/gpfs/projects/{u}/e.py",
    "~{u}/notebooks/f.py",
    "/tmp/torchinductor_{u}/ab/cd.py",
)


@st.composite
def user_in_path(draw: st.DrawFn) -> Secret:
    user = draw(user_names())
    layout = draw(st.sampled_from(_LAYOUTS))
    return Secret("user", layout.format(u=user), (), words=(user,))


@st.composite
def declared_user(draw: st.DrawFn) -> Secret:
    """The trace's own ``username``, found again elsewhere in another capitalisation."""
    user = draw(user_names())
    shown = draw(st.sampled_from([user.upper(), user.capitalize(), user]))
    key = draw(st.sampled_from(["username", "USER", "started_by", "LOGNAME"]))
    return Secret("user", f"run by {shown} (nightly)", (), words=(user,), fields={key: user})


# ---------------------------------------------------------------------------- hosts
@st.composite
def host_names(draw: st.DrawFn) -> Secret:
    number = draw(st.integers(0, 999))
    label, other = draw(_labels(3)), draw(_labels(2, 5))
    host = draw(
        st.sampled_from(
            [
                f"node{number}.cs.{label}.edu",
                f"gpu{number}.hpc.{label}.ac.uk",
                f"gpu-node-{number}.cluster",
                f"ip-10-{number % 250}-3-7.{other}.internal",
                f"login{number}.{label}.de",
                f"{label}-{number}.{other}.example.com",
            ]
        )
    )
    text = draw(st.sampled_from([f"on {host}", f"{host}:29500", f"tcp://{host}:1234", host]))
    return Secret("host", text, (host,))


@st.composite
def declared_host(draw: st.DrawFn) -> Secret:
    short = draw(_labels(4, 8).filter(lambda name: name not in _NOT_NAMES))
    key = draw(st.sampled_from(["hostname", "HOSTNAME", "host_name", "MASTER_ADDR"]))
    return Secret("host", f"worker {short} ready", (), words=(short,), fields={key: short})


# ---------------------------------------------------------------------------- addresses
@st.composite
def ipv4_addresses(draw: st.DrawFn) -> Secret:
    octets = draw(st.lists(st.integers(0, 255), min_size=3, max_size=3))
    first = draw(st.sampled_from([10, 127, 172, 192, 100, 52, 203, 8]))
    if first == 172:
        octets[0] = draw(st.integers(16, 31))
    elif first == 192:
        octets[0] = 168
    elif first == 100:
        octets[0] = draw(st.integers(64, 127))
    address = ".".join(str(n) for n in (first, *octets))
    if first == 8:  # a public address below 32: an address only in context
        text = draw(st.sampled_from([f"{address}:443", f"addr={address}", f"from {address}"]))
    else:
        text = draw(st.sampled_from([address, f"{address}:29500", f"MASTER_ADDR={address}"]))
    return Secret("ip", text, (address,))


@st.composite
def ipv6_addresses(draw: st.DrawFn) -> Secret:
    groups = draw(st.lists(_chars(HEX, 1, 4), min_size=8, max_size=8))
    full = ":".join(groups)
    compressed = f"fe80::{groups[0]}:{groups[1]}:{groups[2]}"
    address = draw(st.sampled_from([full, compressed, f"2001:db8::{groups[3]}:{groups[4]}"]))
    text = draw(st.sampled_from([address, f"[{address}]:8080", f"inet6 {address}"]))
    return Secret("ip", text, (address,))


# ---------------------------------------------------------------------------- credentials
@st.composite
def url_credentials(draw: st.DrawFn) -> Secret:
    user = draw(user_names())
    password = draw(_chars(ALNUM + "!*~", 6, 16))
    host = f"{draw(_labels(3))}.{draw(_labels(3))}.internal"
    scheme = draw(st.sampled_from(["postgres", "mysql", "https", "amqp", "mongodb+srv"]))
    if draw(st.booleans()):
        return Secret("secret", f"redis://:{password}@{host}:6379/0", (f":{password}@", host))
    text = f"{scheme}://{user}:{password}@{host}:5432/db"
    return Secret("secret", text, (f":{password}@", host), words=(user,))


@st.composite
def emails(draw: st.DrawFn) -> Secret:
    local = draw(st.from_regex(r"[a-z]{2,8}(\.[a-z]{2,6})?", fullmatch=True))
    tag = draw(_chars(string.ascii_lowercase, 2, 6))
    domain = f"{draw(_labels(3))}.{draw(st.sampled_from(['com', 'org', 'edu', 'co.uk', 'de']))}"
    address = draw(
        st.sampled_from(
            [
                f"{local}+{tag}@{domain}",
                f"{local.upper()}@{domain.upper()}",
                f"{local}é{tag}@{domain}",  # a non-ASCII local part
                f"{local}@{tag}.例子.中国",  # an internationalised domain
                f"{local}@{tag}.xn--p1ai",
                f"{local}%40{domain}",  # URL-encoded
            ]
        )
    )
    return Secret("email", f"contact <{address}>", (address,))


# ---------------------------------------------------------------------------- tokens
def _jwt(rng: random.Random) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    signature = "".join(rng.choice(ALNUM + "-_") for _ in range(43))
    return f"{part({'alg': 'HS256'})}.{part({'sub': rng.randrange(10**9)})}.{signature}"


TOKEN_SHAPES: dict[str, Callable[[random.Random], str]] = {
    "aws": lambda r: "AK" + "IA" + _random(r, UPPER_DIGITS, 16),
    "github": lambda r: "gh" + r.choice("pousr") + "_" + _random(r, ALNUM, 36),
    "github-pat": lambda r: (
        "github" + "_pat_" + _random(r, ALNUM, 22) + "_" + _random(r, ALNUM, 59)
    ),
    "hugging-face": lambda r: "hf" + "_" + _random(r, ALNUM, 34),
    "openai": lambda r: "sk" + "-proj-" + _random(r, ALNUM + "_-", 48),
    "anthropic": lambda r: "sk" + "-ant-api03-" + _random(r, ALNUM + "_-", 93),
    "slack": lambda r: "xo" + "xb-" + _random(r, "0123456789", 12) + "-" + _random(r, ALNUM, 24),
    "stripe": lambda r: "sk" + "_live_" + _random(r, ALNUM, 24),
    "npm": lambda r: "np" + "m_" + _random(r, ALNUM, 36),
    "gcp": lambda r: "AI" + "za" + _random(r, ALNUM + "_-", 35),
}


def _random(rng: random.Random, alphabet: str, size: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(size))


@st.composite
def tokens(draw: st.DrawFn) -> Secret:
    rng = random.Random(draw(st.integers(0, 2**32)))
    token = TOKEN_SHAPES[draw(st.sampled_from(sorted(TOKEN_SHAPES)))](rng)
    text = draw(st.sampled_from([token, f"key={token}", f"({token})", f'"{token}"']))
    return Secret("token", text, (token,))


@st.composite
def jwts(draw: st.DrawFn) -> Secret:
    token = _jwt(random.Random(draw(st.integers(0, 2**32))))
    return Secret("jwt", f"cookie {token}", (token,))


@st.composite
def bearer_tokens(draw: st.DrawFn) -> Secret:
    token = draw(_chars(ALNUM + "._~+/-", 1, 60))
    text = f"Authorization: Bearer {token}"
    gone = (f"Bearer {token}",) if len(token) < 8 else (token,)
    return Secret("token", text, gone, also=("jwt", "hex-secret", "base64-secret", "secret"))


@st.composite
def passwords(draw: st.DrawFn) -> Secret:
    value = draw(
        _chars(ALNUM, 4, 12).filter(lambda v: _mixed(v, string.ascii_letters, "0123456789"))
    )
    text = draw(
        st.sampled_from(
            [f"train.py --password={value} --lr 1", f"db password: {value}", f"--api-key {value}"]
        )
    )
    return Secret("secret", text, (), words=(value,))


@st.composite
def pem_blocks(draw: st.DrawFn) -> Secret:
    rng = random.Random(draw(st.integers(0, 2**32)))
    lines = [_random(rng, ALNUM + "+/", 64) for _ in range(draw(st.integers(1, 4)))]
    last = _random(rng, ALNUM, draw(st.integers(2, 12))) + "=="
    kind = draw(st.sampled_from(["RSA PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY"]))
    block = "\n".join([f"-----BEGIN {kind}-----", *lines, last, f"-----END {kind}-----"])
    return Secret("pem", f"key:\n{block}\n", (*lines, last))


def _mixed(text: str, *classes: str) -> bool:
    return all(any(char in chars for char in text) for chars in classes)


@st.composite
def hex_blobs(draw: st.DrawFn) -> Secret:
    blob = draw(_chars(HEX, 32, 64).filter(lambda h: _mixed(h, "0123456789", "abcdef")))
    return Secret("hex-secret", f"digest {blob}", (blob,))


@st.composite
def base64_blobs(draw: st.DrawFn) -> Secret:
    classes = (string.ascii_uppercase, string.ascii_lowercase, string.digits)
    body = draw(_chars(ALNUM + "+/", 40, 80).filter(lambda b: _mixed(b, *classes)))
    blob = body + draw(st.sampled_from(["", "=", "=="]))
    return Secret("base64-secret", f"blob {blob}", (blob,))


@st.composite
def field_secrets(draw: st.DrawFn) -> Secret:
    """A short value under a secret-named field, found again elsewhere."""
    value = draw(st.from_regex(r"[a-z]{1,3}[0-9]{1,3}", fullmatch=True))
    key = draw(
        st.sampled_from(["WANDB_API_KEY", "HF_TOKEN", "PASSWORD", "dbPassword", "x-api-key"])
    )
    return Secret("secret", f"login {value} ok", (), words=(value,), fields={key: value})


@st.composite
def split_secrets(draw: st.DrawFn) -> Secret:
    """The parts of a secret split across the strings of an object or list under its field."""
    part = _chars(ALNUM, 5, 9).filter(lambda v: _mixed(v, string.ascii_letters, "0123456789"))
    parts = draw(st.lists(part, min_size=2, max_size=3, unique=True))
    key = draw(st.sampled_from(["OPENAI_API_KEY", "service_token", "credentials"]))
    container: Any = parts if draw(st.booleans()) else {f"p{n}": p for n, p in enumerate(parts)}
    return Secret("secret", f"{parts[0]}", (), words=tuple(parts), fields={key: container})


CLASSES: dict[str, st.SearchStrategy[Secret]] = {
    "user in a path": user_in_path(),
    "declared user": declared_user(),
    "host name": host_names(),
    "declared host": declared_host(),
    "IPv4": ipv4_addresses(),
    "IPv6": ipv6_addresses(),
    "URL credentials": url_credentials(),
    "e-mail": emails(),
    "vendor token": tokens(),
    "JWT": jwts(),
    "Bearer token": bearer_tokens(),
    "password option": passwords(),
    "PEM block": pem_blocks(),
    "hex blob": hex_blobs(),
    "base64 blob": base64_blobs(),
    "secret field": field_secrets(),
    "split secret": split_secrets(),
}
ANY_SECRET = st.one_of(*CLASSES.values())


# ---------------------------------------------------------------------------- planting
def _first(doc: dict[str, Any], test: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    return next(event for event in doc["traceEvents"] if test(event))


def _operator(doc: dict[str, Any]) -> dict[str, Any]:
    return _first(doc, lambda e: e.get("ph") == "X" and e.get("cat") == "cpu_op")


def _instant(doc: dict[str, Any], **fields: Any) -> None:
    anchor = _operator(doc)
    event = {"ph": "i", "s": "t", "name": "mark", "ts": anchor["ts"], "pid": anchor["pid"]}
    doc["traceEvents"].append({**event, "tid": anchor["tid"], **fields})


def _args(doc: dict[str, Any]) -> dict[str, Any]:
    args: dict[str, Any] = _operator(doc).setdefault("args", {})
    return args


# Where a secret can sit; ``n`` tells the secrets of one trace apart.
PLACES: dict[str, Callable[[dict[str, Any], str, int], None]] = {
    "event name": lambda doc, text, n: _instant(doc, name=f"step {text}"),
    "args value": lambda doc, text, n: _args(doc).update({f"note{n}": text}),
    "args key": lambda doc, text, n: _args(doc).update({text: n}),
    "cat": lambda doc, text, n: _instant(doc, cat=text),
    "metadata": lambda doc, text, n: doc.setdefault("metadata", {}).update({f"cmd{n}": text}),
    "distributedInfo": lambda doc, text, n: doc.setdefault("distributedInfo", {}).update(
        {f"note{n}": text}
    ),
    "stack frame": lambda doc, text, n: _instant(
        doc, args={"Call stack": f"{text}(12): forward;x"}
    ),
    "thread name": lambda doc, text, n: doc["traceEvents"].append(
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 99 + n, "args": {"name": text}}
    ),
    "scenario": lambda doc, text, n: doc.setdefault(
        "steptrace", record_payload(Scenario(question="why is it slow?"), None)
    )["scenario"].update(
        simplifications=f"{doc['steptrace']['scenario']['simplifications']} {text}"
    ),
    "list": lambda doc, text, n: _args(doc).update({f"argv{n}": ["python", text, "--epochs", "3"]}),
}


def plant(doc: dict[str, Any], planted: list[tuple[Secret, str]]) -> dict[str, Any]:
    """A copy of ``doc`` with each secret in its place, its declared fields in ``metadata``."""
    copied = copy.deepcopy(doc)
    for number, (secret, place) in enumerate(planted):
        PLACES[place](copied, secret.text, number)
        for key, value in secret.fields.items():
            copied.setdefault("system", {}).setdefault(f"env{number}", {})[key] = value
    return copied


def all_strings(node: Any) -> Iterator[str]:
    """Every string of a document, keys and values."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, child in node.items():
            yield key
            yield from all_strings(child)
    elif isinstance(node, list):
        for child in node:
            yield from all_strings(child)


# A placeholder scrub writes; its kind word is no survivor (a user named "token", a
# secret "base64" beside a ``<token-1>``, a ``<base64-secret-1>``).
_PLACEHOLDER = re.compile(
    r"<(?:user|host|ip|email|token|jwt|secret|pem|hex-secret|base64-secret)-[1-9][0-9]*>"
)


def masked_strings(doc: Any) -> list[str]:
    """Every string of a document, each placeholder in it masked."""
    return [_PLACEHOLDER.sub("\x00", text) for text in all_strings(doc)]


def survivors(doc: Any, secrets: list[Secret]) -> list[str]:
    """What is left of the secrets anywhere in ``doc``, placeholders aside."""
    texts = masked_strings(doc)
    left = [gone for s in secrets for gone in s.gone if any(gone in t for t in texts)]
    for secret in secrets:
        for word in secret.words:
            pattern = re.compile(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", re.IGNORECASE)
            left += [word for t in texts if pattern.search(t)][:1]
    return left


# ---------------------------------------------------------------------------- the builders
@given(st.data())
def test_every_token_shape_is_what_its_vendor_writes(data: st.DataObject) -> None:
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    shapes = {name: build(rng) for name, build in TOKEN_SHAPES.items()}
    assert re.fullmatch(r"AKIA[A-Z0-9]{16}", shapes["aws"])
    assert re.fullmatch(r"gh[pousr]_[A-Za-z0-9]{36}", shapes["github"])
    assert re.fullmatch(r"hf_[A-Za-z0-9]{34}", shapes["hugging-face"])
    assert re.fullmatch(r"AIza[\w-]{35}", shapes["gcp"])
    assert shapes["stripe"].startswith("sk_live_") and len(shapes["stripe"]) == 32
    header, payload, _ = _jwt(rng).split(".")
    assert json.loads(base64.urlsafe_b64decode(header + "==")) == {"alg": "HS256"}
    assert "sub" in json.loads(base64.urlsafe_b64decode(payload + "=="))


@given(ANY_SECRET)
def test_every_secret_says_what_must_disappear(secret: Secret) -> None:
    assert secret.gone or secret.words
    for gone in secret.gone:
        assert gone in secret.text or gone in json.dumps(secret.fields)
    assert survivors({"x": secret.text, "fields": secret.fields}, [secret])
